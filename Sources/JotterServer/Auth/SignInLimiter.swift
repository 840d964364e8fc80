#if canImport(Glibc)
import Glibc
#endif
import JotterHTTP
import Synchronization

/// Limits sign-in attempts per client address and per user name, so passwords cannot be
/// guessed quickly from one place or against one account from many: each key has a bucket of
/// `burst` attempts refilled at one per `interval` seconds. A refused attempt is `429` with
/// `Retry-After`, answered before any password is checked.
final class SignInLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let burst: Double
    let interval: Double
    private let buckets = Mutex<[String: Bucket]>([:])

    init(burst: Int = 10, interval: Double = 6) {
        self.burst = Double(burst)
        self.interval = interval
    }

    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Takes one attempt from the address's and the name's buckets, or throws `429` naming
    /// the seconds until one is free.
    func attempt(address: String, name: String, now: Double = SignInLimiter.now()) throws(HTTPError) {
        let keys = ["address " + address, "name " + name.lowercased()]
        let wait: Double = buckets.withLock { buckets in
            if buckets.count > 100_000 { buckets = buckets.filter { now - $0.value.updated < burst * interval } }
            var refilled = keys.map { key -> Bucket in
                var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
                bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) / interval)
                bucket.updated = now
                return bucket
            }
            let wait = refilled.map { $0.tokens >= 1 ? 0 : (1 - $0.tokens) * interval }.max() ?? 0
            if wait == 0 { for index in refilled.indices { refilled[index].tokens -= 1 } }
            for (key, bucket) in zip(keys, refilled) { buckets[key] = bucket }
            return wait
        }
        guard wait > 0 else { return }
        let seconds = Int(wait.rounded(.up))
        throw HTTPError(HTTPStatus(429), detail: "too many sign-in attempts: try again in \(seconds) s",
                        headers: HTTPHeaders([("Retry-After", String(seconds))]))
    }
}
