/// A Swift value sent as a statement parameter, in PostgreSQL's text format.
///
/// Parameters are sent as text with no declared type: the server infers each `$n`'s type from
/// the statement, as it would for a literal, so `Int` works for `integer`, `bigint` and `xid8`.
public protocol PostgresEncodable: Sendable {
    /// The value as PostgreSQL reads it in text format.
    var postgresText: String { get }
    /// The value in PostgreSQL's binary format, for types that have a simple one (`bytea`: the
    /// bytes themselves); nil: sent as `postgresText`.
    var postgresBinary: [UInt8]? { get }
}

extension PostgresEncodable {
    public var postgresBinary: [UInt8]? { nil }
}

/// A Swift type a column's text-format value is read as (see `PostgresRow.value(_:)`).
///
/// NULL is an error for every type but `Optional`, which reads it as nil.
public protocol PostgresDecodable {
    /// Reads the column's text (nil when the column is NULL).
    static func decode(postgresText: String?) throws(PostgresError) -> Self
}

extension PostgresDecodable {
    static func nonNull(_ text: String?) throws(PostgresError) -> String {
        guard let text else { throw PostgresError(kind: .decoding, message: "NULL where \(Self.self) was expected") }
        return text
    }

    /// The text read by a `LosslessStringConvertible` initialiser (integers, `Double`).
    static func parsed(_ text: String?) throws(PostgresError) -> Self where Self: LosslessStringConvertible {
        let text = try nonNull(text)
        guard let value = Self(text) else { throw unreadable(text) }
        return value
    }

    static func unreadable(_ text: String) -> PostgresError {
        PostgresError(kind: .decoding, message: "'\(text.prefix(40))' is not a \(Self.self)")
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(postgresText: String?) throws(PostgresError) -> Wrapped? {
        guard let postgresText else { return nil }
        return try Wrapped.decode(postgresText: postgresText)
    }
}

extension String: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { self }
    public static func decode(postgresText: String?) throws(PostgresError) -> String { try nonNull(postgresText) }
}

extension Int: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public static func decode(postgresText: String?) throws(PostgresError) -> Int { try parsed(postgresText) }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public static func decode(postgresText: String?) throws(PostgresError) -> Int64 { try parsed(postgresText) }
}

extension UInt64: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    /// Reads `xid8` and non-negative `numeric`/`bigint` columns.
    public static func decode(postgresText: String?) throws(PostgresError) -> UInt64 { try parsed(postgresText) }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { self ? "t" : "f" }
    public static func decode(postgresText: String?) throws(PostgresError) -> Bool {
        switch try nonNull(postgresText) {
        case "t": return true
        case "f": return false
        case let text: throw unreadable(text)
        }
    }
}

extension Double: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public static func decode(postgresText: String?) throws(PostgresError) -> Double { try parsed(postgresText) }
}

/// `bytea`: sent as bytes (binary format), read from PostgreSQL's hex text format (`\x0aff…`).
public struct PostgresBytes: PostgresEncodable, PostgresDecodable, Equatable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var postgresBinary: [UInt8]? { bytes }

    private static let digits = Array("0123456789abcdef".utf8)

    public var postgresText: String {
        var text = [UInt8](repeating: 0, count: 2 + bytes.count * 2)
        text[0] = UInt8(ascii: "\\"); text[1] = UInt8(ascii: "x")
        for (index, byte) in bytes.enumerated() {
            text[2 + index * 2] = Self.digits[Int(byte >> 4)]
            text[3 + index * 2] = Self.digits[Int(byte & 0x0f)]
        }
        return String(decoding: text, as: UTF8.self)
    }

    public static func decode(postgresText: String?) throws(PostgresError) -> PostgresBytes {
        var text = try nonNull(postgresText)
        // Read through the string's UTF-8 buffer: an upload's tail is megabytes.
        let decoded: [UInt8]? = text.withUTF8 { utf8 in
            guard utf8.count >= 2, utf8.count % 2 == 0, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x") else { return nil }
            func nibble(_ c: UInt8) -> UInt8? {
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
                default: return nil
                }
            }
            let count = utf8.count / 2 - 1
            var failed = false
            let bytes = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
                for index in 0..<count {
                    guard let high = nibble(utf8[2 + index * 2]), let low = nibble(utf8[3 + index * 2]) else { failed = true; break }
                    out[index] = high << 4 | low
                    initialized = index + 1
                }
            }
            return failed ? nil : bytes
        }
        guard let decoded else { throw unreadable(String(text.prefix(40))) }
        return PostgresBytes(decoded)
    }
}
