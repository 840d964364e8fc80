import Glibc
import Synchronization

/// The system's monotonic clock (`CLOCK_MONOTONIC`), in microseconds, and durations between two
/// readings of one clock.
///
/// A duration is only ever taken between two times read from the same clock: a connection's
/// machine gets its times from its driver, which reads the connection's `MachineClock`, and each
/// request on it reads that same clock. A time of one clock is never compared with another's —
/// a test's clock may stand far ahead of the system's, and the system's starts near 0 on a
/// machine booted a minute ago.
enum Clock {
    /// Monotonic time in microseconds. Read only through `MachineClock.system`, so that every
    /// time of the engine comes from a clock someone passed in.
    @inline(__always) fileprivate static func microseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000 &+ UInt64(now.tv_nsec) / 1000
    }

    /// Microseconds from `start` to `end`, two readings of one clock; 0 when `end` is not later.
    /// Never traps: a duration is a measurement, and a measurement is no reason to stop a server.
    @inline(__always) static func elapsed(from start: UInt64, to end: UInt64) -> Int {
        end > start ? Int(truncatingIfNeeded: min(end &- start, UInt64(Int.max))) : 0
    }

    /// `end - start` in the clock's units, 0 when `end` is not later.
    @inline(__always) static func since(_ start: UInt64, to end: UInt64) -> UInt64 {
        end > start ? end &- start : 0
    }
}

/// The clock of one connection and of every request on it, in microseconds: the system's
/// monotonic clock on a socket, or a clock a test moves by hand (`ManualClock`) for a machine
/// driven in memory (`MemoryConnection`). The connection's driver reads it for each event it
/// passes the machine, and the machine hands it to each request's lifecycle, so the times of a
/// connection all come from one clock.
enum MachineClock: Sendable {
    /// `CLOCK_MONOTONIC`.
    case system
    /// A clock that stands where its owner sets it.
    case manual(ManualClock)

    /// The time now, in microseconds.
    @inline(__always) func now() -> UInt64 {
        switch self {
        case .system: Clock.microseconds()
        case .manual(let clock): clock.now
        }
    }

    /// Microseconds from `start` (read from this clock) to now; 0 if this clock stands before it.
    @inline(__always) func elapsed(since start: UInt64) -> Int { Clock.elapsed(from: start, to: now()) }
}

/// A clock that stands where its owner puts it (microseconds), readable from any thread: the
/// time of a machine driven in memory, and of the requests its executors run.
final class ManualClock: Sendable {
    private let microseconds: Atomic<UInt64>

    init(_ now: UInt64) { microseconds = Atomic(now) }

    /// The time it shows; setting it moves it (forward or back).
    var now: UInt64 {
        get { microseconds.load(ordering: .acquiring) }
        set { microseconds.store(newValue, ordering: .releasing) }
    }
}
