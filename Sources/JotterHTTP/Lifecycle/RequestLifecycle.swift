import Glibc

/// One request's way through the server, as a small state machine: the engine reports what
/// happened on the connection (header section complete, body bytes, body complete, a later
/// reply ready, the end) and does what the returned `Action` says. No socket here, so tests
/// drive it directly.
///
/// ```
///  head ──▶ body ──▶ handling ──▶ answered
///    │        │          └──▶ waiting (a later reply) ──▶ answered
///    └────────┴──▶ refused (answered at once; the engine drops the rest of the body)
/// ```
///
/// At the head, the framing is checked, the route is resolved (with any override header), the
/// head phase of the route's middleware runs and the route's `BodyPolicy` picks the body's
/// reader — all before a byte of the body is accepted. A refusal there stores nothing.
///
/// A route that runs on an executor (`WorkPlace`) has its work done there: the engine gets
/// `.elsewhere`, calls `goAway(landed:)`, reads nothing more of the request meanwhile, and once
/// `landed` was called (from the executor's thread) takes the step's action from `landed()` on
/// its own thread. Between the two only the executor touches the lifecycle; a connection that
/// ends meanwhile calls `completed` as always, which then waits for the landing
/// (`finishAbandoned`).
final class RequestLifecycle {
    /// What the engine does next.
    enum Action {
        /// Keep reading (the next call brings body bytes, or the end of the body).
        case proceed
        /// Send this response.
        case respond(Response)
        /// Suspend the connection and run the later reply's work.
        case wait(Later)
        /// Suspend the connection (read nothing more of this request) and call `goAway(landed:)`:
        /// the next step runs on the route's executor; `landed()` then gives its action.
        case elsewhere
        /// Close the connection without an answer.
        case close
    }

    enum Phase {
        case head
        /// Reading the body.
        case body
        /// Refused at the head of a request without a body: answered on the next call.
        case refused(Response)
        case waiting(Later)
        case answered
    }

    /// The server's limits and folders, as every request sees them.
    struct Limits {
        var maxBodySize: Int
        var maxUploadSize: Int64
        var maxParts: Int
        var temporaryDirectory: String
    }

    private let router: Router
    private let limits: Limits
    let target: String
    let remoteAddress: String
    let started: UInt64
    // The state below is unchecked for exclusive access (no runtime check per access, ~85
    // instructions each): one thread at a time calls a lifecycle — its engine thread, or its
    // route's executor between `goAway` and the landing — one call at a time, and nothing a
    // call runs (middleware, handlers, body readers) can reach the lifecycle itself.
    @exclusivity(unchecked) private(set) var phase = Phase.head
    @exclusivity(unchecked) private(set) var head: RequestHead?
    @exclusivity(unchecked) private(set) var context = RequestContext()
    @exclusivity(unchecked) private var match: RouteMatch?
    /// Whose `handle`/`completed` apply: the router's own until a route matched.
    @exclusivity(unchecked) private var stack: MiddlewareStack
    @exclusivity(unchecked) private var reader = BodyReader.none
    /// Microseconds from the request line to the response handed to the engine.
    @exclusivity(unchecked) private(set) var answeredAfter: Int?
    /// `completed` was called.
    @exclusivity(unchecked) private(set) var isCompleted = false
    /// The step `.elsewhere` announced, until `goAway` takes it.
    @exclusivity(unchecked) private var awayStep: (executor: any Executor, work: () -> Action)?
    /// The step `goAway` hands to the executor.
    @exclusivity(unchecked) private var takenStep: (executor: any Executor, work: () -> Action)?
    /// The action of the step that ran elsewhere, until `landed()` takes it.
    @exclusivity(unchecked) private var landing: Action?
    /// Between `goAway` and `landed()`/`finishAbandoned()`: the executor has the lifecycle.
    @exclusivity(unchecked) private(set) var isAway = false
    /// How the request ended while it was away (`completed` waits for the landing).
    @exclusivity(unchecked) private var abandoned: (status: Int, bytesSent: Int, outcome: CompletedExchange.Outcome)?

    init(router: Router, limits: Limits, target: String, remoteAddress: String, started: UInt64 = Clock.microseconds(),
         interim: InterimSink? = nil) {
        self.router = router
        self.limits = limits
        self.target = target
        self.remoteAddress = remoteAddress
        self.started = started
        context.started = started
        context.interimSink = interim
        stack = router.stack
    }

    // MARK: - Events

    /// The header section is complete; `folded` when a field was continued by obsolete line folding.
    /// - Parameter bodyFollows: whether a body follows, when the protocol says so (HTTP/2); nil
    ///   on HTTP/1.1, where the header fields say.
    func headerComplete(method: String, version: String, headers: HTTPHeaders, folded: Bool = false, bodyFollows: Bool? = nil) -> Action {
        var head = RequestHead(method: HTTPMethod(method), target: target, version: version, headers: headers, remoteAddress: remoteAddress,
                               bodyFollows: bodyFollows)
        if let error = FramingCheck.check(method: method, target: target, version: version, headers: headers, folded: folded) {
            self.head = head
            return refuse(error, stack: router.stack, ranHeads: false, now: true)
        }
        let match = router.resolve(&head)
        self.head = head
        self.match = match
        if let error = match.error {
            return refuse(error, stack: router.stack, ranHeads: false, now: head.hasBody)
        }
        stack = match.stack
        guard let executor = match.place.executor else { return headPhase() }
        return elsewhere(executor) { [self] in
            // A request that ends at its head makes one trip: its handler runs there too.
            let action = headPhase()
            guard case .proceed = action, self.head?.hasBody == false else { return action }
            return bodyComplete(leaving: false)
        }
    }

    /// The head phase of the route's middleware, then the body policy's reader.
    private func headPhase() -> Action {
        guard let head, let match else { return .close }
        if let index = stack.runHeads(head, context: &context) {
            return answerRefusal(index, now: head.hasBody)
        }
        do {
            reader = try BodyReader(policy: match.body, head: head, context: context, limits: limits,
                                    routeName: "\(head.method) \(match.route?.pattern.text ?? String(head.path))")
        } catch {
            context.refusal = error
            return answerRefusal(stack.middleware.count, now: head.hasBody)
        }
        phase = .body
        return .proceed
    }

    /// The head could not be parsed (a framing error, a limit): answered at once through the
    /// router's middleware, as any refusal before routing.
    func malformed(_ error: HTTPError) -> Action {
        refuse(error, stack: router.stack, ranHeads: true, now: true)
    }

    /// Body bytes arrived.
    func receive(_ chunk: UnsafeRawBufferPointer) -> Action {
        switch phase {
        case .body:
            do { try reader.receive(chunk) } catch {
                reader.discard()
                context.refusal = error
                // Answered at once; the engine drops the rest of the body and closes after it.
                guard case .respond(let response) = answer(stack.refusals[stack.middleware.count]) else { return .close }
                return respond(response)
            }
            return .proceed
        default:
            return .proceed  // answered already: the engine discards the rest
        }
    }

    /// Back-pressure, asked after each piece of the body: true when the body's consumer is
    /// behind; it calls `ready` (any thread) when the engine may read on.
    func bodyMustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        guard case .body = phase else { return false }
        return reader.mustWait(then: ready)
    }

    /// The body is complete (or there was none): the handler runs.
    func bodyComplete() -> Action { bodyComplete(leaving: true) }

    /// `leaving`: on the engine's thread, where a route that runs on an executor goes there.
    private func bodyComplete(leaving: Bool) -> Action {
        switch phase {
        case .refused(let response):
            return respond(response)
        case .body:
            break
        default:
            return .proceed
        }
        guard var head, var match else { return .close }
        if leaving, match.route != nil, let executor = match.place.executor {
            return elsewhere(executor) { [self] in bodyComplete(leaving: false) }
        }
        let request: Request
        do {
            request = try reader.finish(head: head)
        } catch {
            reader.discard()
            context.refusal = error
            return answerRefusal(stack.middleware.count, now: true)
        }
        if match.route == nil {
            // A POST whose `_method` field picks the route.
            match = router.finish(match, head: &head, body: (try? request.body()) ?? .empty)
            if let error = match.error {
                return refuse(error, stack: router.stack, ranHeads: true, now: true)
            }
            self.head = head
            self.match = match
            if leaving, let executor = match.place.executor {
                // `_method` picked a route that runs elsewhere: its head phase runs there too.
                return elsewhere(executor) { [self] in handlerPhase(request, head: head, match: match) }
            }
        }
        return handlerPhase(request, head: head, match: match)
    }

    /// The handler of the route `match` names (after the head phase of its middleware, when
    /// `_method` chose a route under other middleware than the POST's).
    private func handlerPhase(_ request: Request, head: RequestHead, match: RouteMatch) -> Action {
        if match.stack !== stack {
            stack = match.stack
            if let index = stack.runHeads(head, context: &context) { return answerRefusal(index, now: true) }
        }
        guard let route = match.route else { return .close }
        context.parameters = match.parameters
        context.route = route.pattern.text
        var routed = request
        routed.head = head
        phase = .answered
        do {
            return handle(try route.responder(routed, context))
        } catch {
            return respond(Self.lastResort(error, context: context))
        }
    }

    // MARK: - Work elsewhere

    /// The lifecycle on its way to and back from the executor: the executor's thread runs `work`
    /// and writes `landing`; the engine's thread reads it after the landing was posted.
    final class Away: @unchecked Sendable {
        let lifecycle: RequestLifecycle
        init(_ lifecycle: RequestLifecycle) { self.lifecycle = lifecycle }
    }

    private func elsewhere(_ executor: any Executor, _ work: @escaping () -> Action) -> Action {
        awayStep = (executor, work)
        return .elsewhere
    }

    /// Runs the step `.elsewhere` announced on the route's executor, then calls `landed` (on
    /// the executor's thread). A later reply's work is started there, and its response rendered
    /// there, with every middleware's `map`, before `landed` is called.
    func goAway(landed: @escaping @Sendable () -> Void) {
        guard let step = awayStep else { return }
        awayStep = nil
        takenStep = step
        isAway = true
        let away = Away(self)
        step.executor.execute { away.lifecycle.runAway(landed) }
    }

    /// On the executor: the step, then — for a later reply — its work, rendered there too.
    private func runAway(_ landed: @escaping @Sendable () -> Void) {
        guard let step = takenStep else { return }
        takenStep = nil
        let action = step.work()
        guard case .wait(let later) = action else {
            landing = action
            return landed()
        }
        let away = Away(self), executor = step.executor
        later.start { render in
            executor.execute {
                away.lifecycle.landing = .respond(away.lifecycle.resume(render))
                landed()
            }
        }
    }

    /// Back from the executor (on the engine's thread): what the step that ran there decided.
    func landed() -> Action {
        isAway = false
        defer { landing = nil }
        return landing ?? .close
    }

    /// Back from the executor after the connection ended (on the engine's thread): the request
    /// is completed as it ended, and what its answer held is let go.
    func finishAbandoned() {
        isAway = false
        if case .respond(let response) = landing { response.payload.release() }
        landing = nil
        let (status, bytes, outcome) = abandoned ?? (0, 0, .clientAbort)
        abandoned = nil
        completed(status: status, bytesSent: bytes, outcome: outcome)
    }

    /// A later reply's work is done: `render` makes its response (on the engine thread).
    func resume(_ render: () throws -> Response) -> Response {
        guard case .waiting(let later) = phase else { return Self.lastResort(HTTPError(.internalServerError), context: context) }
        phase = .answered
        let response: Response
        do { response = try later.complete(render) } catch { response = Self.lastResort(error, context: context) }
        answeredAfter = Int(Clock.microseconds() - started)
        return response
    }

    /// The request is over: what was sent, and how it ended. Tells every middleware, exactly
    /// once per request (checked in debug builds: the fuzzer's state-machine target relies on it).
    /// While the request is away, this waits for its landing (`finishAbandoned`).
    func completed(status: Int, bytesSent: Int, outcome: CompletedExchange.Outcome) {
        if isAway {
            abandoned = (status, bytesSent, outcome)
            return
        }
        assert(!isCompleted, "a request was completed twice")
        isCompleted = true
        // A step announced (`.elsewhere`) and never sent away — its connection or stream ended
        // first — is dropped: it holds the lifecycle.
        awayStep = nil
        reader.discard()
        stack.completed(CompletedExchange(head: head, target: target, remoteAddress: head?.remoteAddress ?? remoteAddress, context: context, status: status,
                                          bytesSent: bytesSent, microseconds: Int(Clock.microseconds() - started),
                                          responseMicroseconds: answeredAfter, outcome: outcome))
    }

    /// True while a later reply is awaited.
    var isWaiting: Bool { if case .waiting = phase { true } else { false } }

    /// True once the request was refused (its body, if any, is being dropped).
    var isRefused: Bool {
        switch phase {
        case .refused, .answered: true
        default: false
        }
    }

    // MARK: - Answers

    /// Answers `error` through `stack`'s middleware (running their head phase first when it
    /// has not run): at once, or — for a request without a body — on the next call, where a
    /// normal answer would come, so the connection stays open.
    private func refuse(_ error: HTTPError, stack: MiddlewareStack, ranHeads: Bool, now: Bool) -> Action {
        self.stack = stack
        if !ranHeads, let head, let index = stack.runHeads(head, context: &context) {
            return answerRefusal(index, now: now)
        }
        context.refusal = error
        return answerRefusal(stack.middleware.count, now: now)
    }

    private func answerRefusal(_ index: Int, now: Bool) -> Action {
        let action = answer(stack.refusals[index])
        guard !now, case .respond(let response) = action else { return action }
        phase = .refused(response)
        answeredAfter = nil
        return .proceed
    }

    /// The refusal responder's answer for the request as it is.
    private func answer(_ responder: Responder) -> Action {
        phase = .answered
        let request = Request(head: head ?? RequestHead(method: HTTPMethod("-"), target: target, remoteAddress: remoteAddress))
        do { return handle(try responder(request, context)) } catch {
            return respond(Self.lastResort(error, context: context))
        }
    }

    private func handle(_ reply: Reply) -> Action {
        switch reply.storage {
        case .now(let response): return respond(response)
        case .later(let later):
            phase = .waiting(later)
            return .wait(later)
        }
    }

    private func respond(_ response: Response) -> Action {
        phase = .answered
        answeredAfter = Int(Clock.microseconds() - started)
        return .respond(response)
    }

    /// The answer for an error no middleware turned into a response.
    static func lastResort(_ error: any Error, context: RequestContext) -> Response {
        ((error as? HTTPError) ?? HTTPError(.internalServerError, detail: "the server failed to handle this request (request id \(context.requestID))"))
            .response(requestID: context.requestID)
    }
}

enum Clock {
    /// Monotonic time in microseconds.
    static func microseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }
}
