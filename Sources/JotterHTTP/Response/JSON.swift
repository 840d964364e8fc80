#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Shared JSON coders: one configuration for every body the server writes or reads.
public enum JSONCoding {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }()
    public static let decoder = JSONDecoder()
}

/// A response body that is `value` encoded as `application/json`.
///
/// ```swift
/// return JSON(["message": "Hello Bob!"], status: .created)
/// ```
public struct JSON<Value: Encodable>: ResponseConvertible {
    public var value: Value
    public var status: HTTPStatus
    public var headers: HTTPHeaders

    /// How a `JSONWritable` value writes itself (set by the initialiser that knows the type is
    /// one, so no response looks the conformance up at run time).
    @usableFromInline var written: ((Value) -> [UInt8])?

    @inlinable
    public init(_ value: Value, status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders()) {
        self.value = value
        self.status = status
        self.headers = headers
    }

    /// A value that writes its own JSON (`JSONWriter`), not through `JSONEncoder`. (The
    /// initialisers are inlinable: made where the value's type is known, with no metadata of
    /// `JSON<Value>` looked up at run time.)
    @inlinable
    public init(_ value: Value, status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders()) where Value: JSONWritable {
        self.value = value
        self.status = status
        self.headers = headers
        written = { value in JSONWriter.bytes(capacity: value.estimatedJSONSize) { value.write(to: &$0) } }
    }

    public func response(for request: Request) throws -> Response {
        let body: [UInt8]
        if let written {
            body = written(value)
        } else if let writable = value as? any JSONWritable {
            body = JSONWriter.bytes(capacity: writable.estimatedJSONSize) { writable.write(to: &$0) }
        } else {
            body = [UInt8](try JSONCoding.encoder.encode(value))
        }
        var response = Response(status: status, headers: headers, body: body)
        response.headers.set("Content-Type", "application/json")
        return response
    }
}
