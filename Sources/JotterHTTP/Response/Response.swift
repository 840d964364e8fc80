/// An HTTP response: status, header fields and a body.
///
/// ```swift
/// Response(status: .ok, contentType: "text/plain; charset=utf-8", body: Array("Hello Bob!".utf8))
/// ```
public struct Response: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Bytes (in `body`), a stream, or a file.
    package var payload: Payload = .bytes

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: HTTPStatus = .ok, contentType: String, body: [UInt8]) {
        var headers = HTTPHeaders()
        headers.add("Content-Type", contentType)
        self.init(status: status, headers: headers, body: body)
    }

    /// The length of the body the engine sends (a file's range, a fixed-length stream), or
    /// nil for a stream of unknown length.
    public var contentLength: UInt64? {
        switch payload {
        case .bytes: UInt64(body.count)
        case .stream(_, let length, _): length
        case .file(_, _, let length): length
        }
    }
}

/// Anything a handler can return: a `String`, a `Response`, a `Reply`, or `JSON` over an
/// `Encodable` value.
public protocol ResponseGenerator: SendableMetatype {
    func reply(for request: Request) throws -> Reply
}

/// A `ResponseGenerator` whose answer is always known at once.
public protocol ResponseConvertible: ResponseGenerator {
    func response(for request: Request) throws -> Response
}

extension ResponseConvertible {
    /// Inlinable: specialized where a handler returns its value (unspecialized, a generic
    /// value such as `JSON<T>` is passed and destroyed through its metadata).
    @inlinable
    public func reply(for request: Request) throws -> Reply { .now(try response(for: request)) }
}

extension Reply: ResponseGenerator {
    public func reply(for request: Request) throws -> Reply { self }
}

extension Response: ResponseConvertible {
    public func response(for request: Request) throws -> Response { self }
}

extension String: ResponseConvertible {
    /// `200 text/plain; charset=utf-8` with the string as body.
    public func response(for request: Request) throws -> Response {
        Response(status: .ok, contentType: "text/plain; charset=utf-8", body: Array(utf8))
    }
}
