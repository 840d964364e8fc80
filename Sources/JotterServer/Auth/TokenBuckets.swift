#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A token bucket: `capacity` tokens, refilled evenly at one every `interval` seconds.
struct TokenBucket: Sendable {
    var tokens: Double
    var updated: Double

    /// Monotonic seconds.
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Adds what `interval` has earned since the last update, up to `capacity`.
    mutating func refill(capacity: Double, interval: Double, now: Double) {
        tokens = min(capacity, tokens + (now - updated) / interval)
        updated = now
    }

    /// Seconds until one token is there (0 when one is).
    func wait(interval: Double) -> Double { tokens >= 1 ? 0 : (1 - tokens) * interval }
}

/// Token buckets by key, all of one size and one refill rate, behind one lock; buckets that
/// are full again are dropped once there are many. What the request and failure limits of
/// authentication count with.
final class TokenBuckets<Key: Hashable & Sendable>: Sendable {
    let capacity: Double
    /// Seconds per token.
    let interval: Double
    private let buckets = Mutex<[Key: TokenBucket]>([:])

    init(capacity: Int, interval: Double) {
        self.capacity = Double(max(1, capacity))
        self.interval = interval
    }

    /// Runs `body` on `key`'s bucket, refilled to `now` (a new key starts full).
    func with<R>(_ key: Key, now: Double = TokenBucket.now(), _ body: (inout TokenBucket) -> R) -> R {
        buckets.withLock { buckets in
            if buckets.count > 100_000 { buckets = buckets.filter { now - $0.value.updated < capacity * interval } }
            var bucket = buckets[key] ?? TokenBucket(tokens: capacity, updated: now)
            bucket.refill(capacity: capacity, interval: interval, now: now)
            let result = body(&bucket)
            buckets[key] = bucket
            return result
        }
    }

    /// Takes a token when there is one; the seconds to wait otherwise (0 when taken).
    func take(_ key: Key, now: Double = TokenBucket.now()) -> Double {
        with(key, now: now) { bucket in
            let wait = bucket.wait(interval: interval)
            if wait == 0 { bucket.tokens -= 1 }
            return wait
        }
    }

    /// Seconds until `key` has a token (0 when it has), taking none.
    func wait(_ key: Key, now: Double = TokenBucket.now()) -> Double {
        with(key, now: now) { $0.wait(interval: interval) }
    }

    /// Takes a token whether or not there is one (down to none).
    func spend(_ key: Key, now: Double = TokenBucket.now()) {
        with(key, now: now) { $0.tokens = max(0, $0.tokens - 1) }
    }
}
