import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// What a streaming task reports, in order: upload progress, the response head, body chunks.
enum TaskEvent: Sendable {
    /// Bytes of the request body sent so far.
    case sent(Int64)
    case response(HTTPURLResponse)
    case data(Data)
}

/// The session's delegate: hands each task's callbacks to that task's stream.
///
/// Event streams, downloads and uploads with progress need the body as it arrives and the
/// upload progress, which only delegates see (`bytes(for:)` is missing on Linux). Linux ignores
/// per-task delegates (`task.delegate`, measured), so one session delegate routes the callbacks
/// by task identifier. Tasks started with the async API (`data(for:)`) never reach it.
final class TaskRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let streams = Mutex<[Int: AsyncThrowingStream<TaskEvent, any Error>.Continuation]>([:])

    /// Starts `task` and returns what it reports; ending the iteration early cancels the task.
    func run(_ task: URLSessionTask) -> AsyncThrowingStream<TaskEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: TaskEvent.self, throwing: (any Error).self)
        let id = task.taskIdentifier
        continuation.onTermination = { [weak self] termination in
            if case .cancelled = termination { task.cancel() }
            self?.streams.withLock { _ = $0.removeValue(forKey: id) }
        }
        streams.withLock { $0[id] = continuation }
        task.resume()
        return stream
    }

    /// Tasks started here and not yet complete.
    var running: Int { streams.withLock { $0.count } }

    private func stream(_ task: URLSessionTask) -> AsyncThrowingStream<TaskEvent, any Error>.Continuation? {
        streams.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        stream(task)?.yield(.sent(totalBytesSent))
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let response = response as? HTTPURLResponse { stream(dataTask)?.yield(.response(response)) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        stream(dataTask)?.yield(.data(data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let continuation = streams.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        if let error { continuation?.finish(throwing: error) } else { continuation?.finish() }
    }
}
