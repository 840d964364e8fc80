/// What is known of a request once its header section is complete: everything but the body.
///
/// Routing, the head phase of middleware and the choice of how the body is read all work on
/// the head, before a byte of the body has been accepted.
public struct RequestHead: Sendable {
    /// The method after an `X-HTTP-Method-Override` header (and, once the body is read, a
    /// `_method` field where the route allows it).
    public internal(set) var method: HTTPMethod
    /// The method on the request line.
    public let originalMethod: HTTPMethod
    /// The request-target exactly as sent, e.g. `/hello?name=Bob`.
    public let target: String
    /// The path part of the target, still percent-encoded (the path of an absolute-form target).
    public let path: Substring
    /// The query part of the target without `?`, still percent-encoded; `nil` when absent.
    public let rawQuery: Substring?
    public let version: String
    public let headers: HTTPHeaders
    /// The client's address as text.
    public let remoteAddress: String

    public init(method: HTTPMethod, target: String, version: String = "HTTP/1.1", headers: HTTPHeaders = HTTPHeaders(),
                remoteAddress: String = "-") {
        self.method = method
        self.originalMethod = method
        self.target = target
        var rest = target[...]
        // RFC 9112 §3.2.2: absolute-form ("http://host/path") is routed by its path.
        if rest.hasPrefix("http://") || rest.hasPrefix("https://") {
            let afterScheme = rest[rest.index(rest.firstIndex(of: ":")!, offsetBy: 3)...]
            rest = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }).map { afterScheme[$0...] } ?? "/"
            if rest.hasPrefix("?") { rest = ("/" + rest)[...] }
        }
        if let question = rest.firstIndex(of: "?") {
            path = rest[..<question]
            rawQuery = rest[rest.index(after: question)...]
        } else {
            path = rest
            rawQuery = nil
        }
        self.version = version
        self.headers = headers
        self.remoteAddress = remoteAddress
    }

    /// The decoded query string; `400` naming the problem when it is malformed.
    public func query() throws(HTTPError) -> FormFields {
        guard let rawQuery else { return FormFields() }
        return try FormFields(decoding: rawQuery.utf8, context: "query")
    }

    /// True when a body follows the header section (a Content-Length above 0, or chunked).
    public var hasBody: Bool {
        if headers.contains("Transfer-Encoding") { return true }
        guard let length = headers["Content-Length"] else { return false }
        return length != "0"
    }

    /// The Content-Length the client declared, if any.
    public var declaredLength: Int64? { headers["Content-Length"].flatMap(Int64.init) }
}
