/// The rest of a request's way, as a middleware's `handle` sees it: the middleware inside this
/// one, then the route's handler (or, for a request refused before its handler, the answer that
/// renders the refusal). Call it as a function: `try next(request, context)`.
///
/// The chain is an index into the route's middleware, not a closure per layer: calling it runs
/// the next middleware's `handle` with a responder one step further in. A responder is for the
/// call it is passed to: call it there (or not at all), don't keep it for later — it refers to
/// the route and its middleware without retaining them (the router holds them; the call that
/// made the responder keeps them alive while it runs), which saves a retain and a release of
/// each per middleware (24 calls and 777 instructions, 3.3 %, of a hello: docs/benchmarks.md,
/// issue 34 item 3, which names the tests).
public struct Responder: @unchecked Sendable {
    /// What answers once every middleware has run.
    enum Endpoint {
        /// The route's handler.
        case route(Unmanaged<Route>)
        /// The refusal in `context.refusal`, rendered (an `HTTPError`) or thrown on.
        case refusal
        case function(@Sendable (Request, RequestContext) throws -> Reply)
    }

    let stack: Unmanaged<MiddlewareStack>
    /// The middleware that runs next, and the one past the last that runs.
    let index: Int
    let end: Int
    let endpoint: Endpoint

    init(stack: Unmanaged<MiddlewareStack>, index: Int, end: Int, endpoint: Endpoint) {
        self.stack = stack
        self.index = index
        self.end = end
        self.endpoint = endpoint
    }

    /// A responder that answers with `respond`, with no middleware before it (to run a
    /// middleware by itself in a test).
    public init(_ respond: @escaping @Sendable (Request, RequestContext) throws -> Reply) {
        self.init(stack: .passUnretained(MiddlewareStack.none), index: 0, end: 0, endpoint: .function(respond))
    }

    /// Passes the request on: to the next middleware's `handle`, or to what answers.
    public func callAsFunction(_ request: Request, _ context: RequestContext) throws -> Reply {
        if index < end {
            return try stack._withUnsafeGuaranteedRef {
                try $0.layers[index].handle(request, context: context, next: Responder(stack: stack, index: index + 1, end: end, endpoint: endpoint))
            }
        }
        switch endpoint {
        case .route(let route): return try route._withUnsafeGuaranteedRef { try $0.handler(request, context) }
        case .refusal:
            let refusal = context.refusal ?? HTTPError(.internalServerError)
            guard let error = refusal as? HTTPError else { throw refusal }
            return .now(error.response(requestID: context.requestID))
        case .function(let respond): return try respond(request, context)
        }
    }
}

/// Code that runs around a route's handler, in up to three places of a request's life.
///
/// - `head`: the header section is complete and the route is known; no body byte has been
///   accepted. Throwing refuses the request at once — nothing of the body is read or stored;
///   an `HTTPError` is rendered as its problem response, which passes through the `handle` of
///   the middleware outside this one. Set context values here (an authenticated user, a
///   rate-limit key).
/// - `handle`: around the handler, once the body is read. The reply may be `later`: use
///   `reply.map` / `reply.recover` to change it, so the change applies whenever it is known.
/// - `completed`: the request is over — answered, refused before routing, or aborted — with
///   what was sent (logs, metrics).
/// - `unparsed`: instead of `head`, when there is no head to give — bytes that are not an HTTP
///   request (framing, limits, plain HTTP on the HTTPS port). Set what every answer carries
///   (a request id); the refusal is then answered through `handle` as any other.
///
/// ```swift
/// struct Stamp: Middleware {
///     func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
///         try next(request, context).map { response in
///             var response = response
///             response.headers.set("X-Handled", "yes")
///             return response
///         }
///     }
/// }
/// ```
public protocol Middleware: Sendable {
    func head(_ head: RequestHead, context: inout RequestContext) throws
    func unparsed(context: inout RequestContext)
    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply
    func completed(_ exchange: CompletedExchange)
}

extension Middleware {
    public func head(_ head: RequestHead, context: inout RequestContext) throws {}
    public func unparsed(context: inout RequestContext) {}
    public func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        try next(request, context)
    }
    public func completed(_ exchange: CompletedExchange) {}
}

/// One finished request as the engine saw it: for access logs and metrics.
public struct CompletedExchange: Sendable {
    /// How a request ended.
    public enum Outcome: String, Sendable {
        /// The response was sent.
        case sent = ""
        case timeout, shutdown, readError = "read-error", clientAbort = "client-abort", error
    }

    /// The request line and headers; nil when the engine refused it before they were read
    /// (a request line or header section that cannot be parsed, or is too long).
    public var head: RequestHead?
    /// The raw request-target, known even when `head` is not.
    public var target: String
    public var remoteAddress: String
    public var context: RequestContext
    /// The status sent; 0 when the engine answered by itself or nothing was sent.
    public var status: Int
    /// Body bytes sent.
    public var bytesSent: Int
    /// From the request line to the end of the exchange.
    public var microseconds: Int
    /// From the request line to the response being handed to the engine; nil when none was.
    public var responseMicroseconds: Int?
    public var outcome: Outcome
}

/// The middleware that apply to a group of routes, gathered once when routes are registered.
/// Routes registered under the same middleware share one stack.
final class MiddlewareStack: Sendable {
    let middleware: [any Middleware]
    /// The same, each behind a class of its own type: a call through it reaches the middleware
    /// in place, where a call on `any Middleware` taken from the array copies the value first
    /// (with a retain of each of its fields).
    let layers: [Layer]

    /// No middleware.
    static let none = MiddlewareStack([])

    init(_ middleware: [any Middleware]) {
        self.middleware = middleware
        layers = middleware.map { Self.layer($0) }
    }

    private static func layer<M: Middleware>(_ middleware: M) -> Layer { TypedLayer(middleware) }

    /// `route`'s handler inside every middleware of the stack.
    func respond(_ request: Request, _ context: RequestContext, route: Route) throws -> Reply {
        try withExtendedLifetime((self, route)) {
            try Responder(stack: .passUnretained(self), index: 0, end: middleware.count, endpoint: .route(.passUnretained(route)))(request, context)
        }
    }

    /// The answer for `context.refusal` through the `handle` of the first `count` middleware —
    /// those outside the one that refused in its head phase (all of them when something refused
    /// before the handler ran). An `HTTPError` is rendered, so every middleware outside sees the
    /// response; any other error is thrown on.
    func refuse(_ request: Request, _ context: RequestContext, through count: Int) throws -> Reply {
        try withExtendedLifetime(self) { try Responder(stack: .passUnretained(self), index: 0, end: count, endpoint: .refusal)(request, context) }
    }

    /// Every `unparsed`, in order: a request whose head could not be parsed.
    func runUnparsed(context: inout RequestContext) {
        for layer in layers { layer.unparsed(context: &context) }
    }

    /// Runs every head phase in order; the index of the one that threw (its error in
    /// `context.refusal`), or nil.
    func runHeads(_ head: RequestHead, context: inout RequestContext) -> Int? {
        for index in layers.indices {
            do { try layers[index].head(head, context: &context) } catch {
                context.refusal = error
                return index
            }
        }
        return nil
    }

    func completed(_ exchange: CompletedExchange) {
        for layer in layers { layer.completed(exchange) }
    }
}

/// One middleware of a stack (`TypedLayer` holds it). Unchecked: a non-final class cannot be
/// `Sendable`, though `TypedLayer` is a final class of one `let` of a `Sendable` middleware. As a
/// class-bound `Sendable` protocol each call went through a witness thunk: about 250
/// instructions (1 %) of a hello (docs/benchmarks.md, issue 34 item 3, which names the tests).
class Layer: @unchecked Sendable {
    func head(_ head: RequestHead, context: inout RequestContext) throws {}
    func unparsed(context: inout RequestContext) {}
    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply { try next(request, context) }
    func completed(_ exchange: CompletedExchange) {}
}

final class TypedLayer<M: Middleware>: Layer, @unchecked Sendable {
    let middleware: M

    init(_ middleware: M) { self.middleware = middleware }

    override func head(_ head: RequestHead, context: inout RequestContext) throws { try middleware.head(head, context: &context) }
    override func unparsed(context: inout RequestContext) { middleware.unparsed(context: &context) }
    override func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        try middleware.handle(request, context: context, next: next)
    }
    override func completed(_ exchange: CompletedExchange) { middleware.completed(exchange) }
}
