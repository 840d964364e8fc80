#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A request body decoded by its Content-Type: form fields, a JSON object, or nothing.
///
/// ```swift
/// let body = try request.body()
/// let name = try body.string("name")     // nil when absent, 422 when not a string
/// ```
public enum RequestBody: Sendable {
    case empty
    case form(FormFields)
    case json([String: JSONValue])

    /// Decodes `bytes` as the media type in `contentType` says.
    ///
    /// No Content-Type reads as form-urlencoded (older clients post `name=Bob` that way); an
    /// empty body is `.empty`; any other media type is `415`; malformed bytes are `400`.
    public static func decode(_ bytes: [UInt8], contentType: String?) throws(HTTPError) -> RequestBody {
        let media = contentType.map(MediaType.init) ?? nil
        if bytes.isEmpty, media?.essence != "multipart/form-data" { return .empty }
        switch media?.essence {
        case nil, "application/x-www-form-urlencoded":
            return .form(try FormFields(decoding: bytes, context: "form body"))
        case "application/json":
            return .json(try decodeJSONObject(bytes))
        default:
            throw HTTPError(
                .unsupportedMediaType,
                detail:
                    "unsupported Content-Type '\(media?.essence ?? "")': send application/x-www-form-urlencoded, multipart/form-data or application/json"
            )
        }
    }

    static func decodeJSONObject(_ bytes: [UInt8]) throws(HTTPError) -> [String: JSONValue] {
        // JSON text is UTF-8 (RFC 8259 §8.1); checked first, since the decoder reports bad bytes
        // inside a string as a type mismatch.
        var utf8 = UTF8Validator()
        bytes.withUnsafeBytes { utf8.update($0) }
        guard utf8.isComplete else { throw HTTPError.badRequest("malformed JSON body: it is not valid UTF-8") }
        let value: JSONValue
        do {
            value = try JSONCoding.decoder.decode(JSONValue.self, from: Data(bytes))
        } catch {
            throw HTTPError.badRequest("malformed JSON body: \(Self.describe(error))")
        }
        guard case .object(let object) = value else {
            throw HTTPError.badRequest("the JSON body must be an object")
        }
        if let name = JSONNames.firstRepeated(in: bytes) {
            let shown = name.count > 64 ? name.prefix(64) + "…" : name
            throw HTTPError.badRequest("malformed JSON body: the name \"\(shown)\" is repeated in an object (names must be unique)")
        }
        return object
    }

    private static func describe(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error {
            return context.underlyingError.map { "\($0)" } ?? context.debugDescription
        }
        // Any other decoding error (the JSON itself was readable): no Swift dump in the answer.
        return "it is not valid JSON"
    }

    /// The named field as a string: `nil` when absent, `422` "must be a string" when present
    /// with another JSON type.
    public func string(_ name: String) throws(HTTPError) -> String? {
        switch self {
        case .empty: return nil
        case .form(let fields): return fields[name]
        case .json(let object):
            switch object[name] {
            case nil: return nil
            case .string(let value): return value
            default: throw HTTPError.validation([.init(field: name, message: "must be a string")])
            }
        }
    }
}

/// The essence of a media type (`type/subtype`, lowercased) and its parameters.
public struct MediaType: Sendable, Hashable {
    public var essence: String
    public var parameters: [String: String]

    public init?(_ text: String) {
        // Byte-wise: this runs on every request that has a Content-Type.
        let utf8 = Array(text.utf8)
        func trimmed(_ range: Range<Int>) -> Range<Int> {
            var lower = range.lowerBound, upper = range.upperBound
            while lower < upper, utf8[lower] == 0x20 || utf8[lower] == 0x09 { lower += 1 }
            while upper > lower, utf8[upper - 1] == 0x20 || utf8[upper - 1] == 0x09 { upper -= 1 }
            return lower..<upper
        }
        func lowercased(_ range: Range<Int>) -> String {
            String(decoding: utf8[range].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        var segments: [Range<Int>] = []
        var start = 0
        for index in utf8.indices where utf8[index] == UInt8(ascii: ";") {
            segments.append(start..<index)
            start = index + 1
        }
        segments.append(start..<utf8.count)
        let essenceRange = trimmed(segments[0])
        guard utf8[essenceRange].contains(UInt8(ascii: "/")) else { return nil }
        essence = lowercased(essenceRange)
        var parameters: [String: String] = [:]
        for segment in segments.dropFirst() {
            guard let equals = utf8[segment].firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = lowercased(trimmed(segment.lowerBound..<equals))
            var value = trimmed((equals + 1)..<segment.upperBound)
            if value.count >= 2, utf8[value.lowerBound] == UInt8(ascii: "\""), utf8[value.upperBound - 1] == UInt8(ascii: "\"") {
                value = (value.lowerBound + 1)..<(value.upperBound - 1)
            }
            parameters[key] = String(decoding: utf8[value], as: UTF8.self)
        }
        self.parameters = parameters
    }
}
