#if canImport(Glibc)
import Glibc
#endif
import JotterHTTP
import JotterStore
import JotterStoreHTTP
import Synchronization
import JotterSystem

/// Verifies credentials and keeps what it verified in memory, so that an authenticated request
/// costs no database round trip: a token or session is read from the store once, then again
/// only after `refreshInterval` seconds (for changes made by another process on the same data
/// folder). Changes made through this server — a revoked token, a removed user, a new
/// password — drop the cached entries at once, so they take effect on the next request.
public final class Accounts: Sendable {
    public let store: any AccountStore
    public let mode: AuthMode
    let events: EventBroadcaster
    /// Seconds a verified credential is trusted without reading it again.
    let refreshInterval: Int64
    /// How often, at most, `last_used_at` is written for one credential.
    static let lastUsedResolution: Int64 = 60
    /// How long a web session lasts.
    public let sessionLifetime: Int64
    /// Where every Argon2id hash of the server runs: as many at once as the cores, a short queue.
    public let hashing: PasswordHashing
    /// Credentials that were no good (malformed or unknown), per client address (`failed A`
    /// in the limit counters): burst and seconds per token; nil for no limit.
    let failedChecks: (burst: Double, interval: Double)?
    /// Where `failedChecks` counts (shared by every instance with PostgreSQL).
    let counters: any LimitCounters
    /// Tokens (unrevoked, unexpired) one user may have; 0 for no limit.
    public let tokensPerUser: Int

    private struct Entry {
        var credential: CredentialRecord
        var user: UserRecord
        var readAt: Int64
    }

    /// Verified credentials by their secret.
    private let cache = Mutex<[String: Entry]>([:])
    /// Whose data a request without credentials under `--auth off` reaches, and when it was read.
    private let anonymous = Mutex<(owner: Owner, user: UserRecord?, readAt: Int64)?>(nil)

    public init(
        store: any AccountStore, mode: AuthMode, events: EventBroadcaster,
        refreshInterval: Int64 = 10, sessionLifetime: Int64 = 14 * 24 * 3600,
        hashing: PasswordHashing = PasswordHashing(),
        failedChecksBurst: Int = 100, failedChecksRefillSeconds: Double = 1, tokensPerUser: Int = 100,
        counters: any LimitCounters = MemoryLimitCounters()
    ) {
        self.hashing = hashing
        failedChecks = failedChecksBurst > 0 ? (Double(failedChecksBurst), failedChecksRefillSeconds) : nil
        self.counters = counters
        self.tokensPerUser = tokensPerUser
        self.store = store
        self.mode = mode
        self.events = events
        self.refreshInterval = refreshInterval
        self.sessionLifetime = sessionLifetime
    }

    // MARK: - Credentials

    /// The principal for `secret`, or `401` when it is malformed, unknown, revoked or expired.
    ///
    /// A secret seen in the last `refreshInterval` seconds is found in memory — by the secret
    /// itself, which every request carries anyway — and costs no format check, no hash and no
    /// database read; any other is checked (prefix, checksum), hashed and read from the store.
    ///
    /// A secret never verified here, sent from `address`, first passes the failure limit of
    /// that address (`failedChecks`): once it has sent too many secrets that were no good, such
    /// requests are `429` with `Retry-After` before anything is looked up.
    public func verify(_ secret: Substring, viaCookie: Bool, from address: String? = nil) throws(HTTPError) -> Principal {
        let key = String(secret)
        let clock = Int64(MonotonicClock.seconds())
        var entry: Entry
        let cached = cache.withLock { $0[key] }
        if let cached, clock - cached.readAt < refreshInterval {
            entry = cached
        } else {
            // Guesses: a secret not known here counts against its address when it fails.
            let guess = cached == nil ? address.flatMap { address in failedChecks.map { ($0, "failed " + SignInLimiter.limitKey(address)) } } : nil
            if let (failures, key) = guess {
                // Looks only (cost 0): a failure spends one below.
                let wait: Double
                do {
                    wait = try counters.take([key], capacity: failures.burst, interval: failures.interval, cost: 0).wait(interval: failures.interval)
                } catch {
                    throw Self.unavailable(error)
                }
                if wait > 0 {
                    let seconds = max(1, Int(wait.rounded(.up)))
                    throw HTTPError(
                        HTTPStatus(429), detail: "too many unknown credentials from this address: try again in \(seconds) s",
                        headers: HTTPHeaders([("Retry-After", String(seconds))]))
                }
            }
            // The cookie carries only sessions; the Authorization header either kind.
            guard let kind = Secret.kind(of: secret), kind == .session || !viaCookie else {
                if let (failures, key) = guess { _ = try? counters.take([key], capacity: failures.burst, interval: failures.interval) }
                throw Self.unauthorized("the credential is malformed", invalid: true)
            }
            let stored: (CredentialRecord, UserRecord)?
            do { stored = try store.credential(digest: Secret.digest(secret)) } catch {
                // Not an answer about the credential: neither 401 nor a cached "unknown".
                throw Self.unavailable(error)
            }
            guard let found = stored else {
                if let (failures, key) = guess { _ = try? counters.take([key], capacity: failures.burst, interval: failures.interval) }
                cache.withLock { _ = $0.removeValue(forKey: key) }
                // Gone from the store (its user removed on the data folder): so are its streams.
                if let cached { forget(credential: cached.credential.id) }
                throw Self.unauthorized("the credential is not known", invalid: true)
            }
            entry = Entry(credential: found.0, user: found.1, readAt: clock)
            let read = entry
            cache.withLock { $0[key] = read }
        }
        guard entry.credential.kind == .session || !viaCookie else { throw Self.unauthorized("the credential is malformed", invalid: true) }
        let now = WallClock.seconds()
        guard entry.credential.isValid(at: now) else {
            // Revoked or expired, perhaps by another process: its streams end too.
            forget(credential: entry.credential.id)
            throw Self.unauthorized(entry.credential.revokedAt != nil ? "the credential was revoked" : "the credential has expired", invalid: true)
        }
        if now - (entry.credential.lastUsedAt ?? 0) >= Self.lastUsedResolution {
            entry.credential.lastUsedAt = now
            store.submit(.markUsed(id: entry.credential.id, at: now)) { _ in }
            let used = entry
            cache.withLock { $0[key] = used }
        }
        return Principal(user: entry.user, owner: entry.user.owner, credential: entry.credential, viaCookie: viaCookie)
    }

    /// Checks again, against the store, every credential that open event streams were opened
    /// with and that was read more than `refreshInterval` seconds ago; the streams of one that
    /// was revoked, expired or removed meanwhile (by another process: `jotter tokens revoke
    /// --data`, `jotter users remove --data`) end. A failed read ends nothing.
    public func recheckStreams() {
        let open = events.openCredentials
        guard !open.isEmpty else { return }
        let clock = Int64(MonotonicClock.seconds())
        let due = cache.withLock { cache in
            cache.filter { open.contains($0.value.credential.id) && clock - $0.value.readAt >= refreshInterval }.map(\.key)
        }
        for secret in due {
            // The request path's own check: it reads the store, refreshes the entry, and ends the
            // streams of a credential that is no longer good.
            _ = try? verify(Substring(secret), viaCookie: false)
        }
    }

    private let recheck = Mutex<PeriodicTask?>(nil)

    /// Runs `recheckStreams()` every second on a thread of its own, until `stopRechecking()`:
    /// a stream's credential is read again once it is `refreshInterval` seconds old, so a
    /// revocation elsewhere ends its streams as soon as it stops new requests.
    public func startRechecking() {
        let task = PeriodicTask(every: 1, firstAfter: 1) { [self] in recheckStreams() }
        recheck.withLock { $0 = task }
        task.start()
    }

    /// Ends the thread of `startRechecking()`.
    public func stopRechecking() { recheck.withLock { $0 }?.stop() }

    /// A request without credentials: `401` when they are required, else the anonymous principal;
    /// `503` when the store cannot say who the first user is (nothing is cached then).
    public func anonymousPrincipal() throws(HTTPError) -> Principal {
        guard mode == .off else { throw Self.unauthorized("this server needs a token (Authorization: Bearer jot_…) or a session", invalid: false) }
        return Principal(user: nil, owner: try firstUser().owner)
    }

    /// Whether anyone could sign in: once there is a user, under either mode (read as the
    /// anonymous principal is, at most every `refreshInterval`).
    public func hasUsers() throws(HTTPError) -> Bool {
        try firstUser().user != nil
    }

    /// The first user, whose the notes of requests without credentials are under `--auth off`.
    private func firstUser() throws(HTTPError) -> (owner: Owner, user: UserRecord?) {
        let clock = Int64(MonotonicClock.seconds())
        if let known = anonymous.withLock({ $0 }), clock - known.readAt < refreshInterval {
            return (known.owner, known.user)
        }
        let first: UserRecord?
        do { first = try store.users().first } catch { throw Self.unavailable(error) }
        let owner = first?.owner ?? .unclaimed
        anonymous.withLock { $0 = (owner, first, clock) }
        return (owner, first)
    }

    /// Issues a new secret of `kind` for `user`; the secret is returned once and only its
    /// SHA-256 is stored.
    public func issue(
        _ kind: CredentialKind, for user: UserRecord, label: String, expiresAt: Int64?,
        completion: @escaping @Sendable (Result<(secret: String, record: CredentialRecord), StoreError>) -> Void
    ) {
        let secret = Secret.make(prefix: kind == .token ? Secret.tokenPrefix : Secret.sessionPrefix)
        store.submit(.issue(userID: user.id, kind: kind, label: label, digest: Secret.digest(secret), expiresAt: expiresAt)) { result in
            completion(
                result.flatMap { outcome in
                    guard case .credential(let record) = outcome else { return .failure(StoreError.invalidArgument) }
                    return .success((secret, record))
                })
        }
    }

    /// `409` when `user` has `tokensPerUser` tokens already (revoked and expired ones do not
    /// count), `503` when they cannot be read: asked before a token is issued.
    public func checkRoomForToken(_ user: UserRecord) throws(HTTPError) {
        guard tokensPerUser > 0 else { return }
        let count: Int
        do {
            let now = WallClock.seconds()
            count = try store.credentials(userID: user.id, kind: .token).filter { $0.isValid(at: now) }.count
        } catch {
            throw Self.unavailable(error)
        }
        guard count < tokensPerUser else {
            throw HTTPError(
                HTTPStatus(409), detail: "\(user.name) has \(count) tokens, the most one user may have: revoke one first (jotter tokens revoke)")
        }
    }

    /// Revokes credential `id` (only `userID`'s when given); effective on the next request, and
    /// its open event streams end.
    public func revoke(id: Int64, userID: Int64?, completion: @escaping @Sendable (Result<CredentialRecord?, StoreError>) -> Void) {
        store.submit(.revoke(id: id, userID: userID)) { [self] result in
            if case .success(.credential(let record)) = result { forget(credential: record.id) }
            completion(result.map { if case .credential(let record) = $0 { record } else { nil } })
        }
    }

    /// Drops the cached entries of a credential and ends its event streams.
    public func forget(credential id: Int64) {
        cache.withLock { cache in cache = cache.filter { $0.value.credential.id != id } }
        events.end(credential: id)
    }

    /// Drops everything cached about `userID` (removed, or a new password) and ends their streams.
    public func forget(user userID: Int64) {
        let ended = cache.withLock { cache -> [Int64] in
            let ids = cache.values.filter { $0.user.id == userID }.map(\.credential.id)
            cache = cache.filter { $0.value.user.id != userID }
            return ids
        }
        anonymous.withLock { $0 = nil }
        for id in ended { events.end(credential: id) }
    }

    /// A user was added: the anonymous owner may have changed.
    public func usersChanged() {
        anonymous.withLock { $0 = nil }
    }

    // MARK: - Passwords

    /// The user whose name and password these are, or nil. An unknown name costs the same
    /// Argon2id verification as a known one. `503` when the store cannot be read: a failed
    /// read is not a wrong password.
    public func check(name: String, password: String) throws(HTTPError) -> UserRecord? {
        let user: UserRecord?, hash: String?
        do {
            user = try store.user(named: name)
            hash = try user.flatMap { try store.passwordHash(userID: $0.id) }
        } catch {
            throw Self.unavailable(error)
        }
        guard let user, let hash else {
            _ = PasswordHash.verify(password, hash: PasswordHash.decoy)
            return nil
        }
        return PasswordHash.verify(password, hash: hash) ? user : nil
    }

    // MARK: - Answers

    /// `503` with `Retry-After` for a store that failed while authenticating: the request is
    /// neither refused as unauthenticated nor let through as someone else.
    static func unavailable(_ error: any Error) -> HTTPError {
        StoreErrors.unavailable("the accounts", cause: "\(error)")
    }

    /// `401` with a `WWW-Authenticate` challenge (RFC 6750: `error="invalid_token"` when one was
    /// given but is no good).
    static func unauthorized(_ detail: String, invalid: Bool) -> HTTPError {
        let challenge = invalid ? "Bearer realm=\"jotter\", error=\"invalid_token\"" : "Bearer realm=\"jotter\""
        return HTTPError(.unauthorized, detail: detail, headers: HTTPHeaders([("WWW-Authenticate", challenge)]))
    }
}
