#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Structured Field Values (RFC 8941 / 9651) as request fields carry them: Items and
/// Dictionaries, with parameters parsed and dropped. A field that does not parse is nil —
/// the resumable-upload draft says such a field is ignored as a whole.
///
/// ```swift
/// StructuredField.item("?1")                      // .boolean(true)
/// StructuredField.item("42")                      // .integer(42)
/// StructuredField.dictionary("sha-256=:AAA=:")    // [("sha-256", .bytes([0, 0]))]
/// ```
public enum StructuredField: Sendable, Equatable {
    case integer(Int64)
    case decimal(Double)
    case string(String)
    case token(String)
    case bytes([UInt8])
    case boolean(Bool)

    /// An Item field's bare item; nil when it is not one.
    public static func item(_ text: String) -> StructuredField? {
        var parser = Parser(Array(text.utf8))
        parser.skipSpaces()
        guard let item = parser.item() else { return nil }
        parser.skipSpaces()
        return parser.atEnd ? item : nil
    }

    /// A Dictionary field's members in order (a key sent twice keeps its last value; a key
    /// without a value is `true`); nil when it is not a dictionary.
    public static func dictionary(_ text: String) -> [(key: String, value: StructuredField)]? {
        var parser = Parser(Array(text.utf8))
        var members: [(key: String, value: StructuredField)] = []
        parser.skipSpaces()
        if parser.atEnd { return [] }
        while true {
            guard let key = parser.key() else { return nil }
            let value: StructuredField
            if parser.peek == UInt8(ascii: "=") {
                parser.index += 1
                guard let item = parser.item() else { return nil }
                value = item
            } else {
                guard parser.parameters() else { return nil }
                value = .boolean(true)
            }
            members.removeAll { $0.key == key }
            members.append((key, value))
            parser.skipOWS()
            if parser.atEnd { return members }
            guard parser.peek == UInt8(ascii: ",") else { return nil }
            parser.index += 1
            parser.skipOWS()
            if parser.atEnd { return nil }
        }
    }

    public var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    public var boolean: Bool? { if case .boolean(let value) = self { value } else { nil } }
    public var bytes: [UInt8]? { if case .bytes(let value) = self { value } else { nil } }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index >= bytes.count }
        var peek: UInt8? { atEnd ? nil : bytes[index] }

        mutating func skipSpaces() { while peek == 0x20 { index += 1 } }
        mutating func skipOWS() { while peek == 0x20 || peek == 0x09 { index += 1 } }

        static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
        static func isLower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
        static func isAlpha(_ byte: UInt8) -> Bool { isLower(byte) || (byte >= 0x41 && byte <= 0x5A) }

        mutating func key() -> String? {
            guard let first = peek, Self.isLower(first) || first == UInt8(ascii: "*") else { return nil }
            let start = index
            while let byte = peek, Self.isLower(byte) || Self.isDigit(byte) || "_-.*".utf8.contains(byte) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func item() -> StructuredField? {
            guard let value = bareItem(), parameters() else { return nil }
            return value
        }

        /// Parameters are parsed (so that a malformed one fails the field) and dropped.
        mutating func parameters() -> Bool {
            while peek == UInt8(ascii: ";") {
                index += 1
                skipSpaces()
                guard key() != nil else { return false }
                if peek == UInt8(ascii: "=") {
                    index += 1
                    guard bareItem() != nil else { return false }
                }
            }
            return true
        }

        mutating func bareItem() -> StructuredField? {
            guard let first = peek else { return nil }
            switch first {
            case UInt8(ascii: "-"), 0x30...0x39: return number()
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: ":"): return byteSequence()
            case UInt8(ascii: "?"):
                index += 1
                guard let value = peek, value == 0x30 || value == 0x31 else { return nil }
                index += 1
                return .boolean(value == 0x31)
            default:
                guard Self.isAlpha(first) || first == UInt8(ascii: "*") else { return nil }
                let start = index
                while let byte = peek, byte > 0x20, byte < 0x7F, !"\"(),;<=>?@[\\]{}".utf8.contains(byte) || byte == UInt8(ascii: "/") {
                    index += 1
                }
                return .token(String(decoding: bytes[start..<index], as: UTF8.self))
            }
        }

        mutating func number() -> StructuredField? {
            var negative = false
            if peek == UInt8(ascii: "-") { negative = true; index += 1 }
            let start = index
            var dot: Int?
            while let byte = peek {
                if Self.isDigit(byte) { index += 1 } else if byte == UInt8(ascii: "."), dot == nil { dot = index; index += 1 } else { break }
            }
            let digits = bytes[start..<index]
            guard !digits.isEmpty, Self.isDigit(digits.first!) else { return nil }
            let text = String(decoding: digits, as: UTF8.self)
            if let dot {
                guard dot - start <= 12, index - dot - 1 >= 1, index - dot - 1 <= 3, let value = Double(text) else { return nil }
                return .decimal(negative ? -value : value)
            }
            guard digits.count <= 15, let value = Int64(text) else { return nil }
            return .integer(negative ? -value : value)
        }

        mutating func string() -> StructuredField? {
            index += 1
            var out: [UInt8] = []
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\\"):
                    guard let next = peek, next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\") else { return nil }
                    out.append(next)
                    index += 1
                case UInt8(ascii: "\""):
                    return .string(String(decoding: out, as: UTF8.self))
                case 0x20...0x7E:
                    out.append(byte)
                default:
                    return nil
                }
            }
            return nil
        }

        mutating func byteSequence() -> StructuredField? {
            index += 1
            let start = index
            while let byte = peek, byte != UInt8(ascii: ":") {
                guard Self.isAlpha(byte) || Self.isDigit(byte) || "+/=".utf8.contains(byte) else { return nil }
                index += 1
            }
            guard peek == UInt8(ascii: ":") else { return nil }
            let encoded = String(decoding: bytes[start..<index], as: UTF8.self)
            index += 1
            guard let data = Data(base64Encoded: encoded) else { return nil }
            return .bytes([UInt8](data))
        }
    }
}
