#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import JotterSystem

/// Where the token buckets of the server's limits live (the sign-in limiter, the requests a
/// minute per token): this process's memory (`MemoryLimitCounters`, with SQLite: one process
/// serves the data folder), or a table every instance shares (`PostgresStore.limitCounters`),
/// so that N instances allow what one does.
///
/// A bucket holds up to `capacity` tokens and gains one every `interval` seconds; a bucket
/// never seen is full. `take` takes `cost` tokens (one unless told) from every bucket of `keys`
/// when each has at least one, and from none otherwise — atomically, also across instances. A
/// cost of 0 only looks (what a failure limit checks before the failure is known); a negative
/// cost gives tokens back, up to `capacity`, and is always allowed.
public protocol LimitCounters: Sendable {
    func take(_ keys: [String], capacity: Double, interval: Double, cost: Double) throws(StoreError) -> LimitTake
}

extension LimitCounters {
    /// Takes one token from every bucket of `keys` when each has one, from none otherwise.
    public func take(_ keys: [String], capacity: Double, interval: Double) throws(StoreError) -> LimitTake {
        try take(keys, capacity: capacity, interval: interval, cost: 1)
    }

    /// Whether `take` with `cost` is allowed on buckets holding `tokens` (refilled).
    static func allows(_ tokens: [Double], cost: Double) -> Bool {
        cost < 0 || tokens.allSatisfy { $0 >= 1 }
    }
}

/// What `LimitCounters.take` did.
public struct LimitTake: Sendable, Equatable {
    /// Whether a token was taken from every bucket.
    public var allowed: Bool
    /// The tokens each bucket holds now (in the order of the keys), after the take.
    public var tokens: [Double]

    /// Seconds until every bucket has a token again (0 when allowed).
    public func wait(interval: Double) -> Double {
        allowed ? 0 : tokens.map { $0 >= 1 ? 0 : (1 - $0) * interval }.max() ?? 0
    }
}

/// Token buckets in this process's memory (what a single instance needs; no I/O).
public final class MemoryLimitCounters: LimitCounters {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    private let clock: @Sendable () -> Double

    /// `clock`: seconds on a monotonic clock (tests may pass their own).
    public init(clock: @escaping @Sendable () -> Double = MonotonicClock.seconds) {
        self.clock = clock
    }

    public func take(_ keys: [String], capacity: Double, interval: Double, cost: Double) throws(StoreError) -> LimitTake {
        let now = clock()
        return buckets.withLock { buckets in
            // Buckets full again are the same as none: dropped when there are many.
            if buckets.count > 100_000 { buckets = buckets.filter { now - $0.value.updated < capacity * interval } }
            var refilled = keys.map { key -> Bucket in
                var bucket = buckets[key] ?? Bucket(tokens: capacity, updated: now)
                bucket.tokens = min(capacity, bucket.tokens + (now - bucket.updated) / interval)
                bucket.updated = now
                return bucket
            }
            let allowed = Self.allows(refilled.map(\.tokens), cost: cost)
            if allowed { for index in refilled.indices { refilled[index].tokens = min(capacity, refilled[index].tokens - cost) } }
            for (key, bucket) in zip(keys, refilled) { buckets[key] = bucket }
            return LimitTake(allowed: allowed, tokens: refilled.map(\.tokens))
        }
    }
}
