import Glibc

/// What is known of a request once its header section is complete: everything but the body.
///
/// Routing, the head phase of middleware and the choice of how the body is read all work on
/// the head, before a byte of the body has been accepted. Copies share one storage, so
/// passing a head around costs one reference count.
public struct RequestHead: Sendable {
    @usableFromInline
    final class Storage: Sendable {
        @usableFromInline let originalMethod: HTTPMethod
        @usableFromInline let target: String
        @usableFromInline let path: Substring
        @usableFromInline let rawQuery: Substring?
        @usableFromInline let version: String
        @usableFromInline let headers: HTTPHeaders
        @usableFromInline let remoteAddress: String
        /// Whether a body follows, and the Content-Length declared.
        @usableFromInline let hasBody: Bool
        @usableFromInline let declaredLength: Int64?

        /// `framing`: whether a body follows and its declared length, as the parser found them
        /// (HTTP/1.1); nil: from the fields — and, when the protocol says so itself
        /// (`bodyFollows`, HTTP/2: no END_STREAM on the HEADERS frame), from that.
        init(
            method: HTTPMethod, target: String, version: String, headers: HTTPHeaders, remoteAddress: String, bodyFollows: Bool?,
            framing: (hasBody: Bool, declaredLength: Int64?)? = nil
        ) {
            originalMethod = method
            self.target = target
            (path, rawQuery) = Self.split(target)
            self.version = version
            self.headers = headers
            self.remoteAddress = remoteAddress
            if let framing {
                (hasBody, declaredLength) = framing
            } else {
                let length = headers["Content-Length"]
                declaredLength = length.flatMap(Int64.init)
                if let bodyFollows {
                    hasBody = bodyFollows && length != "0"
                } else {
                    hasBody = length.map { $0 != "0" } ?? headers.contains("Transfer-Encoding")
                }
            }
        }

        /// The path and query of a request-target; an absolute-form target ("http://host/path",
        /// RFC 9112 §3.2.2) is routed by its path. Found on the bytes, then cut from the string.
        static func split(_ target: String) -> (Substring, Substring?) {
            let utf8 = target.utf8
            guard
                let (pathStart, pathEnd, queryStart) = utf8.withContiguousStorageIfAvailable({ bytes -> (Int, Int, Int?) in
                    var start = 0
                    let scheme = absoluteFormScheme(UnsafeRawBufferPointer(bytes))
                    if scheme > 0 {
                        var index = scheme
                        while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "?") { index += 1 }
                        guard index < bytes.count, bytes[index] == UInt8(ascii: "/") else {
                            return (-1, -1, index < bytes.count ? index + 1 : nil)  // no path: "/", and the query if any
                        }
                        start = index
                    }
                    var question = start
                    while question < bytes.count, bytes[question] != UInt8(ascii: "?") { question += 1 }
                    return (start, question, question < bytes.count ? question + 1 : nil)
                })
            else {
                var copy = target  // not contiguous UTF-8 (a bridged string): once more on a native copy
                copy.makeContiguousUTF8()
                return split(copy)
            }
            let base = utf8.startIndex
            let query = queryStart.map { target[utf8.index(base, offsetBy: $0)...] }
            guard pathStart >= 0 else { return ("/", query) }
            return (target[utf8.index(base, offsetBy: pathStart)..<utf8.index(base, offsetBy: pathEnd)], query)
        }

        /// The length of `http://` or `https://` at the start of a target, else 0.
        static func absoluteFormScheme(_ bytes: UnsafeRawBufferPointer) -> Int {
            guard bytes.count >= 7, bytes[0] == UInt8(ascii: "h") else { return 0 }
            let http: StaticString = "http://", https: StaticString = "https://"
            if memcmp(bytes.baseAddress!, http.utf8Start, 7) == 0 { return 7 }
            if bytes.count >= 8, memcmp(bytes.baseAddress!, https.utf8Start, 8) == 0 { return 8 }
            return 0
        }
    }

    @usableFromInline let storage: Storage
    /// The method after an `X-HTTP-Method-Override` header (and, once the body is read, a
    /// `_method` field where the route allows it).
    public internal(set) var method: HTTPMethod

    public init(
        method: HTTPMethod, target: String, version: String = "HTTP/1.1", headers: HTTPHeaders = HTTPHeaders(),
        remoteAddress: String = "-"
    ) {
        self.init(method: method, target: target, version: version, headers: headers, remoteAddress: remoteAddress, bodyFollows: nil)
    }

    init(
        method: HTTPMethod, target: String, version: String, headers: HTTPHeaders, remoteAddress: String, bodyFollows: Bool?,
        framing: (hasBody: Bool, declaredLength: Int64?)? = nil
    ) {
        storage = Storage(
            method: method, target: target, version: version, headers: headers, remoteAddress: remoteAddress,
            bodyFollows: bodyFollows, framing: framing)
        self.method = method
    }

    /// The method on the request line.
    @inlinable public var originalMethod: HTTPMethod { storage.originalMethod }
    /// The request-target exactly as sent, e.g. `/hello?name=Bob`.
    @inlinable public var target: String { storage.target }
    /// The path part of the target, still percent-encoded (the path of an absolute-form target).
    @inlinable public var path: Substring { storage.path }
    /// The query part of the target without `?`, still percent-encoded; `nil` when absent.
    @inlinable public var rawQuery: Substring? { storage.rawQuery }
    @inlinable public var version: String { storage.version }
    @inlinable public var headers: HTTPHeaders { storage.headers }
    /// The host (and port) the request is for: the authority of an absolute-form target —
    /// which an origin server uses instead of `Host` (RFC 9112 §3.2.2) — or else `Host`
    /// (HTTP/2's `:authority`).
    public var authority: String? {
        withAuthorityBytes { $0.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// Calls `body` with the bytes of `authority`, or nil when there is none — without making a
    /// string of it.
    @inlinable
    public func withAuthorityBytes<T>(_ body: (UnsafeRawBufferPointer?) throws -> T) rethrows -> T {
        if let authority = authorityInTarget() {
            var target = storage.target
            return try target.withUTF8 { try body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer($0)[authority])) }
        }
        return try headers.withValueBytes(of: "Host", body)
    }

    /// Where the authority of an absolute-form target is in its bytes; nil for any other target.
    @usableFromInline
    func authorityInTarget() -> Range<Int>? {
        guard storage.target.utf8.first == UInt8(ascii: "h") else { return nil }
        return storage.target.utf8.withContiguousStorageIfAvailable { bytes -> Range<Int>? in
            let scheme = Storage.absoluteFormScheme(UnsafeRawBufferPointer(bytes))
            guard scheme > 0 else { return nil }
            var end = scheme
            while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?") { end += 1 }
            return scheme..<end
        } ?? nil
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
    var forwarded: ForwardedClient? {
        get { forwardedBox?.client }
        set { forwardedBox = newValue.map(ForwardedBox.init) }
    }
    /// Behind a reference: a head is copied often, and is rarely forwarded.
    private var forwardedBox: ForwardedBox?

    private final class ForwardedBox: Sendable {
        let client: ForwardedClient
        init(_ client: ForwardedClient) { self.client = client }
    }

    /// The decoded query string; `400` naming the problem when it is malformed.
    public func query() throws(HTTPError) -> FormFields {
        guard let rawQuery else { return FormFields() }
        return try FormFields(decoding: rawQuery.utf8, context: "query")
    }

    /// True when a body follows the header section (a Content-Length above 0, or chunked; on
    /// HTTP/2, a HEADERS frame that does not end the stream).
    @inlinable public var hasBody: Bool { storage.hasBody }

    /// The Content-Length the client declared, if any.
    @inlinable public var declaredLength: Int64? { storage.declaredLength }
}
