#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A fixed set of plain threads running queued work in order of arrival: the PostgreSQL
/// store's own threads, which wait on the network so that neither engine threads nor Swift's
/// cooperative pool do.
///
/// `stop()` lets the queued work finish, then ends the threads.
final class StoreThreads: Sendable {
    private struct State {
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let available = Semaphore()
    private let threads = Mutex<[pthread_t]>([])

    /// Starts `count` threads (at least one).
    init(count: Int, name: String) throws(StoreError) {
        for _ in 0..<max(1, count) {
            let box = Unmanaged.passRetained(self).toOpaque()
            var tid = pthread_t()
            let rc = pthread_create(&tid, nil, { context in
                let threads = Unmanaged<StoreThreads>.fromOpaque(context!).takeRetainedValue()
                threads.run()
                return nil
            }, box)
            guard rc == 0 else {
                Unmanaged<StoreThreads>.fromOpaque(box).release()
                stop()
                throw .system("could not start the \(name) threads (pthread_create: \(rc))")
            }
            threads.withLock { $0.append(tid) }
        }
    }

    /// Queues `work`; false (and nothing queued) once stopped.
    @discardableResult
    func run(_ work: @escaping @Sendable () -> Void) -> Bool {
        let queued = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.queue.append(work)
            return true
        }
        if queued { available.signal() }
        return queued
    }

    /// Whether the calling thread is one of these.
    var isCurrent: Bool {
        let me = pthread_self()
        return threads.withLock { $0.contains { pthread_equal($0, me) != 0 } }
    }

    /// Refuses new work, lets the queued work run, then joins the threads (from one of them: does
    /// not wait). Idempotent.
    func stop() {
        let count = state.withLock { state -> Int in
            if state.stopped { return 0 }
            state.stopped = true
            return 1
        }
        guard count == 1 else { return }
        let all = threads.withLock { $0 }
        for _ in all { available.signal() }  // one wake-up each, after the queued work
        let me = pthread_self()
        for tid in all {
            if pthread_equal(tid, me) != 0 { pthread_detach(tid) } else { pthread_join(tid, nil) }
        }
    }

    private func run() {
        while true {
            available.wait()
            let work = state.withLock { state -> (@Sendable () -> Void)? in
                guard state.head < state.queue.count else { return nil }
                let work = state.queue[state.head]
                state.head += 1
                if state.head > 1024, state.head * 2 > state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                return work
            }
            guard let work else { return }  // a stop wake-up: the queue is empty
            work()
        }
    }
}
