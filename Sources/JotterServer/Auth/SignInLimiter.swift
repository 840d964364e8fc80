import JotterHTTP
import JotterStore

/// Limits sign-in attempts per client address and per user name, so passwords cannot be
/// guessed quickly from one place or against one account from many: each key has a bucket of
/// `burst` attempts refilled at one per `interval` seconds. A refused attempt is `429` with
/// `Retry-After`, answered before any password is checked.
///
/// The buckets are in `counters`: this process's memory with SQLite, the database's
/// `limit_buckets` with PostgreSQL — there every instance counts the same attempts.
final class SignInLimiter: Sendable {
    let burst: Double
    let interval: Double
    let counters: any LimitCounters

    init(burst: Int = 10, interval: Double = 6, counters: any LimitCounters = MemoryLimitCounters()) {
        self.burst = Double(burst)
        self.interval = interval
        self.counters = counters
    }

    /// Takes one attempt from the address's and the name's buckets, or throws `429` naming
    /// the seconds until one is free (`503` when the shared counters cannot be reached).
    func attempt(address: String, name: String) throws {
        let keys = ["address " + address, "name " + name.lowercased()]
        let wait = try counters.take(keys, capacity: burst, interval: interval).wait(interval: interval)
        guard wait > 0 else { return }
        let seconds = Int(wait.rounded(.up))
        throw HTTPError(HTTPStatus(429), detail: "too many sign-in attempts: try again in \(seconds) s",
                        headers: HTTPHeaders([("Retry-After", String(seconds))]))
    }
}
