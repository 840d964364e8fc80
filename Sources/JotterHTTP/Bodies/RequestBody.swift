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
            throw HTTPError(.unsupportedMediaType,
                            detail: "unsupported Content-Type '\(media?.essence ?? "")': send application/x-www-form-urlencoded, multipart/form-data or application/json")
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
        let parts = text.split(separator: ";", omittingEmptySubsequences: false)
        let essence = parts[0].trimmingASCIISpaces().lowercased()
        guard essence.contains("/") else { return nil }
        self.essence = essence
        var parameters: [String: String] = [:]
        for part in parts.dropFirst() {
            guard let equals = part.firstIndex(of: "=") else { continue }
            let key = part[..<equals].trimmingASCIISpaces().lowercased()
            var value = String(part[part.index(after: equals)...].trimmingASCIISpaces())
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            parameters[key] = value
        }
        self.parameters = parameters
    }
}
