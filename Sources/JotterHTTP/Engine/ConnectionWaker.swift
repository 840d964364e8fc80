import CMicroHTTPD
import Synchronization

/// Suspends and resumes one connection, closing the race between "suspend, nothing to do" on
/// the engine thread and "wake up, there is work" from any other thread.
///
/// A wake that arrives before the suspend is remembered, so the suspend is skipped and nothing
/// is lost. libmicrohttpd only allows suspending from its own callbacks; resuming is safe from
/// any thread.
public final class ConnectionWaker: Sendable {
    enum State { case running, suspended, wakePending, closed }

    /// The libmicrohttpd connection; only used while `state` is locked and not `.closed`.
    struct Connection: @unchecked Sendable { let pointer: OpaquePointer }

    private let state = Mutex(State.running)
    private let connection: Connection

    init(connection: OpaquePointer) {
        self.connection = Connection(pointer: connection)
    }

    /// Suspends the connection unless a wake is already pending. Engine thread only.
    /// - Returns: true when the connection is now suspended.
    @discardableResult
    func suspendUnlessWoken() -> Bool {
        state.withLock { state in
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
    }

    /// The connection is gone: later wakes do nothing.
    func close() {
        state.withLock { $0 = .closed }
    }

    var isSuspended: Bool { state.withLock { $0 == .suspended } }
}
