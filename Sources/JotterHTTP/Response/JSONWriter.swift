/// Writes JSON straight into bytes — for the wire types on hot paths, where Foundation's
/// `JSONEncoder` (reflection, boxing, a dictionary per object) costs more than the request.
///
/// Objects are written with their keys in a fixed (sorted) order, as `JSONCoding.encoder` writes
/// them, so the two agree byte for byte.
///
/// ```swift
/// var json = JSONWriter()
/// json.object { json in
///     json.field("id") { $0.string("1") }
///     json.field("version") { $0.integer(3) }
/// }
/// json.bytes   // {"id":"1","version":3}
/// ```
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func object(_ fields: (inout JSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        fields(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func array<S: Sequence>(_ elements: S, _ write: (inout JSONWriter, S.Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for element in elements {
            if needsComma { bytes.append(UInt8(ascii: ",")) }
            write(&self, element)
            needsComma = true
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// `"key":` then the value `write` produces. Keys are plain ASCII names.
    public mutating func field(_ key: StaticString, _ write: (inout JSONWriter) -> Void) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
        write(&self)
        needsComma = true
    }

    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                escape(byte)
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func integer(_ value: Int64) {
        guard value != .min else { bytes.append(contentsOf: String(value).utf8); return }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...]))
        }
    }

    public mutating func null() {
        bytes.append(contentsOf: "null".utf8)
    }

    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
        case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
        case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
        case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
        default:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
        }
    }
}

/// A value that writes its own JSON with `JSONWriter`; `JSON(value)` uses it instead of
/// `JSONEncoder`.
public protocol JSONWritable {
    func write(to json: inout JSONWriter)
    /// About how many bytes `write` produces, so the buffer is allocated once.
    var estimatedJSONSize: Int { get }
}

extension JSONWritable {
    public var estimatedJSONSize: Int { 256 }
}
