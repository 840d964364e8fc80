import Glibc

/// A plain thread (pthread) running one closure: the engine's event loops, the store's writer
/// and workers, a transfer's driver, a periodic task. Not Swift's cooperative pool, so that
/// what blocks (a database round trip, an fsync, epoll) waits there without starving anyone.
///
/// ```swift
/// let thread = try SystemThread.start { loop.run() }   // joinable
/// thread.join()
/// SystemThread.detach { transfer.drive() }              // ends by itself
/// ```
///
/// `@unchecked Sendable`: `id` is written once, by `pthread_create` before the new thread runs
/// (so the thread itself sees it, `isCurrent`), and only read after that.
public final class SystemThread: @unchecked Sendable {
    /// The system refused a new thread (`pthread_create`'s error number).
    public struct StartError: Error, CustomStringConvertible, Sendable {
        public let code: Int32
        public var description: String { "pthread_create: \(String(cString: strerror(code)))" }
    }

    private var id = pthread_t()

    /// A thread not started yet: `start(_:)` it once.
    public init() {}

    /// Starts a joinable thread running `work`: `join()` it, or `detach()` it, once.
    public static func start(_ work: sending @escaping () -> Void) throws(StartError) -> SystemThread {
        let thread = SystemThread()
        try thread.start(work)
        return thread
    }

    /// Runs `work` on this thread, which `isCurrent` already knows as itself when `work` begins.
    /// `work` is handed to the thread, which alone uses it from then on.
    public func start(_ work: sending @escaping () -> Void) throws(StartError) {
        let context = Unmanaged.passRetained(Work(work)).toOpaque()
        let code = pthread_create(
            &id, nil,
            { raw in
                Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue().body()
                return nil
            }, context)
        guard code == 0 else {
            Unmanaged<Work>.fromOpaque(context).release()
            throw StartError(code: code)
        }
    }

    /// Runs `work` on a new thread that ends by itself (nobody joins it). False when the
    /// system refuses a thread.
    @discardableResult
    public static func detach(_ work: sending @escaping () -> Void) -> Bool {
        guard let thread = try? start(work) else { return false }
        thread.detach()
        return true
    }

    /// Waits for the thread to end. From the thread itself it detaches it instead.
    public func join() {
        if isCurrent { pthread_detach(id) } else { pthread_join(id, nil) }
    }

    /// Lets the thread end by itself.
    public func detach() { pthread_detach(id) }

    /// Whether the calling thread is this one.
    public var isCurrent: Bool { pthread_equal(id, pthread_self()) != 0 }
}

/// The closure a new thread runs, handed to it whole (only that thread touches it).
private final class Work: @unchecked Sendable {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}
