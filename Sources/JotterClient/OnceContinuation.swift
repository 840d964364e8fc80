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
        arrive(.started(continuation))
    }

    /// Resumes the continuation, unless it was resumed before (then `result` is dropped).
    func resume(with result: Result<Value, any Error>) {
        arrive(.early(result))
    }

    /// One side arrives — the continuation (`started`) or the first result (`early`): it waits
    /// for the other, or meets it and resumes.
    private func arrive(_ side: State) {
        let meeting: (CheckedContinuation<Value, any Error>, Result<Value, any Error>)? = state.withLock { state in
            switch (state, side) {
            case (.waiting, _):
                state = side
                return nil
            case (.started(let continuation), .early(let result)), (.early(let result), .started(let continuation)):
                state = .resumed
                return (continuation, result)
            case (_, .started):
                preconditionFailure("a OnceContinuation started twice")
            default:
                return nil  // a result after the first
            }
        }
        if case let (continuation, result)? = meeting { continuation.resume(with: result) }
    }
}
