import Glibc

/// The time a store stamps on what it writes, in whole seconds since 1970.
///
/// Not `time(nil)`: glibc serves it from the kernel's coarse clock, which lags the real time by
/// up to a tick, so a note written just after a second began could carry the second before —
/// earlier than a clock read before the write (`Date()`, a client's) says.
enum WallClock {
    static func seconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }
}
