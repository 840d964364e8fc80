import Synchronization

/// Runs `work` every `interval` seconds on a thread of its own, from `start()` until `stop()`:
/// expiries, sweeps, heartbeats, rechecks. Between runs the thread sleeps on the monotonic
/// clock, and `stop()` wakes it at once.
///
/// ```swift
/// let sweep = PeriodicTask(every: 3600, firstAfter: 60) { sweepOrphans() }
/// sweep.start()      // the first run a minute from now, then every hour
/// sweep.stop()       // at once, or after the run under way
/// ```
public final class PeriodicTask: Sendable {
    private let interval: Double
    private let firstDelay: Double
    private let work: @Sendable () -> Bool
    private let wake = Semaphore()
    private let stopped = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)

    /// `work` runs until `stop()`. The first run is `firstAfter` seconds after `start()` (at
    /// once by default: what fell due while the server was down).
    public convenience init(every interval: Double, firstAfter delay: Double = 0, _ work: @escaping @Sendable () -> Void) {
        self.init(interval: interval, firstDelay: delay) {
            work()
            return true
        }
    }

    /// A task whose `work` returns whether to go on (false ends it, as `stop()` does).
    public static func repeating(
        every interval: Double, firstAfter delay: Double = 0,
        whileTrue work: @escaping @Sendable () -> Bool
    ) -> PeriodicTask {
        PeriodicTask(interval: interval, firstDelay: delay, work: work)
    }

    private init(interval: Double, firstDelay: Double, work: @escaping @Sendable () -> Bool) {
        self.interval = interval
        self.firstDelay = firstDelay
        self.work = work
    }

    /// Starts the thread; once (later calls, and an interval not above 0, do nothing). False
    /// when the system refuses a thread.
    @discardableResult
    public func start() -> Bool {
        guard interval > 0, !started.exchange(true, ordering: .relaxed) else { return true }
        return SystemThread.detach { [self] in run() }
    }

    /// Ends the thread: at once between runs, else after the run under way. Any thread.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        wake.signal()
    }

    private func run() {
        var delay = firstDelay
        while delay <= 0 || !wake.wait(seconds: delay) {
            guard !stopped.load(ordering: .relaxed), work() else { return }
            delay = interval
        }
    }
}
