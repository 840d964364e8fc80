/// Something that turns a request into a reply: a route's handler, or a handler wrapped in
/// middleware.
public typealias Responder = @Sendable (Request, RequestContext) throws -> Reply

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
    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply
    func completed(_ exchange: CompletedExchange)
}

extension Middleware {
    public func head(_ head: RequestHead, context: inout RequestContext) throws {}
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

/// The middleware that apply to a group of routes, composed once when routes are registered.
/// Routes registered under the same middleware share one stack.
final class MiddlewareStack: Sendable {
    let middleware: [any Middleware]
    /// `refusals[i]`: the `handle` of the first `i` middleware around a responder that answers
    /// `context.refusal` — when middleware `i` refused in its head phase (or, for `i == count`,
    /// when something refused before the handler ran). An `HTTPError` is rendered right there,
    /// so every middleware outside sees the response; any other error is thrown on.
    let refusals: [Responder]

    init(_ middleware: [any Middleware]) {
        self.middleware = middleware
        let refuse: Responder = { _, context in
            let refusal = context.refusal ?? HTTPError(.internalServerError)
            guard let error = refusal as? HTTPError else { throw refusal }
            return .now(error.response(requestID: context.requestID))
        }
        refusals = (0...middleware.count).map { Self.wrap(middleware.prefix($0), around: refuse) }
    }

    /// `handler` inside every middleware of the stack.
    func wrap(_ handler: @escaping Responder) -> Responder { Self.wrap(middleware[...], around: handler) }

    /// Runs every head phase in order; the index of the one that threw (its error in
    /// `context.refusal`), or nil.
    func runHeads(_ head: RequestHead, context: inout RequestContext) -> Int? {
        for index in middleware.indices {
            do { try middleware[index].head(head, context: &context) } catch {
                context.refusal = error
                return index
            }
        }
        return nil
    }

    func completed(_ exchange: CompletedExchange) {
        for middleware in middleware { middleware.completed(exchange) }
    }

    private static func wrap(_ middleware: ArraySlice<any Middleware>, around responder: @escaping Responder) -> Responder {
        middleware.reversed().reduce(responder) { next, middleware in
            { request, context in try middleware.handle(request, context: context, next: next) }
        }
    }
}
