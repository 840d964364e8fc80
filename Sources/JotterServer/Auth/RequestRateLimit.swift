import JotterHTTP
import JotterStore

/// Requests per token (or session) and per user: a bucket of `perMinute` requests for each
/// credential and one of `perUserMinute` for each user (all their tokens and sessions
/// together, so more tokens give no more requests), refilled evenly over a minute.
/// `AuthenticationMiddleware` takes one from both per request with credentials, at its head,
/// and puts the headers of the nearer limit on the answer: `RateLimit-Policy: N;w=60` and
/// `RateLimit: limit=N, remaining=R, reset=S` (the IETF httpapi draft's fields); beyond a
/// limit the request is refused with `429` and `Retry-After`. Requests without credentials
/// (`--auth off`) are not counted.
///
/// The buckets are in `counters`: this process's memory with SQLite; with PostgreSQL the
/// shared `limit_buckets` table, so a token gets `perMinute` across all instances (one
/// statement per request, measured in docs/deployment.md).
final class RequestRateLimit: Sendable {
    /// What one request left in its buckets, for the headers of its answer.
    struct Left: Sendable {
        var limit: Int
        var remaining: Int
        var reset: Int
    }

    let limit: Int
    let userLimit: Int
    private let counters: any LimitCounters

    init(perMinute: Int, perUserMinute: Int? = nil, counters: any LimitCounters = MemoryLimitCounters()) {
        self.counters = counters
        limit = perMinute
        userLimit = max(1, perUserMinute ?? perMinute)
    }

    /// Takes one request from credential `id`'s bucket and from user `userID`'s, or throws
    /// `429` (taking from neither; `503` when the shared counters cannot be reached).
    func take(_ id: Int64, user userID: Int64) throws -> Left {
        let interval = 60 / Double(limit), userInterval = 60 / Double(userLimit)
        let userKey = "user " + String(userID)
        // The user's bucket first: a refusal there costs the credential nothing.
        let theirs = try counters.take([userKey], capacity: Double(userLimit), interval: userInterval)
        guard theirs.allowed else {
            throw refusal(limit: userLimit, wait: theirs.wait(interval: userInterval), of: "by this user with all their tokens and sessions")
        }
        let mine = try counters.take(["token " + String(id)], capacity: Double(limit), interval: interval)
        guard mine.allowed else {
            _ = try? counters.take([userKey], capacity: Double(userLimit), interval: userInterval, cost: -1)
            throw refusal(limit: limit, wait: mine.wait(interval: interval), of: "with this token")
        }
        // The headers of the nearer limit; reset: seconds until that bucket is full again.
        let (limit, tokens, each) =
            theirs.tokens[0] < mine.tokens[0]
            ? (userLimit, theirs.tokens[0], userInterval)
            : (self.limit, mine.tokens[0], interval)
        return Left(limit: limit, remaining: Int(tokens), reset: Int(((Double(limit) - tokens) * each).rounded(.up)))
    }

    private func refusal(limit: Int, wait: Double, of whom: String) -> HTTPError {
        let seconds = max(1, Int(wait.rounded(.up)))
        return HTTPError(
            HTTPStatus(429), detail: "more than \(limit) requests a minute \(whom): try again in \(seconds) s",
            headers: HTTPHeaders([
                ("Retry-After", String(seconds)), ("RateLimit-Policy", "\(limit);w=60"),
                ("RateLimit", "limit=\(limit), remaining=0, reset=\(seconds)"),
            ]))
    }

    /// The two headers, on `response`.
    func stamp(_ response: inout Response, _ left: Left) {
        response.headers.add("RateLimit-Policy", String(left.limit) + ";w=60")
        response.headers.add("RateLimit", "limit=" + String(left.limit) + ", remaining=" + String(left.remaining) + ", reset=" + String(left.reset))
    }
}
