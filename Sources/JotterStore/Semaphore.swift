#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A counting semaphore, for a plain thread to sleep until another thread signals it.
///
/// `Mutex` (Synchronization) guards state but cannot wait for a condition; this is the wait,
/// built on a pthread mutex and condition variable (POSIX `sem_init` is missing on Darwin).
/// Used by the writer thread (sleep until a write is queued) and by `perform` (sleep until the
/// write is durable).
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
        pthread_cond_init(condition, nil)
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
}
