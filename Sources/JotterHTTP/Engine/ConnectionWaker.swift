import Synchronization

/// Wakes one connection whose streaming body has something to send, from any thread: posts a
/// task to the connection's event loop, at most one outstanding at a time, so a producer that
/// wakes it for every piece costs the loop one task until the loop has taken it. (A connection
/// driven in memory, as in the state machines' tests, gets the task instead: `Handback`.)
public final class ConnectionWaker: Sendable {
    private enum State { case running, wakePending, closed }

    private let state = Mutex(State.running)
    private let handback: Handback
    private let stream: Int32

    /// A waker for `stream` (0 on HTTP/1.1) of the connection `handback` reaches.
    init(_ handback: Handback, stream: Int32) {
        self.handback = handback
        self.stream = stream
    }

    /// Tells the connection's loop to write what the body has now. Safe from any thread, any
    /// number of times.
    public func wake() {
        let post = state.withLock { state -> Bool in
            guard state == .running else { return false }
            state = .wakePending
            return true
        }
        guard post else { return }
        handback.post(.wake(handback.token, stream: stream))
    }

    /// The loop took the wake: the next one posts again.
    func woken() {
        state.withLock { if $0 == .wakePending { $0 = .running } }
    }

    /// The connection is gone: later wakes do nothing.
    func close() {
        state.withLock { $0 = .closed }
    }
}
