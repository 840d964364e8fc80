import Synchronization

/// A continuation resumed exactly once, by whichever comes first (the answer or the
/// cancellation), even when that comes before the continuation is there.
final class OnceContinuation<Value: Sendable>: Sendable {
    private enum State {
        case waiting
        case started(CheckedContinuation<Value, any Error>)
        /// Resumed before it started: the result waits for it.
        case early(Result<Value, any Error>)
        case resumed
    }
    private let state = Mutex(State.waiting)

    func start(_ continuation: CheckedContinuation<Value, any Error>) {
        let early: Result<Value, any Error>? = state.withLock { state in
            switch state {
            case .waiting:
                state = .started(continuation)
                return nil
            case .early(let result):
                state = .resumed
                return result
            case .started, .resumed:
                preconditionFailure("a OnceContinuation started twice")
            }
        }
        if let early { continuation.resume(with: early) }
    }

    /// Resumes the continuation, unless it was resumed before (then `result` is dropped).
    func resume(with result: Result<Value, any Error>) {
        let continuation: CheckedContinuation<Value, any Error>? = state.withLock { state in
            switch state {
            case .waiting:
                state = .early(result)
                return nil
            case .started(let continuation):
                state = .resumed
                return continuation
            case .early, .resumed:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
