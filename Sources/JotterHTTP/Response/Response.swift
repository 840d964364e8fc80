/// An HTTP response: status, header fields and a body.
///
/// ```swift
/// Response(status: .ok, contentType: "text/plain; charset=utf-8", body: Array("Hello Bob!".utf8))
/// ```
public struct Response: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Bytes (in `body`), a stream, or a deferred answer.
    var payload: Payload = .bytes
    /// The pattern of the route that answered (`/notes/:id`), for metrics; set by the router.
    var route: String?

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: HTTPStatus = .ok, contentType: String, body: [UInt8]) {
        self.init(status: status, headers: HTTPHeaders([("Content-Type", contentType)]), body: body)
    }
}

/// Anything a handler can return: a `String`, a `Response`, or `JSON` over an `Encodable` value.
public protocol ResponseGenerator: SendableMetatype {
    func response(for request: Request) throws -> Response
}

extension Response: ResponseGenerator {
    public func response(for request: Request) throws -> Response { self }
}

extension String: ResponseGenerator {
    /// `200 text/plain; charset=utf-8` with the string as body.
    public func response(for request: Request) throws -> Response {
        Response(status: .ok, contentType: "text/plain; charset=utf-8", body: Array(utf8))
    }
}
