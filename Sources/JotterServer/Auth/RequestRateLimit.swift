import JotterHTTP
import JotterStore

/// Requests per token (or session): a bucket of `perMinute` requests, refilled evenly over a
/// minute. `AuthenticationMiddleware` takes one per request with credentials, at its head, and
/// puts the headers on the answer: `RateLimit-Policy: N;w=60` and
/// `RateLimit: limit=N, remaining=R, reset=S` (the IETF httpapi draft's fields); beyond the
/// limit the request is refused with `429` and `Retry-After`. Requests without credentials
/// (`--auth off`) are not counted.
///
/// The buckets are in `counters`: this process's memory with SQLite; with PostgreSQL the
/// shared `limit_buckets` table, so a token gets `perMinute` across all instances (one
/// statement per request, measured in docs/deployment.md).
final class RequestRateLimit: Sendable {
    /// What one request left in its bucket, for the headers of its answer.
    struct Left: Sendable {
        var remaining: Int
        var reset: Int
    }

    let limit: Int
    let policy: String
    private let prefix: String
    private let counters: any LimitCounters

    init(perMinute: Int, counters: any LimitCounters = MemoryLimitCounters()) {
        self.counters = counters
        limit = perMinute
        policy = "\(perMinute);w=60"
        prefix = "limit=\(perMinute), remaining="
    }

    /// Takes one request from credential `id`'s bucket, or throws `429` (`503` when the shared
    /// counters cannot be reached).
    func take(_ id: Int64) throws -> Left {
        let rate = Double(limit) / 60, capacity = Double(limit)
        let taken = try counters.take(["token \(id)"], capacity: capacity, interval: 1 / rate)
        let allowed = taken.allowed, tokens = taken.tokens[0]
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
