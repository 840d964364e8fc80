import Dispatch
import JotterHTTP
import Synchronization

/// Bounds the Argon2id work of the server (sign-in checks, new passwords): at most `width`
/// hashes run at once — as many as the cores, so a flood of sign-ins cannot take every core
/// from the requests that need none — and at most `queueLimit` more wait for a turn. Past
/// that, work is refused with `503` and `Retry-After`, before anything is hashed.
public final class PasswordHashing: Sendable {
    /// Hashes that run at once.
    public let width: Int
    /// Hashes that may wait for a turn.
    public let queueLimit: Int
    private struct State {
        var running = 0
        var waiting: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    public init(width: Int = HTTPServer.Configuration.cores, queueLimit: Int = 16) {
        self.width = max(1, width)
        self.queueLimit = max(0, queueLimit)
    }

    /// Hashes running and waiting now.
    public var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }

    /// Runs `work` on a thread of Dispatch's pool when a slot is free (at once, or once one of
    /// the waiting before it has run), or throws `503` when the queue is full.
    public func run(_ work: @escaping @Sendable () -> Void) throws(HTTPError) {
        let started: Bool? = state.withLock { state in
            if state.running < width { state.running += 1; return true }
            guard state.waiting.count < queueLimit else { return nil }
            state.waiting.append(work)
            return false
        }
        guard let started else {
            throw HTTPError(
                .serviceUnavailable, detail: "too many sign-ins are being checked right now: try again in a second",
                headers: HTTPHeaders([("Retry-After", "1")]))
        }
        if started { start(work) }
    }

    /// `run(work)`, or `done` with the `503` when the queue is full.
    public func run(
        orRefuse done: @Sendable (_ render: @escaping @Sendable () throws -> Response) -> Void,
        _ work: @escaping @Sendable () -> Void
    ) {
        do { try run(work) } catch { done { throw error } }
    }

    private func start(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async { [self] in
            work()
            // The slot passes to the oldest waiting work, or is freed.
            let next: (@Sendable () -> Void)? = state.withLock { state in
                if state.waiting.isEmpty { state.running -= 1; return nil }
                return state.waiting.removeFirst()
            }
            if let next { start(next) }
        }
    }
}
