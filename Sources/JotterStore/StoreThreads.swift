#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import JotterSystem

/// A few plain threads that run queued work in order of arrival: where a store does what may
/// block (a database round trip, moving a file's bytes to the blob store), so that neither an
/// engine thread nor Swift's cooperative pool waits for it.
///
/// ```swift
/// let threads = try StoreThreads(count: 4, name: "jotter-pg")
/// threads.run { let rows = try? pool.read(…); done(rows) }
/// threads.stop()   // finishes what is queued
/// ```
public final class StoreThreads: Sendable {
    private struct State {
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var stopping = false
    }

    private let state = Mutex(State())
    private let ready = Semaphore()
    private let threads = Mutex<[SystemThread]>([])

    /// Starts `count` threads (at least one).
    public init(count: Int) throws(StoreError) {
        for _ in 0..<max(1, count) {
            let thread = SystemThread()
            threads.withLock { $0.append(thread) }
            do {
                try thread.start { [self] in loop() }
            } catch {
                threads.withLock { _ = $0.removeLast() }
                stop()
                throw .system("could not start a store thread (\(error))")
            }
        }
    }

    /// Queues `work`; after `stop()` it runs on the calling thread instead (never dropped).
    public func run(_ work: @escaping @Sendable () -> Void) {
        let queued = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.queue.append(work)
            return true
        }
        if queued { ready.signal() } else { work() }
    }

    /// Whether the calling thread is one of these (work there must not queue work and wait for it).
    public var isCurrent: Bool {
        threads.withLock { $0.contains { $0.isCurrent } }
    }

    /// Runs what is queued, then ends the threads. Idempotent; from one of its own threads it
    /// does not wait.
    public func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        let running = threads.withLock { threads in
            defer { threads = [] }; return threads
        }
        for _ in running { ready.signal() }
        for thread in running { thread.join() }
    }

    private func loop() {
        while true {
            ready.wait()
            let work: (@Sendable () -> Void)? = state.withLock { state in
                guard state.head < state.queue.count else { return nil }  // a stop signal
                defer {
                    state.head += 1
                    if state.head > 64, state.head * 2 > state.queue.count {
                        state.queue.removeFirst(state.head)
                        state.head = 0
                    }
                }
                return state.queue[state.head]
            }
            guard let work else { return }
            work()
        }
    }
}
