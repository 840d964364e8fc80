import Glibc

/// The system's monotonic clock (`CLOCK_MONOTONIC`): it never jumps and says nothing of the
/// date. Durations only — and only between two readings of this clock: it starts near 0 on a
/// machine booted a minute ago, so a reading is never compared with another clock's.
///
/// ```swift
/// let start = MonotonicClock.microseconds()
/// work()
/// let took = MonotonicClock.elapsed(from: start, to: MonotonicClock.microseconds())
/// ```
public enum MonotonicClock {
    /// Monotonic time in microseconds.
    @inline(__always) public static func microseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000 &+ UInt64(now.tv_nsec) / 1000
    }

    /// Monotonic time in milliseconds.
    public static func milliseconds() -> Int64 { Int64(microseconds() / 1000) }

    /// Monotonic time in seconds, with its fraction.
    public static func seconds() -> Double { Double(microseconds()) / 1e6 }

    /// Microseconds from `start` to `end`, two readings of one clock; 0 when `end` is not later.
    /// Never traps: a duration is a measurement, and a measurement is no reason to stop a server.
    @inline(__always) public static func elapsed(from start: UInt64, to end: UInt64) -> Int {
        end > start ? Int(truncatingIfNeeded: min(end &- start, UInt64(Int.max))) : 0
    }

    /// `end - start` in the clock's units, 0 when `end` is not later.
    @inline(__always) public static func since(_ start: UInt64, to end: UInt64) -> UInt64 {
        end > start ? end &- start : 0
    }
}

/// The time of day (`CLOCK_REALTIME`) in whole seconds since 1970: what stores stamp on rows
/// and what expiries are compared with.
///
/// Not `time(nil)`: glibc serves it from the kernel's coarse clock, which lags the real time by
/// up to a tick, so a note written just after a second began could carry the second before —
/// earlier than a clock read before the write (`Date()`, a client's) says.
public enum WallClock {
    public static func seconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`): what a piece of work
/// cost, read before and after it on the same thread.
public enum ThreadCPUClock {
    /// CPU microseconds this thread has used.
    public static func microseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) &* 1_000_000 &+ UInt64(now.tv_nsec) / 1000
    }
}
