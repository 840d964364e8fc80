/// Renders every thrown error as problem+json carrying the request id — errors of later
/// replies included.
///
/// An `HTTPError` renders itself; so does any error `translate` turns into one (a store's
/// "disk full" as `507`, say); anything else is a `500` that names the request id and is
/// logged with its cause, which is never sent to the client. An `HTTPError` with a `cause`
/// (a database out of reach behind a `503`) is logged with it too, as a warning; so is a `413`
/// or a `507` with the reason the client got (its problem type, its detail), as the status
/// alone does not tell an operator which limit it was (the body, the note, the user's uploads,
/// a full disk).
public struct ErrorMiddleware: Middleware {
    let log: Logger
    let translate: @Sendable (any Error) -> HTTPError?

    public init(log: Logger, translate: @escaping @Sendable (any Error) -> HTTPError? = { _ in nil }) {
        self.log = log
        self.translate = translate
    }

    public func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        let log = self.log, translate = self.translate
        do {
            let reply = try next(request, context)
            guard reply.nowStatus == nil else {
                // A refusal of the head phase (authentication), rendered inside: its cause too.
                if let refusal = context.refusal as? HTTPError { Self.logCause(of: refusal, for: request, context: context, log: log) }
                return reply
            }
            return reply.recover { error in Self.render(translate(error) ?? error, for: request, context: context, log: log) }
        } catch {
            return .now(Self.render(translate(error) ?? error, for: request, context: context, log: log))
        }
    }

    /// Logs what failed underneath an answered error, if it says (`HTTPError.cause`), or which
    /// limit a `413` or `507` met (`reason`).
    static func logCause(of error: HTTPError, for request: Request, context: RequestContext, log: Logger) {
        guard let cause = error.cause ?? reason(of: error) else { return }
        log.warning(
            "request \(context.requestID) \(request.method) \(Logger.sanitize(String(request.path))) answered"
                + " \(error.status.code): \(Logger.sanitize(cause))")
    }

    /// What a `413` or `507` told the client — its problem type unless `about:blank`, then its
    /// detail — for the log; nil for any other status.
    static func reason(of error: HTTPError) -> String? {
        guard error.status == .contentTooLarge || error.status == .insufficientStorage else { return nil }
        let type = error.type == "about:blank" ? nil : error.type
        let said = [type, error.detail].compactMap { $0 }.joined(separator: ": ")
        return said.isEmpty ? error.status.reasonPhrase : said
    }

    /// The response for any error: an `HTTPError` renders itself, anything else is a logged 500.
    public static func render(_ error: any Error, for request: Request, context: RequestContext, log: Logger) -> Response {
        if let error = error as? HTTPError {
            logCause(of: error, for: request, context: context, log: log)
            return error.response(requestID: context.requestID)
        }
        log.error("request \(context.requestID) \(request.method) \(Logger.sanitize(String(request.path))) failed: \(String(reflecting: error))")
        return HTTPError(.internalServerError, detail: "the server failed to handle this request (request id \(context.requestID))")
            .response(requestID: context.requestID)
    }
}
