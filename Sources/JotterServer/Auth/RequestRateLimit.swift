import JotterHTTP

/// Requests per token (or session) and per user: a bucket of `perMinute` requests for each
/// credential and one of `perUserMinute` for each user (all their tokens and sessions
/// together, so more tokens give no more requests), refilled evenly over a minute.
/// `AuthenticationMiddleware` takes one from both per request with credentials, at its head,
/// and puts the headers of the nearer limit on the answer: `RateLimit-Policy: N;w=60` and
/// `RateLimit: limit=N, remaining=R, reset=S` (the IETF httpapi draft's fields); beyond a
/// limit the request is refused with `429` and `Retry-After`. Requests without credentials
/// (`--auth off`) are not counted.
final class RequestRateLimit: Sendable {
    /// What one request left in its buckets, for the headers of its answer.
    struct Left: Sendable {
        var limit: Int
        var remaining: Int
        var reset: Int
    }

    let limit: Int
    let userLimit: Int
    private let credentials: TokenBuckets<Int64>
    private let users: TokenBuckets<Int64>

    init(perMinute: Int, perUserMinute: Int? = nil) {
        limit = perMinute
        userLimit = perUserMinute ?? perMinute
        credentials = TokenBuckets(capacity: perMinute, interval: 60 / Double(perMinute))
        users = TokenBuckets(capacity: userLimit, interval: 60 / Double(userLimit))
    }

    /// Takes one request from credential `id`'s bucket and from user `userID`'s, or throws
    /// `429` (taking from neither).
    func take(_ id: Int64, user userID: Int64) throws(HTTPError) -> Left {
        let now = TokenBucket.now()
        // The user's bucket first: a refusal there costs the credential nothing.
        let userWait = users.take(userID, now: now)
        if userWait > 0 { throw refusal(limit: userLimit, wait: userWait, of: "by this user with all their tokens and sessions") }
        let wait = credentials.take(id, now: now)
        if wait > 0 {
            users.with(userID, now: now) { $0.tokens = min(users.capacity, $0.tokens + 1) }
            throw refusal(limit: limit, wait: wait, of: "with this token")
        }
        let mine = credentials.with(id, now: now) { $0.tokens }, theirs = users.with(userID, now: now) { $0.tokens }
        // The headers of the nearer limit; reset: seconds until that bucket is full again.
        let (limit, tokens, interval) = theirs < mine ? (userLimit, theirs, users.interval) : (self.limit, mine, credentials.interval)
        return Left(limit: limit, remaining: Int(tokens), reset: Int(((Double(limit) - tokens) * interval).rounded(.up)))
    }

    private func refusal(limit: Int, wait: Double, of whom: String) -> HTTPError {
        let seconds = max(1, Int(wait.rounded(.up)))
        return HTTPError(HTTPStatus(429), detail: "more than \(limit) requests a minute \(whom): try again in \(seconds) s",
                         headers: HTTPHeaders([("Retry-After", String(seconds)), ("RateLimit-Policy", "\(limit);w=60"),
                                               ("RateLimit", "limit=\(limit), remaining=0, reset=\(seconds)")]))
    }

    /// The two headers, on `response`.
    func stamp(_ response: inout Response, _ left: Left) {
        response.headers.add("RateLimit-Policy", String(left.limit) + ";w=60")
        response.headers.add("RateLimit", "limit=" + String(left.limit) + ", remaining=" + String(left.remaining) + ", reset=" + String(left.reset))
    }
}
