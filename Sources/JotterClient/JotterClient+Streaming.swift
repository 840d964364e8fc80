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
    func stream(_ task: URLSessionTask,
                sent: (Int64) -> Void = { _ in },
                response: (HTTPURLResponse) throws(JotterClientError) -> Void = { _ in },
                data: (Data) throws(JotterClientError) -> Void) async throws(JotterClientError) {
        var failure: (head: HTTPURLResponse, body: Data)?
        do {
            for try await event in tasks.run(task) {
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
            throw JotterClientError.wrapping(error, url: task.originalRequest?.url)
        }
        // A cancelled iteration ends quietly; say so rather than pass it off as complete.
        if Task.isCancelled { throw .cancelled }
        if let failure { throw .http(status: failure.head.statusCode, body: failure.body, response: failure.head) }
    }
}
