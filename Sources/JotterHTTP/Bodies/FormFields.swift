/// Decoded `key=value` pairs from a query string or a form-urlencoded body, in order.
///
/// A key sent several times keeps every value; the subscript answers the last one, as PHP
/// (`$_POST`, `$_GET`) and Laravel read a repeated key.
///
/// ```swift
/// let fields = try FormFields(decoding: "name=Bob+Smith&tag=a&tag=b&pct=100%", context: "query")
/// fields["name"]        // "Bob Smith"
/// fields["tag"]         // "b"
/// fields.all("tag")     // ["a", "b"]
/// fields["pct"]         // "100%": a `%` without two hex digits is itself
/// ```
public struct FormFields: Sendable, Sequence {
    public private(set) var pairs: [(key: String, value: String)] = []

    public init() {}

    public init(_ pairs: [(String, String)]) {
        self.pairs = pairs.map { (key: $0.0, value: $0.1) }
    }

    /// Decodes `application/x-www-form-urlencoded` text (WHATWG rules, but strict about UTF-8):
    /// `+` is a space, `%XX` a byte, and a `%` not followed by two hex digits stays a `%` (as
    /// browsers, PHP and Laravel read `100%`); empty segments (a trailing `&`) are skipped; a
    /// segment without `=` is a key with an empty value. Invalid UTF-8 throws `400` naming
    /// `context` ("query", "form body").
    public init(decoding text: some Collection<UInt8>, context: String) throws(HTTPError) {
        let decoded =
            text.withContiguousStorageIfAvailable { Self.decode($0, context: context) }
            ?? Array(text).withUnsafeBufferPointer { Self.decode($0, context: context) }
        pairs = try decoded.get()
    }

    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>, context: String) -> Result<[(key: String, value: String)], HTTPError> {
        var pairs: [(key: String, value: String)] = []
        pairs.reserveCapacity(4)
        var start = 0
        do throws(HTTPError) {
            while start <= bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
                if end > start {
                    let segment = UnsafeBufferPointer(rebasing: bytes[start..<end])
                    let equals = segment.firstIndex(of: UInt8(ascii: "=")) ?? segment.count
                    let key = try percentDecode(
                        UnsafeBufferPointer(rebasing: segment[..<equals]), plusIsSpace: true,
                        literalPercent: true, context: context)
                    let value =
                        equals == segment.count
                        ? ""
                        : try percentDecode(
                            UnsafeBufferPointer(rebasing: segment[(equals + 1)...]), plusIsSpace: true,
                            literalPercent: true, context: context)
                    pairs.append((key: key, value: value))
                }
                start = end + 1
            }
        } catch {
            return .failure(error)
        }
        return .success(pairs)
    }

    /// Appends a pair.
    public mutating func append(_ key: String, _ value: String) {
        pairs.append((key: key, value: value))
    }

    /// The value for `key`: the last one when it was sent several times (as PHP reads
    /// `name=Bob&name=Eve`: `Eve`); `all(_:)` has every one.
    public subscript(key: String) -> String? {
        pairs.last { $0.key == key }?.value
    }

    /// Every value for `key`, in order.
    public func all(_ key: String) -> [String] {
        pairs.filter { $0.key == key }.map(\.value)
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: String)]> {
        pairs.makeIterator()
    }

    /// Percent-decodes `bytes` and checks the result is UTF-8. A `%` not followed by two hex
    /// digits is `400` — or, with `literalPercent` (form bodies and queries), kept as it is.
    public static func percentDecode(
        _ bytes: some Collection<UInt8>, plusIsSpace: Bool, literalPercent: Bool = false,
        context: String
    ) throws(HTTPError) -> String {
        var ascii = true
        var plain = true
        for byte in bytes {
            if byte >= 0x80 { ascii = false }
            if byte == UInt8(ascii: "%") || (plusIsSpace && byte == UInt8(ascii: "+")) { plain = false; break }
        }
        if plain {
            if ascii { return String(decoding: bytes, as: UTF8.self) }  // nothing to validate
            guard let string = String(validating: bytes, as: UTF8.self) else {
                throw HTTPError.badRequest("invalid UTF-8 in the \(context)")
            }
            return string
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                let first = bytes.index(after: index)
                guard first != bytes.endIndex, bytes.index(after: first) != bytes.endIndex,
                    let high = hexValue(bytes[first]), let low = hexValue(bytes[bytes.index(after: first)])
                else {
                    if literalPercent {
                        out.append(byte)
                        index = first
                        continue
                    }
                    throw HTTPError.badRequest("bad percent-encoding in the \(context): '%' must be followed by two hex digits")
                }
                out.append(high << 4 | low)
                index = bytes.index(first, offsetBy: 2)
                continue
            }
            out.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index = bytes.index(after: index)
        }
        guard let string = String(validating: out, as: UTF8.self) else {
            throw HTTPError.badRequest("invalid UTF-8 in the \(context)")
        }
        return string
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension FormFields {
    /// `value` escaped for a query string or form body: unreserved characters kept, space as
    /// `+`, everything else `%XX` of its UTF-8 bytes.
    public static func escape(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            if ASCIISet.unreserved.contains(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else if byte == UInt8(ascii: " ") {
                out += "+"
            } else {
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
            }
        }
        return out
    }
}
