import Glibc
import Synchronization

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
/// The request's state and the work on it are a value, `Core`, made only of `Sendable` parts.
/// A route that runs on an executor (`WorkPlace`) has its work done there: the engine gets
/// `.elsewhere` and calls `goAway(landed:)`, which moves the core out of the lifecycle onto a
/// `Trip`; the engine reads nothing more of the request meanwhile. On the executor's thread the
/// trip's job takes the core, runs the step, leaves the core and the step's action on the trip
/// and calls `landed`; the engine then takes the action from `landed()` on its own thread, which
/// moves the core back. The lifecycle itself never leaves its engine's thread, and while its
/// core is away it has none: no other thread can reach what the executor changes. A connection
/// that ends meanwhile calls `completed` as always, which the trip keeps until the landing
/// (`Trip.finishAbandoned`).
package final class RequestLifecycle {
    /// What the engine does next.
    package enum Action: Sendable {
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

    enum Phase: Sendable {
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

    // The two fields below are unchecked for exclusive access (no runtime check per access:
    // docs/benchmarks.md, issue 34 item 3, which names the tests): one thread calls a
    // lifecycle — its engine thread — one call at a time, and nothing a call runs (middleware,
    // handlers, body readers) can reach the lifecycle itself. The executor never does: it gets
    // the core, not the lifecycle.
    /// The request's state; nil while it is away on the route's executor.
    @exclusivity(unchecked) private var core: Core?
    /// The trip the core is on, from `goAway` until `landed()` (or for good, when the request
    /// ended meanwhile: the landing finishes it).
    @exclusivity(unchecked) private var trip: Trip?

    /// - Parameters:
    ///   - clock: the clock of the connection the request came on; its `now` when the request
    ///     line arrived is `started`.
    ///   - started: when the request line arrived, read from `clock` (now when nil).
    package init(
        router: Router, limits: Limits, target: String, remoteAddress: String, clock: MachineClock, started: UInt64? = nil,
        interim: InterimSink? = nil
    ) {
        core = Core(
            router: router, limits: limits, target: target, remoteAddress: remoteAddress, clock: clock,
            started: started ?? clock.now())
        core?.prepareContext(interim: interim)
    }

    // MARK: - Events (on the engine's thread)

    /// The header section is complete; `folded` when a field was continued by obsolete line folding.
    /// - Parameter bodyFollows: whether a body follows, when the protocol says so (HTTP/2); nil
    ///   on HTTP/1.1, where the header fields say.
    package func headerComplete(method: String, version: String, headers: HTTPHeaders, folded: Bool = false, bodyFollows: Bool? = nil) -> Action {
        core?.headerComplete(method: method, version: version, headers: headers, folded: folded, bodyFollows: bodyFollows) ?? .close
    }

    /// The header section is complete: `head` as the parser made it.
    func headerComplete(_ head: RequestHead, folded: Bool = false) -> Action {
        core?.headerComplete(head, folded: folded) ?? .close
    }

    /// The head could not be parsed (a framing error, a limit): answered at once through the
    /// router's middleware, as any refusal before routing.
    func malformed(_ error: HTTPError) -> Action { core?.malformed(error) ?? .close }

    /// Body bytes arrived.
    package func receive(_ chunk: UnsafeRawBufferPointer) -> Action { core?.receive(chunk) ?? .proceed }

    /// The server gives up on a body that stopped arriving (too slow, or nothing for too
    /// long): the body's reader is discarded and `error` (a `408`) answered at once through the
    /// route's middleware, as a refusal mid-body is; the engine closes after it. `.close` when
    /// the request is past its body (it is answered otherwise).
    func bodyTimedOut(_ error: HTTPError) -> Action { core?.bodyTimedOut(error) ?? .close }

    /// Back-pressure, asked after each piece of the body: true when the body's consumer is
    /// behind; it calls `ready` (any thread) when the engine may read on.
    func bodyMustWait(then ready: @escaping @Sendable () -> Void) -> Bool { core?.bodyMustWait(then: ready) ?? false }

    /// The body is complete (or there was none): the handler runs.
    package func bodyComplete() -> Action { core?.bodyComplete(leaving: true) ?? .proceed }

    /// A later reply's work is done: `render` makes its response (on the engine thread).
    package func resume(_ render: () throws -> Response) -> Response {
        core?.resume(render) ?? Self.lastResort(HTTPError(.internalServerError), context: RequestContext())
    }

    /// The request is over: what was sent, and how it ended. Tells every middleware, exactly
    /// once per request (checked in debug builds: the fuzzer's state-machine target relies on it).
    /// While the request is away, its trip keeps how it ended until the landing (`Trip.finishAbandoned`).
    package func completed(status: Int, bytesSent: Int, outcome: CompletedExchange.Outcome) {
        if let trip {
            trip.end((status, bytesSent, outcome))
            return
        }
        core?.completed(status: status, bytesSent: bytesSent, outcome: outcome)
    }

    /// What the header section said; nil before it came, or while the request is away.
    var head: RequestHead? { core?.head }

    /// True while a later reply is awaited.
    var isWaiting: Bool { core?.isWaiting ?? false }

    /// True once the request was refused (its body, if any, is being dropped).
    package var isRefused: Bool { core?.isRefused ?? false }

    // MARK: - Work elsewhere

    /// Moves the core to the route's executor, where the step `.elsewhere` announced runs, then
    /// calls `landed` with the trip (on the executor's thread). A later reply's work is started
    /// there, and its response rendered there, with every middleware's `map`, before `landed`
    /// is called.
    package func goAway(landed: @escaping @Sendable (Trip) -> Void) {
        guard trip == nil, core?.awayStep != nil, let executor = core?.place.executor, let core = core.take() else { return }
        // `consume`: each copy of a core retains and releases every part of it.
        let trip = Trip(consume core)
        self.trip = trip
        executor.execute { trip.run(on: executor, landed) }
    }

    /// Whether `trip` is the one this lifecycle's core is on.
    func isAway(on trip: Trip) -> Bool { self.trip === trip }

    /// Back from the executor (on the engine's thread): the core moves back; what the step that
    /// ran there decided.
    package func landed() -> Action {
        guard case let (core, action)? = trip?.takeLanding() else { return .close }
        trip = nil
        self.core = consume core
        return action
    }

    /// The answer for an error no middleware turned into a response.
    static func lastResort(_ error: any Error, context: RequestContext) -> Response {
        ((error as? HTTPError)
            ?? HTTPError(.internalServerError, detail: "the server failed to handle this request (request id \(context.requestID))"))
            .response(requestID: context.requestID)
    }

    /// A step of the route's work that runs on its executor.
    enum AwayStep: Sendable {
        /// The head phase and body reader; for a request without a body, its end too.
        case head
        /// The end of the body: the reader finished, the handler.
        case end
        /// The handler of the route `_method` picked (after its head phase).
        case handler(Request)
    }

    /// One trip of a request's core to its route's executor and back, and what the engine
    /// matches the landing by: the core waits here for the executor, which leaves it and the
    /// step's action here again, and the engine takes them (`landed()`); if the request ended
    /// meanwhile, how it ended waits here for the landing, which completes it
    /// (`finishAbandoned`). Only values cross: the lock hands them over.
    package final class Trip: Sendable {
        typealias Ending = (status: Int, bytesSent: Int, outcome: CompletedExchange.Outcome)
        private struct State: Sendable {
            /// The core, moved in and out (never copied: each copy retains and releases every
            /// part): here on its way to the executor, while a later reply's work runs, and once
            /// it landed.
            var core: Core?
            /// The step's action, once it landed.
            var action: Action?
            var ending: Ending?
        }
        private let state: Mutex<State>

        /// A trip for `core`, which it holds until the executor takes it.
        fileprivate init(_ core: consuming Core) { state = Mutex(State(core: core)) }

        /// On the executor: the step `.elsewhere` announced, then — for a later reply — its
        /// work, rendered there too; the core and the action land here, and `landed` says so.
        fileprivate func run(on executor: any Executor, _ landed: @escaping @Sendable (Trip) -> Void) {
            guard var core = state.withLock({ $0.core.take() }) else { return }
            let action = core.runAway()
            guard case .wait(let later) = action else { return land(consume core, action, landed) }
            // The core waits here while the later reply's work runs.
            var parked = Optional(consume core)
            state.withLock { $0.core = parked.take() }
            later.start { [self] render in
                executor.execute { [self] in
                    guard var core = state.withLock({ $0.core.take() }) else { return }
                    let response = core.resume(render)
                    land(consume core, .respond(response), landed)
                }
            }
        }

        private func land(_ core: consuming Core, _ action: consuming Action, _ landed: @Sendable (Trip) -> Void) {
            var landing = Optional((consume core, consume action))
            state.withLock { state in
                guard case let (core, action)? = landing.take() else { return }
                state.core = consume core
                state.action = consume action
            }
            landed(self)
        }

        /// The core and the step's action, once the step landed.
        fileprivate func takeLanding() -> (Core, Action)? {
            state.withLock { state in
                guard let action = state.action.take(), let core = state.core.take() else { return nil }
                return (consume core, consume action)
            }
        }

        /// The request ended while away (on the engine's thread).
        fileprivate func end(_ ending: Ending) { state.withLock { $0.ending = ending } }

        /// Back from the executor after the connection ended (on the engine's thread): the
        /// request is completed as it ended, and what its answer held is let go.
        package func finishAbandoned() {
            guard case (var core, let action, let ending)? = takeAll() else { return }
            if case .respond(let response) = action { response.payload.release() }
            let (status, bytes, outcome) = ending ?? (0, 0, .clientAbort)
            core.completed(status: status, bytesSent: bytes, outcome: outcome)
        }

        private func takeAll() -> (Core, Action, Ending?)? {
            state.withLock { state in
                guard let action = state.action.take(), let core = state.core.take() else { return nil }
                return (consume core, consume action, state.ending.take())
            }
        }
    }
}

extension RequestLifecycle {
    /// The request's state and the work on it, on one thread at a time: the lifecycle's engine
    /// thread, or the route's executor while a step runs there (moved there and back, never
    /// shared). `Sendable` by construction: every part is.
    struct Core: Sendable {
        /// Where the request goes, and within which limits.
        let router: Router, limits: Limits
        /// The request-target as it came, and who sent it.
        let target: String, remoteAddress: String
        /// When the request line arrived, and the clock that was read from: its connection's
        /// (`MachineClock`), read again for every duration of the request.
        let started: UInt64, clock: MachineClock
        private(set) var phase = Phase.head
        private(set) var head: RequestHead?
        private(set) var context = RequestContext()
        /// The route that answers, once the router picked it, and its path parameters.
        private var route: Route?
        private var parameters = Parameters()
        /// A POST whose body's `_method` picks the route (`route` is nil until it did).
        private var choice: MethodChoice?
        /// Whose `handle`/`completed` apply: the router's own until a route matched.
        private var stack: MiddlewareStack
        private var reader = BodyReader.none
        /// Microseconds from the request line to the response handed to the engine.
        private(set) var answeredAfter: Int?
        /// `completed` was called.
        private(set) var isCompleted = false
        /// The step `.elsewhere` announced, until the executor `goAway` hands it to takes it.
        private(set) var awayStep: AwayStep?

        /// Sets no part of a field (the context's are set in place: `prepareContext`) and is not
        /// inlined: either makes the optimizer copy the new core and destroy the original (a
        /// retain and a release of each of its parts, ~1,000 instructions a request).
        @inline(never)
        init(
            router: Router, limits: Limits, target: String, remoteAddress: String, clock: MachineClock, started: UInt64
        ) {
            self.router = router
            self.limits = limits
            self.target = target
            self.remoteAddress = remoteAddress
            self.started = started
            self.clock = clock
            stack = router.stack
        }

        /// The context's start, clock and interim responses, set where the core is stored.
        mutating func prepareContext(interim: InterimSink?) {
            context.started = started
            context.clock = clock
            context.interimSink = interim?.ticket
        }

        // MARK: - Events

        /// The header section is complete, as the lifecycle's `headerComplete(method:…)` says.
        mutating func headerComplete(method: String, version: String, headers: HTTPHeaders, folded: Bool, bodyFollows: Bool?) -> Action {
            headerComplete(
                RequestHead(
                    method: HTTPMethod(method), target: target, version: version, headers: headers, remoteAddress: remoteAddress,
                    bodyFollows: bodyFollows), folded: folded)
        }

        /// The header section is complete: `head` as the parser made it.
        mutating func headerComplete(_ head: RequestHead, folded: Bool = false) -> Action {
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
                // Known from here: a refusal of its middleware's head phase is the route's too
                // (metrics, logs). A `_method` choice is known once its handler is chosen.
                context.matchedRoute = route
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
        private mutating func headPhase() -> Action {
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
        mutating func malformed(_ error: HTTPError) -> Action {
            if head == nil { router.stack.runUnparsed(context: &context) }
            return refuse(error, stack: router.stack, ranHeads: true, now: true)
        }

        /// Body bytes arrived.
        mutating func receive(_ chunk: UnsafeRawBufferPointer) -> Action {
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
        mutating func bodyTimedOut(_ error: HTTPError) -> Action {
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

        var isWaiting: Bool { if case .waiting = phase { true } else { false } }

        var isRefused: Bool {
            switch phase {
            case .refused, .answered: true
            default: false
            }
        }

        /// The body is complete (or there was none): the handler runs. `leaving`: on the engine's
        /// thread, where a route that runs on an executor goes there.
        mutating func bodyComplete(leaving: Bool) -> Action {
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
        private mutating func handlerPhase(_ request: Request) -> Action {
            guard let route, let head else { return .close }
            // Set by routing, but for a `_method` choice: found here, before its middleware (whose
            // refusals are counted under it).
            if context.matchedRoute !== route { context.matchedRoute = route }
            if route.stack !== stack {
                stack = route.stack
                if let index = stack.runHeads(head, context: &context) { return answerRefusal(index, now: true) }
            }
            context.parameters = parameters
            var routed = request
            routed.head = head
            phase = .answered
            do {
                return handle(try Self.respond(route, routed, &context))
            } catch {
                return respond(RequestLifecycle.lastResort(error, context: context))
            }
        }

        // MARK: - Work elsewhere

        private mutating func elsewhere(_ step: AwayStep) -> Action {
            awayStep = step
            return .elsewhere
        }

        /// The route's executor, when the route (or the POST route `_method` may still choose) runs on one.
        var place: WorkPlace { route?.place ?? choice?.place ?? .loop }

        /// On the executor: the step `.elsewhere` announced (`Trip.run`).
        mutating func runAway() -> Action {
            guard let step = awayStep else { return .close }
            awayStep = nil
            switch step {
            case .head:
                let action = headPhase()
                guard case .proceed = action, head?.hasBody == false else { return action }
                return bodyComplete(leaving: false)
            case .end: return bodyComplete(leaving: false)
            case .handler(let request): return handlerPhase(request)
            }
        }

        /// A later reply's work is done: `render` makes its response.
        mutating func resume(_ render: () throws -> Response) -> Response {
            guard case .waiting(let later) = phase else { return RequestLifecycle.lastResort(HTTPError(.internalServerError), context: context) }
            phase = .answered
            let response: Response
            do { response = try later.complete(render) } catch { response = RequestLifecycle.lastResort(error, context: context) }
            answeredAfter = clock.elapsed(since: started)
            return response
        }

        /// The request is over: what was sent, and how it ended. Tells every middleware, exactly
        /// once per request (checked in debug builds: the fuzzer's state-machine target relies on it).
        mutating func completed(status: Int, bytesSent: Int, outcome: CompletedExchange.Outcome) {
            assert(!isCompleted, "a request was completed twice")
            isCompleted = true
            // A step announced (`.elsewhere`) and never sent away — its connection or stream ended
            // first — is dropped.
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

        // MARK: - Answers

        /// Answers `error` through `stack`'s middleware (running their head phase first when it
        /// has not run): at once, or — for a request without a body — on the next call, where a
        /// normal answer would come, so the connection stays open.
        /// Refuses the request with `error` through `stack`, whose head phases run first (request id,
        /// log) unless they ran already. A head phase that refuses in turn (a cross-site request, a
        /// Host not served) answers instead — but not a framing error (`wins`): that one is answered,
        /// through the middleware whose heads ran, and closes the connection, whatever the heads said;
        /// otherwise the connection would stay open on a message whose length it could not tell.
        private mutating func refuse(_ error: HTTPError, stack: MiddlewareStack, ranHeads: Bool, now: Bool, wins: Bool = false) -> Action {
            self.stack = stack
            if !ranHeads, let head, let index = stack.runHeads(head, context: &context) {
                if wins { context.refusal = error }
                return answerRefusal(index, now: now)
            }
            context.refusal = error
            return answerRefusal(stack.middleware.count, now: now)
        }

        private mutating func answerRefusal(_ index: Int, now: Bool) -> Action {
            let action = answerRefusal(through: index)
            guard !now, case .respond(let response) = action else { return action }
            phase = .refused(response)
            answeredAfter = nil
            return .proceed
        }

        /// The refusal's answer through the `handle` of the first `count` middleware of the stack,
        /// for the request as it is.
        private mutating func answerRefusal(through count: Int) -> Action {
            phase = .answered
            let request = Request(head: head ?? RequestHead(method: HTTPMethod("-"), target: target, remoteAddress: remoteAddress))
            do { return handle(try Self.refuse(stack, request, &context, through: count)) } catch {
                return respond(RequestLifecycle.lastResort(error, context: context))
            }
        }

        private static func refuse(_ stack: MiddlewareStack, _ request: Request, _ context: inout RequestContext, through count: Int) throws -> Reply
        {
            try stack.refuse(request, context, through: count)
        }

        private mutating func handle(_ reply: Reply) -> Action {
            switch reply.storage {
            case .now(let response): return respond(response)
            case .later(let later):
                phase = .waiting(later)
                return .wait(later)
            }
        }

        private mutating func respond(_ response: Response) -> Action {
            phase = .answered
            answeredAfter = clock.elapsed(since: started)
            return .respond(response)
        }
    }
}
