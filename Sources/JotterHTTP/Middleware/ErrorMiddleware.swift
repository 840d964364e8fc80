/// Renders every thrown error as problem+json carrying the request id — errors of later
/// replies included.
///
/// An `HTTPError` renders itself; anything else is a `500` that names the request id and is
/// logged with its cause, which is never sent to the client.
public struct ErrorMiddleware: Middleware {
    let log: Logger

    public init(log: Logger) { self.log = log }

    public func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        let log = self.log
        do {
            let reply = try next(request, context)
            guard reply.response == nil else { return reply }
            return reply.recover { error in Self.render(error, for: request, context: context, log: log) }
        } catch {
            return .now(Self.render(error, for: request, context: context, log: log))
        }
    }

    /// The response for any error: an `HTTPError` renders itself, anything else is a logged 500.
    public static func render(_ error: any Error, for request: Request, context: RequestContext, log: Logger) -> Response {
        if let error = error as? HTTPError { return error.response(requestID: context.requestID) }
        log.error("request \(context.requestID) \(request.method) \(Logger.sanitize(String(request.path))) failed: \(String(reflecting: error))")
        return HTTPError(.internalServerError, detail: "the server failed to handle this request (request id \(context.requestID))")
            .response(requestID: context.requestID)
    }
}
