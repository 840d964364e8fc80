/// A stored answer to a request sent with an `Idempotency-Key`: what a retry gets again.
public struct IdempotentAnswer: Sendable, Equatable {
    /// The HTTP status code.
    public var status: Int
    /// The header fields, one `name: value` per line.
    public var head: String
    /// The body; nil when it was not kept (too large, or the owner's budget was spent): the
    /// answer is then a reference to what the request created, `location`.
    public var body: [UInt8]?
    /// The `Location` of what the request created, if it said.
    public var location: String?

    public init(status: Int, head: String, body: [UInt8]?, location: String?) {
        self.status = status
        self.head = head
        self.body = body
        self.location = location
    }

    /// Bytes the answer takes from its owner's budget.
    var bytes: Int64 { Int64(head.utf8.count + (body?.count ?? 0)) }
}

/// What claiming an idempotency key found.
public enum IdempotencyClaim: Sendable, Equatable {
    /// The key is the caller's now: it does the work, then completes or releases the key.
    case claimed
    /// Another request (on this instance or another) holds the key and has not answered.
    case running
    /// The key was used with a different request.
    case mismatch
    /// The key was used with this request; its answer.
    case replay(IdempotentAnswer)
}

/// An `Idempotency-Key` to claim in the transaction of the write it guards (`createNote(…
/// claiming:)`): the claim, the write and what it created (its `Location`) commit together, so
/// a crash between them can neither leave the key claimed by a write that happened (a retry
/// after the lease would write again) nor hold it for one that did not. Until the full answer
/// is stored the key is `.running` (a racing retry gets `409`); a key whose answer never came
/// (the instance stopped) replays, after the lease, as a reference to what was created.
public struct IdempotencyKeyClaim: Sendable, Equatable {
    /// The request's path, a space, the client's key.
    public var key: String
    public var fingerprint: [UInt8]
    /// Unix seconds.
    public var now: Int64

    public init(key: String, fingerprint: [UInt8], now: Int64) {
        self.key = key
        self.fingerprint = fingerprint
        self.now = now
    }
}

/// What a store's `idempotency_keys` row holding a key says (`IdempotencyStatements`): the claim
/// a request with the key gets, and for an unanswered claim with no committed write, past
/// `IdempotencyLimits.answerGrace`, its claimer — whose claim is free once that one is gone.
struct IdempotencyHold {
    var claim: IdempotencyClaim
    var orphan: Int64? = nil
}

/// A keyed write's outcome: done (the key is the caller's, to complete with the full answer),
/// or refused because the key was not free.
public enum KeyedOutcome<Value: Sendable>: Sendable {
    case done(Value)
    /// `.running`, `.mismatch` or `.replay`: nothing was written.
    case refused(IdempotencyClaim)
}

/// A store's `idempotency_keys` statements that a write under a claimed key runs, in the
/// write's transaction; `keyed` is that write, the same on every store.
protocol IdempotencyStatements {
    associatedtype Connection
    /// What names the instance holding a claim, so that another can take over a dead one's.
    associatedtype Claimer
    associatedtype Failure: Error

    /// Claims `key` for `claimer`, or reads what holds it.
    static func claim(
        _ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, claimer: Claimer, on db: Connection
    ) throws(Failure) -> IdempotencyClaim
    /// What holds `key`, read without writing anything: nil when the key is free (a claim would
    /// get `.claimed`), otherwise what a claim would get.
    static func lookup(
        _ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, claimer: Claimer, on db: Connection
    ) throws(Failure) -> IdempotencyClaim?
    /// Inside the write a claimed key guards: records what it created (`location`) and keeps the
    /// key for 24 h, still unanswered (`IdempotencyLimits.pending`).
    static func keepPending(_ key: String, location: String, owner: Owner, now: Int64, on db: Connection) throws(Failure)
    /// Forgets an unanswered claim — not one whose write committed (it has a location).
    static func release(_ key: String, owner: Owner, on db: Connection) throws(Failure)
}

extension IdempotencyStatements {
    /// A write under `claim`, in one transaction: the key claimed first (one answered, still
    /// running or reused for other content refuses it: `.refused`, nothing written), then
    /// `work`, which gives its result and where what it made is (`keepPending`), or no location
    /// when it wrote nothing (the claim is released).
    static func keyed<Value>(
        _ claim: IdempotencyKeyClaim, owner: Owner, claimer: Claimer, on db: Connection,
        _ work: () throws(Failure) -> (Value, location: String?)
    ) throws(Failure) -> KeyedOutcome<Value> {
        let found = try Self.claim(claim.key, fingerprint: claim.fingerprint, owner: owner, now: claim.now, claimer: claimer, on: db)
        guard found == .claimed else { return .refused(found) }
        let (value, location) = try work()
        if let location {
            try keepPending(claim.key, location: location, owner: owner, now: claim.now, on: db)
        } else {
            try release(claim.key, owner: owner, on: db)
        }
        return .done(value)
    }
}

extension IdempotentAnswer {
    /// What a keyed write whose full answer never came replays: a reference to what it created
    /// (`303 See Other` to `location`).
    public static func reference(location: String) -> IdempotentAnswer {
        IdempotentAnswer(status: 201, head: "Location: \(location)\n", body: nil, location: location)
    }
}

/// The limits idempotency keys are kept under.
public enum IdempotencyLimits {
    /// How long a completed key answers again: 24 hours.
    public static let lifetime: Int64 = 24 * 3600
    /// A claim older than this without an answer is taken over: the instance that held it
    /// stopped before answering.
    public static let lease: Int64 = 300
    /// An answer whose head and body are above this is kept as a reference (status, head,
    /// `Location`) without its body.
    public static let maxAnswerBytes = 64 * 1024
    /// The bytes of kept answers per owner: past it, the oldest answers lose their bodies (those
    /// without a `Location` go); the references (head only) have a budget of the same size, past
    /// which the oldest go. At most twice this per owner, then.
    public static let maxBytesPerOwner: Int64 = 1 << 20

    /// Seconds a keyed write that committed (its claim holds a `location`) stays `.running`
    /// while its full answer is being stored — milliseconds on a live instance. Past them, a
    /// retry gets the reference to what was created at once: the instance that committed may
    /// have died before storing the answer, and a claim held for the whole lease then answered
    /// every retry `409` for five minutes (issue 31 item 3).
    public static let answerGrace: Int64 = 2

    /// A key claimed and not answered: a write that committed (`location`) is running for
    /// `answerGrace` seconds after its claim, then replays as a reference to what it created; a
    /// claim without one runs while its lease lasts (and has expired and been swept after).
    static func pending(location: String?, claimedAt: Int64, now: Int64) -> IdempotencyClaim {
        guard let location else { return .running }
        guard claimedAt + answerGrace <= now else { return .running }
        return .replay(.reference(location: location))
    }
}

/// `Idempotency-Key`s and their answers, shared by every instance on one database.
///
/// A key is per owner. `claimIdempotencyKey` is one atomic statement sequence in its own
/// transaction: of two requests racing on one key — on one instance or two — one gets
/// `.claimed`, the other `.running`. Expired keys are swept as their owner claims new ones.
public protocol IdempotencyStore: Sendable {
    /// Claims `key` for a request with `fingerprint`, or says what holds it. Blocks until
    /// durable; never from a completion.
    func claimIdempotencyKey(_ key: String, fingerprint: [UInt8], owner: Owner, now: Int64) throws(StoreError) -> IdempotencyClaim

    /// Stores the answer of a claimed key (kept `IdempotencyLimits.lifetime` from `now`),
    /// within the owner's byte budget; it replaces the reference a keyed write kept.
    func completeIdempotencyKey(
        _ key: String, answer: IdempotentAnswer, owner: Owner, now: Int64,
        completion: @escaping StoreCompletion<Void>)

    /// Forgets a claimed key that has no answer (the request failed): a retry runs again.
    func releaseIdempotencyKey(_ key: String, owner: Owner, completion: @escaping StoreCompletion<Void>)

    /// What holds `key` for a request with `fingerprint`, read without claiming or writing
    /// anything: nil when the key is free (`claimIdempotencyKey` would claim it), otherwise what
    /// claiming it would answer (`.running`, `.mismatch`, `.replay`). Blocks; never from a
    /// completion.
    func lookUpIdempotencyKey(_ key: String, fingerprint: [UInt8], owner: Owner, now: Int64) throws(StoreError) -> IdempotencyClaim?
}
