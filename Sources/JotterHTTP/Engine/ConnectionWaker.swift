import CMicroHTTPD
import Synchronization

/// Wakes one connection whose streaming body has something to send, from any thread.
///
/// On Jotter's own engine a wake posts a task to the connection's event loop (at most one
/// outstanding at a time); on libmicrohttpd it resumes the suspended connection, closing the
/// race between "suspend, nothing to do" on the engine thread and "wake up, there is work"
/// from any other thread: a wake that arrives before the suspend is remembered, so the
/// suspend is skipped and nothing is lost.
public final class ConnectionWaker: Sendable {
    enum State { case running, suspended, wakePending, closed }

    /// The libmicrohttpd connection; only used while `state` is locked and not `.closed`.
    struct Connection: @unchecked Sendable { let pointer: OpaquePointer }

    private enum Target: Sendable {
        case microhttpd(Connection)
        case loop(EventLoop, token: UInt64)
    }

    private let state = Mutex(State.running)
    private let target: Target

    init(connection: OpaquePointer) {
        target = .microhttpd(Connection(pointer: connection))
    }

    init(loop: EventLoop, token: UInt64) {
        target = .loop(loop, token: token)
    }

    /// Suspends the connection unless a wake is already pending. libmicrohttpd's thread only.
    /// - Returns: true when the connection is now suspended.
    @discardableResult
    func suspendUnlessWoken() -> Bool {
        guard case .microhttpd(let connection) = target else { return false }
        return state.withLock { state in
            switch state {
            case .running:
                state = .suspended
                MHD_suspend_connection(connection.pointer)
                return true
            case .wakePending:
                state = .running
                return false
            case .suspended, .closed:
                return false
            }
        }
    }

    /// Resumes the connection if it is suspended, or remembers the wake for the next suspend.
    /// Safe from any thread, any number of times.
    public func wake() {
        switch target {
        case .microhttpd(let connection):
            state.withLock { state in
                switch state {
                case .suspended:
                    state = .running
                    MHD_resume_connection(connection.pointer)
                case .running:
                    state = .wakePending
                case .wakePending, .closed:
                    break
                }
            }
        case .loop(let loop, let token):
            let post = state.withLock { state -> Bool in
                guard state == .running else { return false }
                state = .wakePending
                return true
            }
            if post { loop.post(.wake(token)) }
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

    var isSuspended: Bool { state.withLock { $0 == .suspended } }
}
