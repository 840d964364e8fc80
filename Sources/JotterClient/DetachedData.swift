#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Synchronization

extension URLSession {
    /// `data(for:)`, whose caller cancellation releases at once, with `URLError(.cancelled)`,
    /// without cancelling the URLSession task.
    ///
    /// swift-corelibs-foundation's `data(for:)` (6.3.1 and before) cancels its task from its
    /// cancellation handler, that is while holding the Swift task's status lock, and
    /// `URLSessionTask.cancel()` waits for the session's work queue (`workQueue.sync`). When
    /// that queue is completing the same request at that moment, it resumes the continuation,
    /// which waits for the same lock: both wait forever, the caller (and whoever called
    /// `Task.cancel()`, a test, a sync engine's `follow()`) with them
    /// (swift-corelibs-foundation issue 5412, fixed after 6.3.1). A test program cancelling
    /// such a request as its answer arrives hung within 10 to 200 cancellations.
    ///
    /// So the request is never cancelled: it runs to its end in the background (bounded by
    /// `timeoutIntervalForRequest`, its answer dropped), as a request that had been sent
    /// already would have on the server. A POST carries its `Idempotency-Key`: sending it
    /// again creates nothing twice.
    func detachedData(for request: URLRequest) async throws -> (Data, URLResponse) {
        if Task.isCancelled { throw URLError(.cancelled) }
        let waiter = OnceContinuation<(Data, URLResponse)>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiter.start(continuation)
                Task.detached { [self] in
                    do {
                        waiter.resume(with: .success(try await data(for: request)))
                    } catch {
                        waiter.resume(with: .failure(error))
                    }
                }
            }
        } onCancel: {
            // Not resumed here, under the task's status lock: from another thread.
            DispatchQueue.global().async { waiter.resume(with: .failure(URLError(.cancelled))) }
        }
    }
}
#endif
