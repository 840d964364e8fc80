/// Something that turns a request into a response: a route's handler, or a handler wrapped in
/// middleware.
public typealias Responder = @Sendable (Request, RequestContext) throws -> Response

/// Code that runs around a route's handler.
///
/// ```swift
/// struct Timing: Middleware {
///     func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Response {
///         var response = try next(request, context)
///         response.headers.set("X-Handled", "yes")
///         return response
///     }
/// }
/// ```
public protocol Middleware: Sendable {
    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Response
}

extension Array where Element == any Middleware {
    /// Wraps `responder` in these middleware, the first one outermost. Done once per route.
    func wrapping(_ responder: @escaping Responder) -> Responder {
        reversed().reduce(responder) { next, middleware in
            { request, context in try middleware.handle(request, context: context, next: next) }
        }
    }
}
