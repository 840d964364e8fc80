#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The API's timestamp format: UTC `yyyy-MM-dd HH:mm:ss`, the format the original iPhone
/// client parses. Pure arithmetic (proleptic Gregorian calendar), no formatter or locale.
///
/// ```swift
/// Timestamp.format(0)                          // "1970-01-01 00:00:00"
/// Timestamp.parse("2026-11-30 14:35:40")       // 1796049340
/// Timestamp.date("2026-11-30 14:35:40")        // the Date of that second
/// ```
///
/// The wire types (`Note`, `Upload`, `TokenInfo`…) hold their times as `Date`, parsed from
/// this format once, where their JSON is decoded, and written back in it when encoded
/// (`@Timestamped`).
public enum Timestamp {
    /// Formats Unix seconds (years 0–9999), digit by digit into a 19-byte buffer.
    public static func format(_ seconds: Int64) -> String {
        String(unsafeUninitializedCapacity: 19) { buffer in
            write(seconds, to: UnsafeMutableRawBufferPointer(buffer))
            return 19
        }
    }

    /// The 19 bytes of `format(seconds)` into `buffer` (at least 19 bytes), with no String made.
    public static func write(_ seconds: Int64, to buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= 19)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let clampedYear = min(max(year, 0), 9999)
        // Each pair of digits is one load from `pairs` and one two-byte store.
        let base = buffer.baseAddress!
        func two(_ value: Int64, at index: Int) {
            (base + index).storeBytes(of: Self.pairs[Int(value)], as: UInt16.self)
        }
        two(clampedYear / 100, at: 0)
        two(clampedYear % 100, at: 2)
        buffer[4] = UInt8(ascii: "-")
        two(month, at: 5)
        buffer[7] = UInt8(ascii: "-")
        two(day, at: 8)
        buffer[10] = UInt8(ascii: " ")
        writeTime(ofDay: secondOfDay, to: UnsafeMutableRawBufferPointer(rebasing: buffer[11..<19]))
    }

    /// The 8 bytes `HH:mm:ss` of a second of the day (0 ..< 86,400) into `buffer` (at least 8
    /// bytes): the end of `write` — for a caller that already has the date of that day.
    public static func writeTime(ofDay second: Int64, to buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= 8 && second >= 0 && second < 86_400)
        let base = buffer.baseAddress!
        func two(_ value: Int64, at index: Int) {
            (base + index).storeBytes(of: Self.pairs[Int(value)], as: UInt16.self)
        }
        two(second / 3600, at: 0)
        buffer[2] = UInt8(ascii: ":")
        two(second % 3600 / 60, at: 3)
        buffer[5] = UInt8(ascii: ":")
        two(second % 60, at: 6)
    }

    /// "00"…"99" as the two bytes of each number, in memory order.
    private static let pairs: [UInt16] = (0..<100).map { value in
        let high = UInt16(UInt8(ascii: "0") + UInt8(value / 10)), low = UInt16(UInt8(ascii: "0") + UInt8(value % 10))
        return UInt16(littleEndian: high | low << 8)
    }

    /// Parses `yyyy-MM-dd HH:mm:ss` (hours may have one digit, as `H:mm:ss` allows) to Unix seconds.
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(whereSeparator: { $0 == "-" || $0 == " " || $0 == ":" })
        guard parts.count == 6, parts.allSatisfy({ $0.allSatisfy(\.isASCII) }) else { return nil }
        let numbers = parts.compactMap { Int64($0) }
        guard numbers.count == 6 else { return nil }
        let (year, month, day, hour, minute, second) = (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5])
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second) else {
            return nil
        }
        return days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension Timestamp {
    /// Formats a date's whole seconds (a fraction is dropped).
    public static func format(_ date: Date) -> String {
        format(Int64(date.timeIntervalSince1970.rounded(.down)))
    }

    /// The date of a `yyyy-MM-dd HH:mm:ss` text (UTC), or nil when it is not one.
    public static func date(_ text: String) -> Date? {
        parse(text).map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// The date of Unix seconds.
    public static func date(seconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(seconds))
    }
}

extension KeyedDecodingContainer {
    /// A time of the API (`"2026-11-30 14:35:40"`) as a `Date`; anything else is a decoding error.
    public func decodeTimestamp(forKey key: Key) throws -> Date {
        let text = try decode(String.self, forKey: key)
        guard let date = Timestamp.date(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: Timestamp.malformed(text))
        }
        return date
    }

    /// `decodeTimestamp`, nil when the key is absent or null.
    public func decodeTimestampIfPresent(forKey key: Key) throws -> Date? {
        guard try contains(key) && !decodeNil(forKey: key) else { return nil }
        return try decodeTimestamp(forKey: key)
    }
}

extension KeyedEncodingContainer {
    /// A `Date` as a time of the API: `"2026-11-30 14:35:40"`.
    public mutating func encodeTimestamp(_ date: Date, forKey key: Key) throws {
        try encode(Timestamp.format(date), forKey: key)
    }

    /// `encodeTimestamp`, nothing when `date` is nil.
    public mutating func encodeTimestampIfPresent(_ date: Date?, forKey key: Key) throws {
        if let date { try encodeTimestamp(date, forKey: key) }
    }
}

/// A time of a wire type: a `Date` to Swift, UTC `yyyy-MM-dd HH:mm:ss` in JSON, so the type's
/// `Codable` conformance is synthesized.
///
/// ```swift
/// struct Token: Codable {
///     @Timestamped var createdAt: Date         // "created_at":"2026-11-30 14:35:40"
///     @Timestamped var revokedAt: Date? = nil  // absent while nil; absent or null decodes as nil
///
///     enum CodingKeys: String, CodingKey { case createdAt = "created_at", revokedAt = "revoked_at" }
/// }
/// ```
///
/// Anything but a time of that format is a decoding error.
@propertyWrapper
public struct Timestamped<Value: TimestampValue>: Codable, Sendable, Hashable {
    public var wrappedValue: Value

    public init(wrappedValue: Value) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil(), let none = Value.timestampValue(nil) {
            wrappedValue = none
            return
        }
        let text = try container.decode(String.self)
        guard let date = Timestamp.date(text), let value = Value.timestampValue(date) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: Timestamp.malformed(text))
        }
        wrappedValue = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let date = Value.timestampDate(wrappedValue) { try container.encode(Timestamp.format(date)) } else { try container.encodeNil() }
    }
}

/// What `@Timestamped` holds: a `Date`, or a `Date?` that is absent from the JSON while nil.
public protocol TimestampValue: Sendable, Hashable {
    /// The value of a time, or of no time (nil: no time is not a value, a time is required).
    static func timestampValue(_ date: Date?) -> Self?
    /// The time of a value, nil for none.
    static func timestampDate(_ value: Self) -> Date?
}

extension Date: TimestampValue {
    public static func timestampValue(_ date: Date?) -> Date? { date }
    public static func timestampDate(_ value: Date) -> Date? { value }
}

extension Optional: TimestampValue where Wrapped == Date {
    public static func timestampValue(_ date: Date?) -> Date?? { .some(date) }
    public static func timestampDate(_ value: Date?) -> Date? { value }
}

extension Timestamp {
    static func malformed(_ text: String) -> String { "'\(text)' is not a yyyy-MM-dd HH:mm:ss time" }
}

extension KeyedDecodingContainer {
    /// A `@Timestamped` property of a synthesized `init(from:)`: absent or `null` is nil for a
    /// `Date?`, and a decoding error for a `Date`.
    public func decode<Value>(_ type: Timestamped<Value>.Type, forKey key: Key) throws -> Timestamped<Value> {
        if let none = Value.timestampValue(nil), try !contains(key) || decodeNil(forKey: key) {
            return Timestamped(wrappedValue: none)
        }
        return Timestamped(wrappedValue: Value.timestampValue(try decodeTimestamp(forKey: key))!)
    }
}

extension KeyedEncodingContainer {
    /// A `@Timestamped` property of a synthesized `encode(to:)`: nothing for a nil `Date?`.
    public mutating func encode<Value>(_ value: Timestamped<Value>, forKey key: Key) throws {
        try encodeTimestampIfPresent(Value.timestampDate(value.wrappedValue), forKey: key)
    }
}
