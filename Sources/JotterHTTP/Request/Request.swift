import Synchronization

/// An HTTP request as handlers see it: its head, and its body as the route's `BodyPolicy` read it.
///
/// Everything of the head is readable directly (`request.method`, `request.headers`, …).
@dynamicMemberLookup
public struct Request: Sendable {
    public internal(set) var head: RequestHead
    /// What the body brought; nil without one (a request is copied often: one reference).
    private let content: Content?

    private final class Content: Sendable {
        let rawBody: [UInt8]
        let files: [UploadedFile]
        let bodyStream: (any RequestBodyStream)?
        let decodedBody: Result<RequestBody, HTTPError>

        init(rawBody: [UInt8], files: [UploadedFile], bodyStream: (any RequestBodyStream)?, decodedBody: Result<RequestBody, HTTPError>) {
            self.rawBody = rawBody
            self.files = files
            self.bodyStream = bodyStream
            self.decodedBody = decodedBody
        }
    }

    /// The raw body bytes of a buffered body (empty when the body was streamed elsewhere, as
    /// multipart file parts and raw streams are).
    public var rawBody: [UInt8] { content?.rawBody ?? [] }
    /// The file parts of a multipart body, stored by the route's file store.
    public var files: [UploadedFile] { content?.files ?? [] }
    /// The receiver of a `.stream` body, after it has seen the whole body.
    public var bodyStream: (any RequestBodyStream)? { content?.bodyStream }

    public init(
        head: RequestHead, body: [UInt8] = [], multipart: (fields: FormFields, files: [UploadedFile])? = nil,
        bodyStream: (any RequestBodyStream)? = nil
    ) {
        self.head = head
        let decoded: Result<RequestBody, HTTPError>
        if let multipart {
            decoded = .success(.form(multipart.fields))
        } else if body.isEmpty {
            guard bodyStream != nil else {
                content = nil
                return
            }
            decoded = .success(.empty)
        } else {
            decoded = Result { () throws(HTTPError) in try RequestBody.decode(body, contentType: head.headers["Content-Type"]) }
        }
        content = Content(rawBody: body, files: multipart?.files ?? [], bodyStream: bodyStream, decodedBody: decoded)
    }

    /// A request built by hand (tests, the in-process client).
    public init(
        method: HTTPMethod, target: String, version: String = "HTTP/1.1", headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [], remoteAddress: String = "-"
    ) {
        self.init(head: RequestHead(method: method, target: target, version: version, headers: headers, remoteAddress: remoteAddress), body: body)
    }

    @inlinable public subscript<Value>(dynamicMember keyPath: KeyPath<RequestHead, Value>) -> Value { head[keyPath: keyPath] }

    /// The method after any `_method` / `X-HTTP-Method-Override`.
    @inlinable public var method: HTTPMethod { head.method }

    /// The decoded query string; `400` naming the problem when it is malformed.
    public func query() throws(HTTPError) -> FormFields { try head.query() }

    /// The body decoded by Content-Type (form, JSON or empty); `400`/`415` when it can't be.
    public func body() throws(HTTPError) -> RequestBody {
        guard let content else { return .empty }
        return try content.decodedBody.get()
    }
}

/// A typed key for a value that middleware puts into the request context.
///
/// ```swift
/// enum CurrentUser: RequestContextKey { typealias Value = User }
/// context[CurrentUser.self] = user            // in a middleware's head phase
/// let user = context[CurrentUser.self]        // in a handler
/// ```
public protocol RequestContextKey {
    associatedtype Value: Sendable
}

/// What the server knows about a request beyond the request itself: path parameters, the
/// request id, the matched route, and typed values set by middleware.
public struct RequestContext: Sendable {
    /// Path parameters by name, e.g. `id` for `/notes/:id`.
    public var parameters: Parameters = Parameters()
    /// The request's id (set by `RequestIDMiddleware`), `-` when none was given.
    public var requestID = "-"
    /// The pattern of the route that answers (`/notes/:id`); nil when none matched.
    public var route: String? { matchedRoute?.pattern.text }
    /// The route that answers, once routing found it (a `_method` choice: once its handler is
    /// chosen); its middleware's refusals are counted under it.
    var matchedRoute: Route?
    /// When the request line arrived (microseconds of `clock`).
    var started: UInt64 = 0
    /// The clock of the request's connection: every duration of the request is read from it.
    var clock = MachineClock.system
    /// Where interim responses go: the request's exchange on its connection (nil where the
    /// engine can't send them).
    var interimSink: InterimSink.Ticket?

    /// Microseconds since the request line arrived.
    public var elapsedMicroseconds: Int { started == 0 ? 0 : clock.elapsed(since: started) }
    /// An error found before the handler (routing, framing, a head-phase refusal, the body),
    /// thrown by the responder that stands in for the handler, so that it passes through the
    /// same middleware as every answer.
    var refusal: (any Error)?
    /// True when the request is being refused before its handler (routing, framing, a head
    /// phase, the body): `next` throws that refusal, and no handler runs.
    public var isRefused: Bool { refusal != nil }
    /// Each value in a box of its key's value type, so that a read is a downcast the key
    /// proves (an `any Sendable` read back with `as?` was a dynamic cast of ~570 instructions).
    /// Inlinable with the subscript: a module reading or setting a key does it specialized for
    /// the key's value type, with no metadata looked up at run time.
    @usableFromInline var values: [(key: ObjectIdentifier, value: any ContextValue)] = []

    public init() {}

    /// Sends an interim (1xx) response with `headers` before the final answer — e.g. `104
    /// Upload Resumption Supported` with `Location` while an upload's body arrives. Call it from
    /// the request's own work (a head phase, a body policy's receiver, a handler), on its loop or
    /// its route's executor; it is written in order, before the final answer. False when it was not sent: the client speaks
    /// HTTP/1.0, the status is not 1xx (or is 101), or the final answer is already out (sent
    /// from a route's executor it is posted to the loop, and true means it is on its way).
    @discardableResult
    public func sendInterim(_ status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders()) -> Bool {
        guard (100...199).contains(status.code), status.code != 101, let interimSink else { return false }
        return interimSink(status, headers)
    }

    /// The value middleware stored under `key`, if any.
    @inlinable
    public subscript<Key: RequestContextKey>(key: Key.Type) -> Key.Value? {
        get {
            // Only `key` stores under its identifier, always a `TypedContextValue<Key.Value>`.
            for entry in values where entry.key == ObjectIdentifier(key) {
                return unsafeDowncast(entry.value, to: TypedContextValue<Key.Value>.self).value
            }
            return nil
        }
        set {
            values.removeAll { $0.key == ObjectIdentifier(key) }
            if let newValue { values.append((ObjectIdentifier(key), TypedContextValue(newValue))) }
        }
    }
}

/// A value of the request context: always a `TypedContextValue`, read back with the downcast
/// its key proves. `Sendable` is a marker with no witness table, so this is one reference, as a
/// class would be, and the compiler checks what a context holds.
@usableFromInline
typealias ContextValue = AnyObject & Sendable

@usableFromInline
final class TypedContextValue<Value: Sendable>: Sendable {
    @usableFromInline let value: Value
    @inlinable init(_ value: Value) { self.value = value }
}

/// Decoded path parameters, with typed access that fails as `404`.
public struct Parameters: Sendable {
    var values: [(name: String, value: String)] = []

    public subscript(name: String) -> String? {
        values.first { $0.name == name }?.value
    }

    /// The parameter converted to `type`; a missing or unconvertible value is `404`, since
    /// no resource can have such a path.
    public func require<T: LosslessStringConvertible>(_ name: String, as type: T.Type = T.self) throws(HTTPError) -> T {
        guard let text = self[name], let value = T(text) else {
            throw HTTPError(.notFound, detail: "no resource at this path")
        }
        return value
    }
}

/// The request's end of `RequestContext.sendInterim`: a queue of interim responses that its
/// connection takes after each call into the request's lifecycle, ahead of whatever that call
/// answered — one per HTTP/1.1 connection, one per HTTP/2 stream. While it is open (a request is
/// being read or served and not answered yet) interim responses are queued; closed, they are
/// refused. Each opening begins an exchange of its own, and a request holds the one it began
/// with (`Ticket`): what it sends is queued only while that exchange is open — on HTTP/1.1 an
/// interim posted by a route's executor that reaches the loop after its request was answered is
/// dropped, not sent ahead of the next request's answer. Sent from another thread (a route's
/// executor), the response is posted to the loop, behind what that thread posted before and
/// ahead of the request's landing; the loop queues it and tells the connection (`connection`,
/// its token) to take it (`LoopConnection.interimsQueued`). What changes is behind a `Mutex`
/// (about 20 instructions a lock, taken 4 times an HTTP/1.1 hello), so the sink is `Sendable`
/// by construction.
package final class InterimSink: Sendable {
    /// An interim response queued.
    struct Interim: Sendable {
        let status: HTTPStatus
        let headers: HTTPHeaders
    }

    private struct State {
        var isOpen = false
        /// The exchange the last opening began (counted from 1).
        var exchange: UInt64 = 0
        var queued: [Interim] = []
    }

    /// A request's hold on the sink: the exchange open when it began.
    package struct Ticket: Sendable {
        let sink: InterimSink
        let exchange: UInt64

        /// As `InterimSink.callAsFunction`, for this exchange only.
        func callAsFunction(_ status: HTTPStatus, _ headers: HTTPHeaders) -> Bool {
            sink(status, headers, exchange: exchange)
        }
    }

    private let loop: EventLoop?
    /// The token of the connection to tell when an interim response posted to the loop was taken.
    let connection: UInt64?
    private let state = Mutex(State())

    /// A queue for the connection `connection` on `loop` (neither: a connection driven without
    /// a loop, on one thread).
    init(loop: EventLoop? = nil, connection: UInt64? = nil) {
        self.loop = loop
        self.connection = connection
    }

    /// Opens the queue for a new exchange (a request began that may send interim responses) or
    /// closes it (it was answered, or it ended).
    func setOpen(_ open: Bool) {
        state.withLock { state in
            if open { state.exchange &+= 1 }
            state.isOpen = open
        }
    }

    /// The hold of a request that begins now, on the exchange the last opening began.
    var ticket: Ticket { Ticket(sink: self, exchange: state.withLock { $0.exchange }) }

    /// The interim responses queued, oldest first, taken off the queue.
    func take() -> [Interim] {
        state.withLock { state in
            guard !state.queued.isEmpty else { return [] }
            let taken = state.queued
            state.queued = []
            return taken
        }
    }

    /// Queues now, when `exchange` is the one open: whether it was queued.
    func send(_ status: HTTPStatus, _ headers: HTTPHeaders, exchange: UInt64) -> Bool {
        state.withLock { state in
            guard state.isOpen, state.exchange == exchange else { return false }
            state.queued.append(Interim(status: status, headers: headers))
            return true
        }
    }

    /// Queues now on the loop; off it, posts (and says true: it is on its way — and is dropped
    /// there if `exchange` was answered meanwhile).
    func callAsFunction(_ status: HTTPStatus, _ headers: HTTPHeaders, exchange: UInt64) -> Bool {
        guard let loop, !loop.isCurrent else { return send(status, headers, exchange: exchange) }
        loop.post(.interim(self, exchange, status, headers))
        return true
    }
}
