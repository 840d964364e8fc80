import Glibc
import JotterHTTP
import JotterStore

/// Limits sign-in attempts, so passwords cannot be guessed quickly from one place nor against
/// one account from many, without letting one guesser lock a user out. Each key has a bucket
/// of attempts refilled evenly:
///
/// - per client address (`address A`), every attempt: `burst`, then one every `interval` seconds;
/// - per (name, address) (`pair N A`), failed attempts: `burst`, one every `interval` seconds —
///   one guesser against one name is held at that pace;
/// - per name (`name N`), failed attempts from every address: `nameFactor` times as many
///   (`burst × nameFactor`, one every `interval / nameFactor` seconds), so a guesser at its own
///   pace cannot empty it. When it is empty, only addresses where the name signed in
///   successfully in the last `trustSeconds` may still try (within their own buckets).
///
/// Where the name signed in is a bucket too (`known N A`, capacity 1, one token per
/// `trustSeconds`): emptied by a sign-in, so it is known while the bucket is not full again.
/// A refused attempt is `429` with `Retry-After`, answered before any password is checked.
///
/// The buckets are in `counters`: this process's memory with SQLite, the database's
/// `limit_buckets` with PostgreSQL — there every instance counts the same attempts.
final class SignInLimiter: Sendable {
    let burst: Double
    let interval: Double
    let nameFactor: Double
    let trustSeconds: Double
    let counters: any LimitCounters

    init(
        burst: Int = 10, interval: Double = 6, nameFactor: Int = 10, trustSeconds: Double = 30 * 86400,
        counters: any LimitCounters = MemoryLimitCounters()
    ) {
        self.burst = Double(burst)
        self.interval = interval
        self.nameFactor = Double(max(1, nameFactor))
        self.trustSeconds = trustSeconds
        self.counters = counters
    }

    /// The part of a client address its limits count under: an IPv4 address whole (an
    /// IPv4-mapped IPv6 address as IPv4); an IPv6 address by its /64, the block one subscriber
    /// is given, so that a client cannot take a fresh allowance from each of its 2⁶⁴ addresses.
    /// Text that is neither is its own key.
    static func limitKey(_ address: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard address.contains(":"), inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    private struct Keys {
        var address, pair, name, known: String

        init(address: String, name: String) {
            let name = name.lowercased()
            let address = SignInLimiter.limitKey(address)
            self.address = "address " + address
            pair = "pair " + name + " " + address
            self.name = "name " + name
            known = "known " + name + " " + address
        }
    }

    /// Takes one attempt from the address's bucket when the address, the (name, address) pair
    /// and the name (unless this address is known for it) all have one left; else throws `429`
    /// naming the seconds until they do (`503` when the shared counters cannot be reached).
    func attempt(address: String, name: String) throws {
        let keys = Keys(address: address, name: name)
        // Looks first (cost 0): the pair and the name lose attempts only by failures.
        let pair = try counters.take([keys.pair], capacity: burst, interval: interval, cost: 0)
        var wait = pair.wait(interval: interval)
        let known = try counters.take([keys.known], capacity: 1, interval: trustSeconds, cost: 0).tokens[0] < 1
        if !known {
            let nameInterval = interval / nameFactor
            wait = max(
                wait,
                try counters.take([keys.name], capacity: burst * nameFactor, interval: nameInterval, cost: 0)
                    .wait(interval: nameInterval))
        }
        if wait == 0 { wait = try counters.take([keys.address], capacity: burst, interval: interval).wait(interval: interval) }
        guard wait > 0 else { return }
        let seconds = max(1, Int(wait.rounded(.up)))
        throw HTTPError(
            HTTPStatus(429), detail: "too many sign-in attempts: try again in \(seconds) s",
            headers: HTTPHeaders([("Retry-After", String(seconds))]))
    }

    /// An attempt that `attempt` let through was never checked (the server was too busy):
    /// the address gets it back.
    func refund(address: String, name: String) {
        _ = try? counters.take([Keys(address: address, name: name).address], capacity: burst, interval: interval, cost: -1)
    }

    /// The password was wrong: the (name, address) pair and the name each lose an attempt.
    func failed(address: String, name: String) {
        let keys = Keys(address: address, name: name)
        _ = try? counters.take([keys.pair], capacity: burst, interval: interval)
        _ = try? counters.take([keys.name], capacity: burst * nameFactor, interval: interval / nameFactor)
    }

    /// The name signed in from this address: its pair's failures are forgotten, and the
    /// address may sign in as the name even while the name's own bucket is empty.
    func succeeded(address: String, name: String) {
        let keys = Keys(address: address, name: name)
        _ = try? counters.take([keys.pair], capacity: burst, interval: interval, cost: -burst)
        // Known from now on: the bucket filled, then emptied.
        _ = try? counters.take([keys.known], capacity: 1, interval: trustSeconds, cost: -1)
        _ = try? counters.take([keys.known], capacity: 1, interval: trustSeconds)
    }
}
