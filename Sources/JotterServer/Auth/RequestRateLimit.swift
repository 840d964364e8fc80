import JotterHTTP
import Synchronization

/// Requests per token (or session): a bucket of `perMinute` requests, refilled evenly over a
/// minute. Every answer to a request with credentials carries `RateLimit-Policy: N;w=60` and
/// `RateLimit: limit=N, remaining=R, reset=S` (the IETF httpapi draft's fields); beyond the
/// limit the request is refused at its head with `429` and `Retry-After`. Requests without
/// credentials (`--auth off`) are not counted.
final class RequestRateLimit: Middleware {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    enum Remaining: RequestContextKey { typealias Value = (remaining: Int, reset: Int) }

    let limit: Int
    let policy: String
    private let buckets = Mutex<[Int64: Bucket]>([:])

    init(perMinute: Int) {
        limit = perMinute
        policy = "\(perMinute);w=60"
    }

    func head(_ head: RequestHead, context: inout RequestContext) throws {
        guard let id = context.principal?.credential?.id else { return }
        let now = SignInLimiter.now(), rate = Double(limit) / 60
        let (allowed, tokens): (Bool, Double) = buckets.withLock { buckets in
            var bucket = buckets[id] ?? Bucket(tokens: Double(limit), updated: now)
            bucket.tokens = min(Double(limit), bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[id] = bucket
            return (allowed, bucket.tokens)
        }
        // Seconds until the bucket is full again.
        let reset = Int(((Double(limit) - tokens) / rate).rounded(.up))
        guard allowed else {
            let wait = Int(((1 - tokens) / rate).rounded(.up))
            throw HTTPError(HTTPStatus(429), detail: "more than \(limit) requests a minute with this token: try again in \(wait) s",
                            headers: HTTPHeaders([("Retry-After", String(max(1, wait))), ("RateLimit-Policy", policy),
                                                  ("RateLimit", "limit=\(limit), remaining=0, reset=\(max(1, wait))")]))
        }
        context[Remaining.self] = (Int(tokens), reset)
    }

    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        guard let (remaining, reset) = context[Remaining.self] else { return try next(request, context) }
        let policy = self.policy, limit = self.limit
        return try next(request, context).map { response in
            var response = response
            response.headers.set("RateLimit-Policy", policy)
            response.headers.set("RateLimit", "limit=\(limit), remaining=\(remaining), reset=\(reset)")
            return response
        }
    }
}
