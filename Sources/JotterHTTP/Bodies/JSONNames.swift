/// The member names of well-formed JSON text, checked for repeats.
///
/// RFC 8259 leaves an object with a repeated name to each reader ("many implementations report
/// the last name/value pair only"); Foundation's decoder keeps the first. Two readers of one
/// body — a proxy or a filter in front, and this server — could then see two different values,
/// so a body that repeats a name is refused instead (I-JSON, RFC 7493 §2.3: names MUST be
/// unique). Names are compared as decoded strings: `"a"` and `"\u0061"` are one name.
enum JSONNames {
    /// The first name an object of `bytes` repeats, or nil. `bytes` must already have been
    /// read as JSON (the decoder checked its grammar); this only walks it.
    static func firstRepeated(in bytes: [UInt8]) -> String? {
        // For each open object or array: the names the object has had so far (nil: an array),
        // and whether the next string is a name.
        var open: [(names: Set<String>?, expectsName: Bool)] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"): open.append((names: [], expectsName: true))
            case UInt8(ascii: "["): open.append((names: nil, expectsName: false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"): open.removeLast()
            case UInt8(ascii: ","): if open.last?.names != nil { open[open.count - 1].expectsName = true }
            case UInt8(ascii: ":"): open[open.count - 1].expectsName = false
            case UInt8(ascii: "\""):
                let end = stringEnd(bytes, from: index + 1)
                if let last = open.last, last.expectsName {
                    let name = decoded(bytes[(index + 1)..<end])
                    if open[open.count - 1].names!.insert(name).inserted == false { return name }
                }
                index = end
            default: break  // white space, and numbers, true, false and null: no quote or bracket in them
            }
            index += 1
        }
        return nil
    }

    /// The index of the quote that ends the string whose contents start at `start`.
    private static func stringEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        return index
    }

    /// A string's contents with its escapes decoded (the text is known to be valid JSON).
    private static func decoded(_ contents: ArraySlice<UInt8>) -> String {
        guard contents.contains(UInt8(ascii: "\\")) else { return String(decoding: contents, as: UTF8.self) }
        var units: [UInt16] = []
        var index = contents.startIndex
        func hex(_ at: Int) -> UInt16 {
            contents[at..<(at + 4)].reduce(0) { value, digit in
                value << 4 | UInt16(digit <= 0x39 ? digit - 0x30 : (digit | 0x20) - 0x57)
            }
        }
        while index < contents.endIndex {
            let byte = contents[index]
            guard byte == UInt8(ascii: "\\") else {
                // A run of plain UTF-8, as UTF-16 for the escapes around it.
                var end = index
                while end < contents.endIndex, contents[end] != UInt8(ascii: "\\") { end += 1 }
                units += String(decoding: contents[index..<end], as: UTF8.self).utf16
                index = end
                continue
            }
            let escaped = contents[index + 1]
            switch escaped {
            case UInt8(ascii: "u"):
                units.append(hex(index + 2))
                index += 6
                continue
            case UInt8(ascii: "b"): units.append(0x08)
            case UInt8(ascii: "f"): units.append(0x0C)
            case UInt8(ascii: "n"): units.append(0x0A)
            case UInt8(ascii: "r"): units.append(0x0D)
            case UInt8(ascii: "t"): units.append(0x09)
            default: units.append(UInt16(escaped))  // \" \\ \/
            }
            index += 2
        }
        return String(decoding: units, as: UTF16.self)
    }
}
