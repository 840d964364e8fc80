import Synchronization

/// Wakes one connection whose streaming body has something to send, from any thread: posts a
/// task to the connection's event loop, at most one outstanding at a time, so a producer that
/// wakes it for every piece costs the loop one task until the loop has taken it.
public final class ConnectionWaker: Sendable {
    private enum State { case running, wakePending, closed }

    /// Where a wake goes: the connection's loop, or (a connection driven without a loop, as in
    /// the state machine's tests) a function.
    private enum Target: Sendable {
        case loop(EventLoop, token: UInt64, stream: Int32)
        case call(@Sendable () -> Void)
    }

    private let state = Mutex(State.running)
    private let target: Target

    init(loop: EventLoop, token: UInt64, stream: Int32) {
        target = .loop(loop, token: token, stream: stream)
    }

    /// A waker that calls `wake` (any thread) instead of posting to a loop.
    init(calling wake: @escaping @Sendable () -> Void) {
        target = .call(wake)
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
        switch target {
        case .loop(let loop, let token, let stream): loop.post(.wake(token, stream: stream))
        case .call(let wake): wake()
        }
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
