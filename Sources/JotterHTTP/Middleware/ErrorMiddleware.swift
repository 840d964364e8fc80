/// Renders every thrown error as problem+json carrying the request id. (The engine adds
/// `X-Request-Id` and `X-Content-Type-Options: nosniff` to every response.)
///
/// An `HTTPError` renders itself; anything else is a `500` that names the request id and is
/// logged with its cause, which is never sent to the client.
public struct ErrorMiddleware: Middleware {
    let log: Logger

    public init(log: Logger) { self.log = log }

    public func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Response {
        do {
            return try next(request, context)
        } catch {
            return Self.render(error, for: request, log: log)
        }
    }

    /// The response for any error: an `HTTPError` renders itself, anything else is a logged 500.
    public static func render(_ error: any Error, for request: Request, log: Logger) -> Response {
        if let error = error as? HTTPError { return render(error, requestID: request.id) }
        log.error("request \(request.id) \(request.method) \(request.path) failed: \(String(reflecting: error))")
        return render(HTTPError(.internalServerError, detail: "the server failed to handle this request (request id \(request.id))"),
                      requestID: request.id)
    }

    /// The problem+json response for `error`, carrying `requestID`.
    public static func render(_ error: HTTPError, requestID: String) -> Response {
        error.response(requestID: requestID)
    }
}
