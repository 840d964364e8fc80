import Synchronization

/// A monotonic clock in seconds that only moves when told: for limits and budgets whose clock
/// a test passes in (`read`), so nothing depends on how fast the machine runs.
public final class SteppedClock: Sendable {
    private let now = Mutex<Double>(1000)

    public init() {}

    /// The clock, as the code under test reads it.
    public var read: @Sendable () -> Double { { [self] in now.withLock { $0 } } }

    /// Moves it on by `seconds`.
    public func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
}
