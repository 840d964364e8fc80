import JotterHTTP
import Synchronization

/// Limits sign-in attempts, so passwords cannot be guessed quickly from one place nor against
/// one account from many, without letting one guesser lock a user out. Each key has a bucket
/// of attempts refilled evenly:
///
/// - per client address, every attempt: `burst`, then one every `interval` seconds;
/// - per (name, address), failed attempts: `burst`, one every `interval` seconds — one
///   guesser against one name is held at that pace;
/// - per name, failed attempts from every address: `nameFactor` times as many (`burst ×
///   nameFactor`, one every `interval / nameFactor` seconds), so a guesser at its own pace
///   cannot empty it. When it is empty, only addresses where the name signed in successfully
///   in the last `trustSeconds` may still try (within their own buckets).
///
/// A refused attempt is `429` with `Retry-After`, answered before any password is checked.
final class SignInLimiter: Sendable {
    let burst: Double
    let interval: Double
    let nameFactor: Double
    let trustSeconds: Double
    private struct State {
        var buckets: [String: TokenBucket] = [:]
        /// "name address" → when the name last signed in from there.
        var trusted: [String: Double] = [:]
    }
    private let state = Mutex(State())

    init(burst: Int = 10, interval: Double = 6, nameFactor: Int = 10, trustSeconds: Double = 30 * 86400) {
        self.burst = Double(burst)
        self.interval = interval
        self.nameFactor = Double(max(1, nameFactor))
        self.trustSeconds = trustSeconds
    }

    static func now() -> Double { TokenBucket.now() }

    private enum Key {
        case address, pair, name
    }

    private func keys(address: String, name: String) -> [(Key, String)] {
        let name = name.lowercased()
        return [(.address, "address " + address), (.pair, "pair " + name + " " + address), (.name, "name " + name)]
    }

    private func capacity(_ key: Key) -> (burst: Double, interval: Double) {
        key == .name ? (burst * nameFactor, interval / nameFactor) : (burst, interval)
    }

    private func refilled(_ key: (Key, String), in state: inout State, now: Double) -> TokenBucket {
        let (burst, interval) = capacity(key.0)
        var bucket = state.buckets[key.1] ?? TokenBucket(tokens: burst, updated: now)
        bucket.refill(capacity: burst, interval: interval, now: now)
        return bucket
    }

    /// Takes one attempt from the address's bucket when the address, the (name, address) pair
    /// and the name (unless this address is trusted for it) all have one left; else throws
    /// `429` naming the seconds until they do.
    func attempt(address: String, name: String, now: Double = SignInLimiter.now()) throws(HTTPError) {
        let keys = keys(address: address, name: name)
        let trustKey = name.lowercased() + " " + address
        let wait: Double = state.withLock { state in
            if state.buckets.count > 100_000 {
                state.buckets = state.buckets.filter { now - $0.value.updated < burst * interval }
                state.trusted = state.trusted.filter { now - $0.value < trustSeconds }
            }
            let trusted = state.trusted[trustKey].map { now - $0 < trustSeconds } ?? false
            var buckets = keys.map { refilled($0, in: &state, now: now) }
            var wait = 0.0
            for (index, key) in keys.enumerated() where !(key.0 == .name && trusted) {
                wait = max(wait, buckets[index].wait(interval: capacity(key.0).interval))
            }
            if wait == 0 { buckets[0].tokens -= 1 }
            for (key, bucket) in zip(keys, buckets) { state.buckets[key.1] = bucket }
            return wait
        }
        guard wait > 0 else { return }
        let seconds = Int(wait.rounded(.up))
        throw HTTPError(HTTPStatus(429), detail: "too many sign-in attempts: try again in \(seconds) s",
                        headers: HTTPHeaders([("Retry-After", String(seconds))]))
    }

    /// An attempt that `attempt` let through was never checked (the server was too busy):
    /// the address gets it back.
    func refund(address: String, name: String, now: Double = SignInLimiter.now()) {
        let key = keys(address: address, name: name)[0]
        state.withLock { state in
            var bucket = refilled(key, in: &state, now: now)
            bucket.tokens = min(capacity(key.0).burst, bucket.tokens + 1)
            state.buckets[key.1] = bucket
        }
    }

    /// The password was wrong: the (name, address) pair and the name each lose an attempt.
    func failed(address: String, name: String, now: Double = SignInLimiter.now()) {
        let keys = keys(address: address, name: name).dropFirst()
        state.withLock { state in
            for key in keys {
                var bucket = refilled(key, in: &state, now: now)
                bucket.tokens = max(0, bucket.tokens - 1)
                state.buckets[key.1] = bucket
            }
        }
    }

    /// The name signed in from this address: its pair's failures are forgotten, and the
    /// address may sign in as the name even while the name's own bucket is empty.
    func succeeded(address: String, name: String, now: Double = SignInLimiter.now()) {
        let pair = keys(address: address, name: name)[1]
        state.withLock { state in
            state.buckets[pair.1] = nil
            state.trusted[name.lowercased() + " " + address] = now
        }
    }
}
