import Glibc

/// A counting semaphore, for a plain thread to sleep until another thread signals it.
///
/// `Mutex` (Synchronization) guards state but cannot wait for a condition; this is the wait,
/// built on a pthread mutex and a condition variable on the monotonic clock, so a bounded wait
/// (`wait(seconds:)`) is not stretched or cut short when the time of day is set. Used by the
/// store's threads (sleep until work is queued), by `perform` (sleep until the write is
/// durable) and by `PeriodicTask` (sleep until the next run or a stop).
///
/// `@unchecked Sendable`: the stored pointers are fixed at init and point to heap pthread
/// objects that live until deinit; `count` is only read or written with `mutex` locked.
public final class Semaphore: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var count: Int

    public init(value: Int = 0) {
        count = value
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Adds one to the count, waking one waiter.
    public func signal() {
        pthread_mutex_lock(mutex)
        count += 1
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits until the count is above zero, then takes one.
    public func wait() {
        pthread_mutex_lock(mutex)
        while count == 0 { pthread_cond_wait(condition, mutex) }
        count -= 1
        pthread_mutex_unlock(mutex)
    }

    /// Waits until the count is above zero and takes one (true), or for `seconds` at the most
    /// (false: nothing taken).
    public func wait(seconds: Double) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let whole = Int(max(0, seconds)), nanoseconds = Int((max(0, seconds) - Double(whole)) * 1e9)
        deadline.tv_sec += whole
        deadline.tv_nsec += nanoseconds
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while count == 0 {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT, count == 0 { return false }
        }
        count -= 1
        return true
    }
}
