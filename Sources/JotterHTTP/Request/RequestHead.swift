/// What is known of a request once its header section is complete: everything but the body.
///
/// Routing, the head phase of middleware and the choice of how the body is read all work on
/// the head, before a byte of the body has been accepted. Copies share one storage, so
/// passing a head around costs one reference count.
public struct RequestHead: Sendable {
    final class Storage: Sendable {
        let originalMethod: HTTPMethod
        let target: String
        let path: Substring
        let rawQuery: Substring?
        let version: String
        let headers: HTTPHeaders
        let remoteAddress: String
        /// Whether a body follows, when the protocol says so itself (HTTP/2: no END_STREAM on
        /// the HEADERS frame); nil: from Content-Length and Transfer-Encoding (HTTP/1.1).
        let bodyFollows: Bool?

        init(method: HTTPMethod, target: String, version: String, headers: HTTPHeaders, remoteAddress: String, bodyFollows: Bool?) {
            originalMethod = method
            self.target = target
            (path, rawQuery) = Self.split(target)
            self.version = version
            self.headers = headers
            self.remoteAddress = remoteAddress
            self.bodyFollows = bodyFollows
        }

        /// The path and query of a request-target; an absolute-form target ("http://host/path",
        /// RFC 9112 §3.2.2) is routed by its path.
        static func split(_ target: String) -> (Substring, Substring?) {
            let bytes = target.utf8
            var start = bytes.startIndex
            if bytes.first == UInt8(ascii: "h"), target.hasPrefix("http://") || target.hasPrefix("https://") {
                let afterScheme = bytes.index(bytes.firstIndex(of: UInt8(ascii: ":"))!, offsetBy: 3)
                guard let slash = bytes[afterScheme...].firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }),
                      bytes[slash] == UInt8(ascii: "/") else {
                    let query = bytes[afterScheme...].firstIndex(of: UInt8(ascii: "?")).map { target[bytes.index(after: $0)...] }
                    return ("/", query)
                }
                start = slash
            }
            guard let question = bytes[start...].firstIndex(of: UInt8(ascii: "?")) else { return (target[start...], nil) }
            return (target[start..<question], target[bytes.index(after: question)...])
        }
    }

    let storage: Storage
    /// The method after an `X-HTTP-Method-Override` header (and, once the body is read, a
    /// `_method` field where the route allows it).
    public internal(set) var method: HTTPMethod

    public init(method: HTTPMethod, target: String, version: String = "HTTP/1.1", headers: HTTPHeaders = HTTPHeaders(),
                remoteAddress: String = "-") {
        self.init(method: method, target: target, version: version, headers: headers, remoteAddress: remoteAddress, bodyFollows: nil)
    }

    init(method: HTTPMethod, target: String, version: String, headers: HTTPHeaders, remoteAddress: String, bodyFollows: Bool?) {
        storage = Storage(method: method, target: target, version: version, headers: headers, remoteAddress: remoteAddress,
                          bodyFollows: bodyFollows)
        self.method = method
    }

    /// The method on the request line.
    public var originalMethod: HTTPMethod { storage.originalMethod }
    /// The request-target exactly as sent, e.g. `/hello?name=Bob`.
    public var target: String { storage.target }
    /// The path part of the target, still percent-encoded (the path of an absolute-form target).
    public var path: Substring { storage.path }
    /// The query part of the target without `?`, still percent-encoded; `nil` when absent.
    public var rawQuery: Substring? { storage.rawQuery }
    public var version: String { storage.version }
    public var headers: HTTPHeaders { storage.headers }
    /// The host (and port) the request is for: the authority of an absolute-form target —
    /// which an origin server uses instead of `Host` (RFC 9112 §3.2.2) — or else `Host`
    /// (HTTP/2's `:authority`).
    public var authority: String? {
        let target = storage.target
        let schemeLength = target.hasPrefix("http://") ? 7 : target.hasPrefix("https://") ? 8 : 0
        guard schemeLength > 0 else { return headers["Host"] }
        let rest = target.utf8.dropFirst(schemeLength)
        let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        return String(target[rest.startIndex..<end])
    }
    /// The client's address as text: the connection's peer, or — on a connection from a
    /// trusted proxy (`TrustedProxies`) — the client it forwarded the request for.
    public var remoteAddress: String { forwarded?.address ?? storage.remoteAddress }
    /// The connection's peer address (the proxy, when one forwarded the request).
    public var peerAddress: String { storage.remoteAddress }
    /// The scheme a trusted proxy says the client used (`https` or `http`); nil when no
    /// trusted proxy said (then the connection's own scheme applies).
    public var forwardedProto: String? { forwarded?.proto }
    /// What trusted proxies said of the client (set by the router).
    var forwarded: ForwardedClient?

    /// The decoded query string; `400` naming the problem when it is malformed.
    public func query() throws(HTTPError) -> FormFields {
        guard let rawQuery else { return FormFields() }
        return try FormFields(decoding: rawQuery.utf8, context: "query")
    }

    /// True when a body follows the header section (a Content-Length above 0, or chunked; on
    /// HTTP/2, a HEADERS frame that does not end the stream).
    public var hasBody: Bool {
        if let follows = storage.bodyFollows { return follows && headers["Content-Length"] != "0" }
        if let length = headers["Content-Length"] { return length != "0" }
        return headers.contains("Transfer-Encoding")
    }

    /// The Content-Length the client declared, if any.
    public var declaredLength: Int64? { headers["Content-Length"].flatMap(Int64.init) }
}
