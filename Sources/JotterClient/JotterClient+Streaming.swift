import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Tasks whose body is handled as it arrives (event streams, downloads) or whose upload
/// progress is reported: the delegate route, since `bytes(for:)` is missing on Linux.
extension JotterClient {
    /// Runs `task` and hands over its upload progress, its response head, then each chunk of
    /// its body as it arrives; returns when the body is complete.
    ///
    /// An error status throws with the server's problem details (the body is collected, not
    /// handed over). Cancelling the calling task cancels `task`.
    func stream(
        _ task: URLSessionTask,
        sent: (Int64) -> Void = { _ in },
        response: (HTTPURLResponse) throws(JotterClientError) -> Void = { _ in },
        data: (Data) throws(JotterClientError) -> Void
    ) async throws(JotterClientError) {
        try await stream(tasks.run(task), url: task.originalRequest?.url, sent: sent, response: response, data: data)
    }

    /// `request` over a plain socket where that is better than URLSession (an `http://` event
    /// stream or upload on Linux, see `SocketExchange`), else as a URLSession data task; then as
    /// `stream(_:sent:response:data:)`.
    ///
    /// `viaSessionUnless`: only what needs the SDK's own TLS goes over a socket (a download).
    func stream(
        _ request: URLRequest, body: MultipartFormData? = nil, viaSessionUnless ownTLSOnly: Bool = false,
        sent: (Int64) -> Void = { _ in },
        response: (HTTPURLResponse) throws(JotterClientError) -> Void = { _ in },
        data: (Data) throws(JotterClientError) -> Void
    ) async throws(JotterClientError) {
        let request = try await adapted(request)
        #if canImport(FoundationNetworking)
        if ownTLSOnly
            ? SocketExchange.needsOwnTLS(request.url, trust: configuration.trust)
            : SocketExchange.handles(request.url, trust: configuration.trust)
        {
            let events = SocketExchange.run(
                request, headers: sessionHeaders,
                body: body.map { .segments($0.segments, length: $0.contentLength) } ?? .none,
                idleTimeout: configuration.requestTimeout, trust: configuration.trust, counter: sockets)
            return try await stream(events, url: request.url, sent: sent, response: response, data: data)
        }
        #endif
        precondition(body == nil, "a multipart body goes over a socket, or through send(_:request:progress:)")
        try await stream(session.dataTask(with: request), sent: sent, response: response, data: data)
    }

    /// The headers the session adds to every request (the token is the request's own: `adapted`).
    var sessionHeaders: [String: String] { Self.sessionHeaders(configuration) }

    static func sessionHeaders(_ configuration: Configuration) -> [String: String] {
        configuration.headers.merging(["User-Agent": configuration.userAgent]) { mine, _ in mine }
    }

    /// `request` as it is sent: with the client's current `token`, then as
    /// `Configuration.adaptRequest` changes it.
    func adapted(_ request: URLRequest) async throws(JotterClientError) -> URLRequest {
        var request = request
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        guard let adapt = configuration.adaptRequest else { return request }
        do { return try await adapt(request) } catch {
            throw JotterClientError(kind: .invalidRequest, message: "the request adapter failed: \(error)")
        }
    }

    private func stream(
        _ events: AsyncThrowingStream<TaskEvent, any Error>, url: URL?,
        sent: (Int64) -> Void,
        response: (HTTPURLResponse) throws(JotterClientError) -> Void,
        data: (Data) throws(JotterClientError) -> Void
    ) async throws(JotterClientError) {
        var failure: (head: HTTPURLResponse, body: Data)?
        do {
            for try await event in events {
                switch event {
                case .sent(let count):
                    sent(count)
                case .response(let head) where head.statusCode >= 400:
                    failure = (head, Data())
                case .response(let head):
                    try response(head)
                case .data(let chunk):
                    guard failure == nil else {
                        if failure!.body.count < 1 << 16 { failure!.body.append(chunk) }
                        continue
                    }
                    try data(chunk)
                }
            }
        } catch {
            throw JotterClientError.wrapping(error, url: url)
        }
        // A cancelled iteration ends quietly; say so rather than pass it off as complete.
        if Task.isCancelled { throw .cancelled }
        if let failure { throw .http(status: failure.head.statusCode, body: failure.body, response: failure.head) }
    }
}
