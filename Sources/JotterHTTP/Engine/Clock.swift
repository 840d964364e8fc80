import JotterSystem
import Synchronization

/// The clock of one connection and of every request on it, in microseconds: the system's
/// monotonic clock on a socket, or a clock a test moves by hand (`ManualClock`) for a machine
/// driven in memory (`MemoryConnection`). The connection's driver reads it for each event it
/// passes the machine, and the machine hands it to each request's lifecycle, so the times of a
/// connection all come from one clock.
package enum MachineClock: Sendable {
    /// `CLOCK_MONOTONIC` (`MonotonicClock`). A duration is only ever taken between two times
    /// of one clock: a test's clock may stand far ahead of the system's, and the system's
    /// starts near 0 on a machine booted a minute ago.
    case system
    /// A clock that stands where its owner sets it.
    case manual(ManualClock)

    /// The time now, in microseconds.
    @inline(__always) func now() -> UInt64 {
        switch self {
        case .system: MonotonicClock.microseconds()
        case .manual(let clock): clock.now
        }
    }

    /// Microseconds from `start` (read from this clock) to now; 0 if this clock stands before it.
    @inline(__always) func elapsed(since start: UInt64) -> Int { MonotonicClock.elapsed(from: start, to: now()) }
}

/// A clock that stands where its owner puts it (microseconds), readable from any thread: the
/// time of a machine driven in memory, and of the requests its executors run.
package final class ManualClock: Sendable {
    private let microseconds: Atomic<UInt64>

    package init(_ now: UInt64) { microseconds = Atomic(now) }

    /// The time it shows; setting it moves it (forward or back).
    package var now: UInt64 {
        get { microseconds.load(ordering: .acquiring) }
        set { microseconds.store(newValue, ordering: .releasing) }
    }
}
