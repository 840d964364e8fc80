import JotterHTTP
import Synchronization

/// Requests per token (or session): a bucket of `perMinute` requests, refilled evenly over a
/// minute. `AuthenticationMiddleware` takes one per request with credentials, at its head, and
/// puts the headers on the answer: `RateLimit-Policy: N;w=60` and
/// `RateLimit: limit=N, remaining=R, reset=S` (the IETF httpapi draft's fields); beyond the
/// limit the request is refused with `429` and `Retry-After`. Requests without credentials
/// (`--auth off`) are not counted.
final class RequestRateLimit: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    /// What one request left in its bucket, for the headers of its answer.
    struct Left: Sendable {
        var remaining: Int
        var reset: Int
    }

    let limit: Int
    let policy: String
    private let prefix: String
    private let buckets = Mutex<[Int64: Bucket]>([:])

    init(perMinute: Int) {
        limit = perMinute
        policy = "\(perMinute);w=60"
        prefix = "limit=\(perMinute), remaining="
    }

    /// Takes one request from credential `id`'s bucket, or throws `429`.
    func take(_ id: Int64) throws(HTTPError) -> Left {
        let now = SignInLimiter.now(), rate = Double(limit) / 60, capacity = Double(limit)
        let (allowed, tokens): (Bool, Double) = buckets.withLock { buckets in
            var bucket = buckets[id] ?? Bucket(tokens: capacity, updated: now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[id] = bucket
            return (allowed, bucket.tokens)
        }
        guard allowed else {
            let wait = max(1, Int(((1 - tokens) / rate).rounded(.up)))
            throw HTTPError(HTTPStatus(429), detail: "more than \(limit) requests a minute with this token: try again in \(wait) s",
                            headers: HTTPHeaders([("Retry-After", String(wait)), ("RateLimit-Policy", policy),
                                                  ("RateLimit", "limit=\(limit), remaining=0, reset=\(wait)")]))
        }
        // Seconds until the bucket is full again.
        return Left(remaining: Int(tokens), reset: Int(((capacity - tokens) / rate).rounded(.up)))
    }

    /// The two headers, on `response`.
    func stamp(_ response: inout Response, _ left: Left) {
        response.headers.add("RateLimit-Policy", policy)
        response.headers.add("RateLimit", prefix + String(left.remaining) + ", reset=" + String(left.reset))
    }
}
