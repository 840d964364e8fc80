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
package final class RequestLifecycle {
    /// What the engine does next.
    package enum Action {
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

    /// The server's limits and folders, as every request sees them (one object, shared).
    package final class Limits: Sendable {
        let maxBodySize: Int
        let maxUploadSize: Int64
        let maxParts: Int
        let temporaryDirectory: String

        package init(maxBodySize: Int, maxUploadSize: Int64, maxParts: Int, temporaryDirectory: String) {
            self.maxBodySize = maxBodySize
            self.maxUploadSize = maxUploadSize
            self.maxParts = maxParts
            self.temporaryDirectory = temporaryDirectory
        }
    }

    private let router: Router
    private let limits: Limits
    let target: String
    let remoteAddress: String
    let started: UInt64
    /// The clock `started` was read from: its connection's (`MachineClock`), read again for
    /// every duration of the request.
    let clock: MachineClock
    // The state below is unchecked for exclusive access (no runtime check per access: checked,
    // a hello costs 619 instructions, +2.6 %, in 6 checks; docs/benchmarks.md, issue 34 item 3,
    // which names the tests): one thread at a time calls a lifecycle — its engine thread, or
    // its route's executor between `goAway` and the landing — one call at a time, and nothing a
    // call runs (middleware, handlers, body readers) can reach the lifecycle itself.
    @exclusivity(unchecked) private(set) var phase = Phase.head
    @exclusivity(unchecked) private(set) var head: RequestHead?
    @exclusivity(unchecked) private(set) var context = RequestContext()
    /// The route that answers, once the router picked it, and its path parameters.
    @exclusivity(unchecked) private var route: Route?
    @exclusivity(unchecked) private var parameters = Parameters()
    /// A POST whose body's `_method` picks the route (`route` is nil until it did).
    @exclusivity(unchecked) private var choice: MethodChoice?
    /// Whose `handle`/`completed` apply: the router's own until a route matched.
    @exclusivity(unchecked) private var stack: MiddlewareStack
    @exclusivity(unchecked) private var reader = BodyReader.none
    /// Microseconds from the request line to the response handed to the engine.
    @exclusivity(unchecked) private(set) var answeredAfter: Int?
    /// `completed` was called.
    @exclusivity(unchecked) private(set) var isCompleted = false
    /// The step `.elsewhere` announced, until the executor `goAway` hands it to takes it.
    @exclusivity(unchecked) private var awayStep: AwayStep?
    /// The action of the step that ran elsewhere, until `landed()` takes it.
    @exclusivity(unchecked) private var landing: Action?
    /// Between `goAway` and `landed()`/`finishAbandoned()`: the executor has the lifecycle.
    @exclusivity(unchecked) private(set) var isAway = false
    /// How the request ended while it was away (`completed` waits for the landing).
    @exclusivity(unchecked) private var abandoned: (status: Int, bytesSent: Int, outcome: CompletedExchange.Outcome)?

    /// - Parameters:
    ///   - clock: the clock of the connection the request came on; its `now` when the request
    ///     line arrived is `started`.
    ///   - started: when the request line arrived, read from `clock` (now when nil).
    package init(
        router: Router, limits: Limits, target: String, remoteAddress: String, clock: MachineClock, started: UInt64? = nil,
        interim: InterimSink? = nil
    ) {
        self.router = router
        self.limits = limits
        self.target = target
        self.remoteAddress = remoteAddress
        let started = started ?? clock.now()
        self.started = started
        self.clock = clock
        context.started = started
        context.clock = clock
        context.interimSink = interim
        stack = router.stack
    }

    // MARK: - Events

    /// The header section is complete; `folded` when a field was continued by obsolete line folding.
    /// - Parameter bodyFollows: whether a body follows, when the protocol says so (HTTP/2); nil
    ///   on HTTP/1.1, where the header fields say.
    package func headerComplete(method: String, version: String, headers: HTTPHeaders, folded: Bool = false, bodyFollows: Bool? = nil) -> Action {
        headerComplete(
            RequestHead(
                method: HTTPMethod(method), target: target, version: version, headers: headers, remoteAddress: remoteAddress,
                bodyFollows: bodyFollows), folded: folded)
    }

    /// The header section is complete: `head` as the parser made it.
    func headerComplete(_ head: RequestHead, folded: Bool = false) -> Action {
        var head = head
        if let error = FramingCheck.check(
            method: head.originalMethod.rawValue, target: target, version: head.version, headers: head.headers,
            folded: folded)
        {
            self.head = head
            return refuse(error, stack: router.stack, ranHeads: false, now: true, wins: true)
        }
        let resolution = router.resolve(&head)
        self.head = head
        let runsOnLoop: Bool
        switch resolution {
        case .route(let route, let parameters):
            self.route = route
            self.parameters = parameters
            stack = route.stack
            runsOnLoop = route.runsOnLoop
        case .choice(let choice):
            self.choice = choice
            stack = choice.stack
            runsOnLoop = choice.runsOnLoop
        case .refused(let error):
            return refuse(error, stack: router.stack, ranHeads: false, now: head.hasBody)
        }
        guard !runsOnLoop else { return headPhase() }
        // A request that ends at its head makes one trip: its handler runs there too.
        return elsewhere(.head)
    }

    /// How the body is read, and where the work runs: the route's, or while `_method` may still
    /// choose, the POST route's.
    private var bodyPolicy: BodyPolicy { route?.body ?? choice?.body ?? .noBody }
    private var place: WorkPlace { route?.place ?? choice?.place ?? .loop }

    /// The reader `policy` makes for the request. (`context` is passed in place: a stored
    /// property passed by value would be copied first.)
    private static func reader(_ policy: BodyPolicy, head: RequestHead, context: inout RequestContext, limits: Limits, route: Route?) throws
        -> BodyReader
    {
        try BodyReader.make(
            policy: policy, head: head, context: context, limits: limits,
            routeName: "\(head.method) \(route?.pattern.text ?? String(head.path))")
    }

    /// The head phase of the route's middleware, then the body policy's reader.
    private func headPhase() -> Action {
        guard let head else { return .close }
        if let index = stack.runHeads(head, context: &context) {
            return answerRefusal(index, now: head.hasBody)
        }
        do {
            reader = try Self.reader(bodyPolicy, head: head, context: &context, limits: limits, route: route)
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
        if head == nil { router.stack.runUnparsed(context: &context) }
        return refuse(error, stack: router.stack, ranHeads: true, now: true)
    }

    /// Body bytes arrived.
    package func receive(_ chunk: UnsafeRawBufferPointer) -> Action {
        switch phase {
        case .body:
            do { try reader.receive(chunk) } catch {
                reader.discard()
                context.refusal = error
                // Answered at once; the engine drops the rest of the body and closes after it.
                guard case .respond(let response) = answerRefusal(through: stack.middleware.count) else { return .close }
                return respond(response)
            }
            return .proceed
        default:
            return .proceed  // answered already: the engine discards the rest
        }
    }

    /// The server gives up on a body that stopped arriving (too slow, or nothing for too
    /// long): the body's reader is discarded and `error` (a `408`) answered at once through the
    /// route's middleware, as a refusal mid-body is; the engine closes after it. `.close` when
    /// the request is past its body (it is answered otherwise).
    func bodyTimedOut(_ error: HTTPError) -> Action {
        guard case .body = phase else { return .close }
        reader.discard()
        context.refusal = error
        guard case .respond(let response) = answerRefusal(through: stack.middleware.count) else { return .close }
        return respond(response)
    }

    /// Back-pressure, asked after each piece of the body: true when the body's consumer is
    /// behind; it calls `ready` (any thread) when the engine may read on.
    func bodyMustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        guard case .body = phase else { return false }
        return reader.mustWait(then: ready)
    }

    /// The body is complete (or there was none): the handler runs.
    package func bodyComplete() -> Action { bodyComplete(leaving: true) }

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
        guard var head else { return .close }
        if leaving, let route, !route.runsOnLoop {
            return elsewhere(.end)
        }
        let request: Request
        do {
            request = try reader.finish(head: head)
        } catch {
            reader.discard()
            context.refusal = error
            return answerRefusal(stack.middleware.count, now: true)
        }
        if route == nil, let choice {
            // A POST whose `_method` field picks the route.
            switch router.finish(choice, head: &head, body: (try? request.body()) ?? .empty) {
            case .route(let route, let parameters):
                self.route = route
                self.parameters = parameters
                self.choice = nil
                self.head = head
                if leaving, !route.runsOnLoop {
                    // `_method` picked a route that runs elsewhere: its head phase runs there too.
                    return elsewhere(.handler(request))
                }
            case .refused(let error):
                return refuse(error, stack: router.stack, ranHeads: true, now: true)
            case .choice:
                return .close
            }
        }
        return handlerPhase(request)
    }

    /// `route`'s handler inside its middleware; `context` passed in place, not copied.
    private static func respond(_ route: Route, _ request: Request, _ context: inout RequestContext) throws -> Reply {
        try route.stack.respond(request, context, route: route)
    }

    /// The handler of the route (after the head phase of its middleware, when `_method` chose a
    /// route under other middleware than the POST's).
    private func handlerPhase(_ request: Request) -> Action {
        guard let route, let head else { return .close }
        if route.stack !== stack {
            stack = route.stack
            if let index = stack.runHeads(head, context: &context) { return answerRefusal(index, now: true) }
        }
        context.parameters = parameters
        context.matchedRoute = route
        var routed = request
        routed.head = head
        phase = .answered
        do {
            return handle(try Self.respond(route, routed, &context))
        } catch {
            return respond(Self.lastResort(error, context: context))
        }
    }

    // MARK: - Work elsewhere

    /// The lifecycle on its way to and back from the executor: the executor's thread runs `work`
    /// and writes `landing`; the engine's thread reads it after the landing was posted.
    package final class Away: @unchecked Sendable {
        let lifecycle: RequestLifecycle
        init(_ lifecycle: RequestLifecycle) { self.lifecycle = lifecycle }
    }

    /// A step of the route's work that runs on its executor.
    enum AwayStep {
        /// The head phase and body reader; for a request without a body, its end too.
        case head
        /// The end of the body: the reader finished, the handler.
        case end
        /// The handler of the route `_method` picked (after its head phase).
        case handler(Request)
    }

    private func elsewhere(_ step: AwayStep) -> Action {
        awayStep = step
        return .elsewhere
    }

    /// Runs the step `.elsewhere` announced on the route's executor, then calls `landed` (on
    /// the executor's thread). A later reply's work is started there, and its response rendered
    /// there, with every middleware's `map`, before `landed` is called.
    package func goAway(landed: @escaping @Sendable () -> Void) {
        guard awayStep != nil, !isAway, let executor = place.executor else { return }
        isAway = true
        let away = Away(self)
        executor.execute { away.lifecycle.runAway(on: executor, landed) }
    }

    /// On the executor: the step, then — for a later reply — its work, rendered there too.
    private func runAway(on executor: any Executor, _ landed: @escaping @Sendable () -> Void) {
        guard let step = awayStep else { return }
        awayStep = nil
        let action: Action
        switch step {
        case .head:
            let headAction = headPhase()
            if case .proceed = headAction, head?.hasBody == false {
                action = bodyComplete(leaving: false)
            } else {
                action = headAction
            }
        case .end: action = bodyComplete(leaving: false)
        case .handler(let request): action = handlerPhase(request)
        }
        guard case .wait(let later) = action else {
            landing = action
            return landed()
        }
        let away = Away(self)
        later.start { render in
            executor.execute {
                away.lifecycle.landing = .respond(away.lifecycle.resume(render))
                landed()
            }
        }
    }

    /// Back from the executor (on the engine's thread): what the step that ran there decided.
    package func landed() -> Action {
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
    package func resume(_ render: () throws -> Response) -> Response {
        guard case .waiting(let later) = phase else { return Self.lastResort(HTTPError(.internalServerError), context: context) }
        phase = .answered
        let response: Response
        do { response = try later.complete(render) } catch { response = Self.lastResort(error, context: context) }
        answeredAfter = clock.elapsed(since: started)
        return response
    }

    /// The request is over: what was sent, and how it ended. Tells every middleware, exactly
    /// once per request (checked in debug builds: the fuzzer's state-machine target relies on it).
    /// While the request is away, this waits for its landing (`finishAbandoned`).
    package func completed(status: Int, bytesSent: Int, outcome: CompletedExchange.Outcome) {
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
        // The head and the context move into the exchange: nothing reads them here any more.
        var head: RequestHead?
        swap(&head, &self.head)
        var context = RequestContext()
        swap(&context, &self.context)
        let remote = head?.remoteAddress ?? remoteAddress
        stack.completed(
            CompletedExchange(
                head: consume head, target: target, remoteAddress: remote, context: consume context, status: status,
                bytesSent: bytesSent, microseconds: clock.elapsed(since: started),
                responseMicroseconds: answeredAfter, outcome: outcome))
    }

    /// True while a later reply is awaited.
    var isWaiting: Bool { if case .waiting = phase { true } else { false } }

    /// True once the request was refused (its body, if any, is being dropped).
    package var isRefused: Bool {
        switch phase {
        case .refused, .answered: true
        default: false
        }
    }

    // MARK: - Answers

    /// Answers `error` through `stack`'s middleware (running their head phase first when it
    /// has not run): at once, or — for a request without a body — on the next call, where a
    /// normal answer would come, so the connection stays open.
    /// Refuses the request with `error` through `stack`, whose head phases run first (request id,
    /// log) unless they ran already. A head phase that refuses in turn (a cross-site request, a
    /// Host not served) answers instead — but not a framing error (`wins`): that one is answered,
    /// through the middleware whose heads ran, and closes the connection, whatever the heads said;
    /// otherwise the connection would stay open on a message whose length it could not tell.
    private func refuse(_ error: HTTPError, stack: MiddlewareStack, ranHeads: Bool, now: Bool, wins: Bool = false) -> Action {
        self.stack = stack
        if !ranHeads, let head, let index = stack.runHeads(head, context: &context) {
            if wins { context.refusal = error }
            return answerRefusal(index, now: now)
        }
        context.refusal = error
        return answerRefusal(stack.middleware.count, now: now)
    }

    private func answerRefusal(_ index: Int, now: Bool) -> Action {
        let action = answerRefusal(through: index)
        guard !now, case .respond(let response) = action else { return action }
        phase = .refused(response)
        answeredAfter = nil
        return .proceed
    }

    /// The refusal's answer through the `handle` of the first `count` middleware of the stack,
    /// for the request as it is.
    private func answerRefusal(through count: Int) -> Action {
        phase = .answered
        let request = Request(head: head ?? RequestHead(method: HTTPMethod("-"), target: target, remoteAddress: remoteAddress))
        do { return handle(try Self.refuse(stack, request, &context, through: count)) } catch {
            return respond(Self.lastResort(error, context: context))
        }
    }

    private static func refuse(_ stack: MiddlewareStack, _ request: Request, _ context: inout RequestContext, through count: Int) throws -> Reply {
        try stack.refuse(request, context, through: count)
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
        answeredAfter = clock.elapsed(since: started)
        return .respond(response)
    }

    /// The answer for an error no middleware turned into a response.
    static func lastResort(_ error: any Error, context: RequestContext) -> Response {
        ((error as? HTTPError)
            ?? HTTPError(.internalServerError, detail: "the server failed to handle this request (request id \(context.requestID))"))
            .response(requestID: context.requestID)
    }
}
