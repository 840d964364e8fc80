#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

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
    private let threads = Mutex<[pthread_t]>([])

    /// Starts `count` threads (at least one).
    public init(count: Int) throws(StoreError) {
        for _ in 0..<max(1, count) {
            let context = Unmanaged.passRetained(self).toOpaque()
            var tid = pthread_t()
            let rc = pthread_create(&tid, nil, { context in
                Unmanaged<StoreThreads>.fromOpaque(context!).takeRetainedValue().loop()
                return nil
            }, context)
            guard rc == 0 else {
                Unmanaged<StoreThreads>.fromOpaque(context).release()
                stop()
                throw .system("could not start a store thread (pthread_create: \(rc))")
            }
            threads.withLock { $0.append(tid) }
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
        let me = pthread_self()
        return threads.withLock { $0.contains { pthread_equal($0, me) != 0 } }
    }

    /// Runs what is queued, then ends the threads. Idempotent; from one of its own threads it
    /// does not wait.
    public func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        let tids = threads.withLock { tids in defer { tids = [] }; return tids }
        for _ in tids { ready.signal() }
        for tid in tids {
            if pthread_equal(tid, pthread_self()) != 0 { pthread_detach(tid) } else { pthread_join(tid, nil) }
        }
    }

    /// Runs `work` on a new detached thread of its own (a transfer that may wait as long as a
    /// client does). Returns false when the system refuses a thread.
    @discardableResult
    public static func detach(_ work: @escaping @Sendable () -> Void) -> Bool {
        final class Box: Sendable {
            let work: @Sendable () -> Void
            init(_ work: @escaping @Sendable () -> Void) { self.work = work }
        }
        let context = Unmanaged.passRetained(Box(work)).toOpaque()
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { context in
            Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().work()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            return false
        }
        pthread_detach(tid)
        return true
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
