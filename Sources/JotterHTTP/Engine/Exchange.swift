/// One request on a connection, as both machines drive it — an HTTP/1.1 request, or an HTTP/2
/// stream's: its `RequestLifecycle`, what the head said (HEAD, whether a body follows), how far
/// its body came (when it began, its bytes, whether the rest is dropped) and what it awaits from
/// another thread. A value with no socket, no thread and no protocol: `HTTP1StateMachine` holds
/// one at a time, `HTTP2StateMachine` one a stream.
///
/// Each of the lifecycle's actions goes through here once for both protocols and comes back as
/// a `Next`, which the machine carries out in its own protocol: an answer queued (HTTP/1.1) or
/// submitted as HEADERS and DATA (HTTP/2), `100 Continue` written or submitted, work handed to
/// its driver (`ConnectionAction.start`), the request failed (the connection closed, or the
/// stream reset), reading paused while the body's consumer is behind. The machine calls the
/// lifecycle's head (`headerComplete`) itself, as only it knows the head's form, and hands the
/// action here.
struct Exchange {
    /// What the request awaits from another thread; nothing more of it is read meanwhile.
    enum Awaited {
        /// A later reply (`resume`).
        case later
        /// The landing of a step on the route's executor (`landed`), begun at the request's head
        /// or at its end.
        case away(atHead: Bool)
    }

    /// What the machine does next for the request, in its protocol.
    enum Next {
        /// Nothing: reading goes on.
        case proceed
        /// `100 Continue` goes out before the body is read.
        case sendContinue
        /// The request's answer.
        case answer(Response)
        /// Work to start once the event is over: a later reply's, or a step on the route's
        /// executor (`awaited` says which).
        case start(WorkStart)
        /// The lifecycle gave up without an answer: the connection closes (HTTP/1.1), the
        /// stream is reset (HTTP/2).
        case fail
        /// The body's consumer is behind: the connection reads nothing more until it calls back.
        case pause
    }

    /// A step on the route's executor came back: its action, and whether it began at the head.
    struct Landing {
        let action: RequestLifecycle.Action
        let atHead: Bool
    }

    let lifecycle: RequestLifecycle
    /// The stream the request came on (0 on HTTP/1.1).
    let stream: Int32
    /// A HEAD request: its answer has no body.
    let isHead: Bool
    /// The head said a body follows.
    let hasBody: Bool
    /// The request came in HTTP/1.0: no `100 Continue` nor other 1xx, no chunked answer.
    let http10: Bool
    /// The answer was made before the body ended: the rest of the body is dropped.
    private(set) var discarding = false
    private(set) var awaited: Awaited?
    /// When the body's rate counts from: the head, moved on by the server's own time (a step
    /// away, a pause of the body's consumer).
    private var bodyStarted: UInt64
    private var bodyBytes = 0

    /// Begins a request at `now`: its lifecycle (counted in flight until `complete`).
    /// - Parameters:
    ///   - target: the request-target, or what stands for it in the access log.
    ///   - interim: where the request's interim responses go; nil when it may send none.
    ///   - http10: the request came in HTTP/1.0.
    init(
        server: HTTPServer, target: String, address: String, clock: MachineClock, now: UInt64, interim: InterimSink?,
        stream: Int32, isHead: Bool, hasBody: Bool, http10: Bool = false
    ) {
        lifecycle = RequestLifecycle(
            router: server.router, limits: server.limits, target: target, remoteAddress: address, clock: clock, started: now,
            interim: interim)
        server.inFlight.add(1, ordering: .relaxed)
        self.stream = stream
        self.isHead = isHead
        self.hasBody = hasBody
        self.http10 = http10
        bodyStarted = now
    }

    // MARK: - The lifecycle's actions

    /// The action of the request's head (at once, or landed from the executor). The action is
    /// consumed, so that an answer moves into the `Next`: a copy would retain and release each
    /// of its buffers.
    mutating func headActed(_ action: consuming RequestLifecycle.Action) -> Next {
        switch consume action {
        case .proceed:
            guard hasBody, !http10, !lifecycle.isRefused, let expect = lifecycle.head?.headers["Expect"],
                HTTPHeaders.equal(expect, "100-continue")
            else { return .proceed }
            return .sendContinue
        case .respond(let response):
            if hasBody { discarding = true }
            return .answer(response)
        case .wait(let later):
            if hasBody { discarding = true }
            return start(later)
        case .close:
            return .fail
        case .elsewhere:
            return goAway(atHead: true)
        }
    }

    /// The action of the request's end (at once, or landed from the executor).
    mutating func bodyActed(_ action: consuming RequestLifecycle.Action) -> Next {
        switch consume action {
        case .respond(let response): .answer(response)
        case .wait(let later): start(later)
        case .close: .fail
        case .proceed: .proceed
        case .elsewhere: goAway(atHead: false)
        }
    }

    /// Body bytes arrived; `ready` is what the body's consumer calls back when it is behind.
    mutating func receive(_ chunk: UnsafeRawBufferPointer, then ready: @autoclosure () -> @Sendable () -> Void) -> Next {
        bodyBytes += chunk.count
        switch lifecycle.receive(chunk) {
        case .proceed:
            return lifecycle.bodyMustWait(then: ready()) ? .pause : .proceed
        case .respond(let response):
            discarding = true
            return .answer(response)
        case .close, .wait, .elsewhere:
            return .fail
        }
    }

    /// The body ended (or there was none): the handler's action.
    mutating func bodyComplete() -> Next {
        bodyActed(lifecycle.bodyComplete())
    }

    /// The server gives up on the body (`why` it did, for the client): a `408` through the
    /// request's middleware, the rest of the body dropped; `.fail` when it cannot be answered so.
    mutating func bodyTimedOut(_ why: String, closesConnection: Bool) -> Next {
        let error = HTTPError(.requestTimeout, detail: "the request's body \(why): send it again", closesConnection: closesConnection)
        guard case .respond(let response) = lifecycle.bodyTimedOut(error) else { return .fail }
        discarding = true
        return .answer(response)
    }

    /// A head that could not be parsed was answered: nothing more of the request is read or awaited.
    mutating func refused() {
        discarding = true
        awaited = nil
    }

    private mutating func start(_ later: Later) -> Next {
        awaited = .later
        return .start(.later(later, stream: stream))
    }

    private mutating func goAway(atHead: Bool) -> Next {
        awaited = .away(atHead: atHead)
        return .start(.away(lifecycle, stream: stream))
    }

    // MARK: - Back from other threads

    /// A later reply is ready: `render` makes its response; nil when none is awaited.
    mutating func resume(_ render: () throws -> Response) -> Response? {
        guard case .later = awaited else { return nil }
        awaited = nil
        return lifecycle.resume(render)
    }

    /// The step that went away on `trip` to the route's executor is back at `now`; nil when this
    /// request does not await it. Back at the head, the body's rate counts from now: the time
    /// away was the server's.
    mutating func landed(_ trip: RequestLifecycle.Trip, now: UInt64) -> Landing? {
        guard case .away(let atHead) = awaited, lifecycle.isAway(on: trip) else { return nil }
        awaited = nil
        if atHead { bodyStarted = now }
        return Landing(action: lifecycle.landed(), atHead: atHead)
    }

    /// Reading was paused for `duration` until `now` (the body's consumer was behind, or the
    /// connection paused for another stream): that time is the server's, not counted against the
    /// body's rate — never more than the body has been under way (a step that landed at the
    /// head meanwhile already started it afresh).
    mutating func resumed(after duration: UInt64, now: UInt64) {
        bodyStarted = min(bodyStarted + duration, max(bodyStarted, now))
    }

    // MARK: - Time and the end

    /// Whether the body arrives slower than `rate` bytes a second, once `grace` has passed since
    /// it began.
    func isTooSlow(now: UInt64, grace: UInt64, rate: Int) -> Bool {
        now >= bodyStarted + grace && UInt64(bodyBytes) * 1_000_000 < UInt64(rate) * (now - bodyStarted)
    }

    /// The request `lifecycle` is over: its middleware are told how (`RequestLifecycle.completed`),
    /// and it is no longer in flight.
    static func complete(
        _ lifecycle: RequestLifecycle, status: Int, bytes: Int, outcome: CompletedExchange.Outcome, server: HTTPServer
    ) {
        lifecycle.completed(status: status, bytesSent: bytes, outcome: outcome)
        server.inFlight.subtract(1, ordering: .releasing)
    }
}
