/// Persistence for notes and their change events, scoped by `Owner`.
///
/// Implemented by `SQLiteStore` and `PostgresStore`. Reads are synchronous and may run on any
/// thread (with PostgreSQL they wait for a round trip: see `DataStore.readThreads`). Each write is
/// its own operation with its own outcome; it is queued, committed durably, and only then
/// handed to its completion, on a store thread.
///
/// ```swift
/// store.createNote(body: "Buy milk", owner: user.owner) { result in
///     if case .success(let change) = result { print(change.note.id, change.event.id) }
/// }
/// let page = try store.notes(NoteQuery(limit: 100, order: .newestFirst, search: "milk"), owner: user.owner)
/// ```
///
/// Another owner's note is as absent as one that never existed.
public protocol NoteStore: Sendable {
    /// `owner`'s note with `id`, or nil when there is none.
    func note(id: Int64, owner: Owner) throws -> NoteRecord?

    /// One page of `owner`'s notes in `query.order`, after the `query.after` cursor, filtered by `query.search`.
    func notes(_ query: NoteQuery, owner: Owner) throws -> [NoteRecord]

    /// `owner`'s events with id > `after`, in id order, at most `limit`; nil when `after` is
    /// older than the kept backlog or above the last event id (the client must re-list).
    /// Ids grow in the order events become visible and are shared by all owners, so one
    /// owner's ids have gaps (a backend may leave gaps of its own).
    func events(after: Int64, limit: Int, owner: Owner) throws -> [NoteEvent]?

    /// The id of the last visible event (0 when none); it never goes backwards.
    func lastEventID() throws -> Int64

    /// A new note at version 1 (`created_at` = `updated_at` = now), `owner`'s.
    func createNote(body: String, owner: Owner, completion: @escaping StoreCompletion<NoteChange>)
    /// `createNote` under an `Idempotency-Key` claimed in the same transaction, which also keeps
    /// a reference answer (`201`, `Location: /notes/{id}`); refused, without a write, when the key
    /// is held, was used for another request, or has an answer.
    func createNote(body: String, owner: Owner, claiming claim: IdempotencyKeyClaim,
                    completion: @escaping StoreCompletion<KeyedOutcome<NoteChange>>)

    /// Replaces the body (`ifVersion` nil: unconditionally). `body` nil is a touch: version and
    /// `updated_at` grow, the body stays (attachments changed); either way a `note.updated` event.
    func updateNote(id: Int64, body: String?, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>)

    /// Removes the note with its attachments (rows now, their bytes once this committed).
    func deleteNote(id: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>)
}

/// Called once, on a store thread, with a write's outcome — only after it is durable (or failed).
/// It must return quickly and must not wait for another write.
public typealias StoreCompletion<Value: Sendable> = @Sendable (Result<Value, StoreError>) -> Void

/// A committed change of a note, with the event it made.
public struct NoteChange: Sendable, Hashable {
    /// The note after the change; for a delete, the note as it was.
    public var note: NoteRecord
    public var event: NoteEvent

    public init(note: NoteRecord, event: NoteEvent) {
        self.note = note
        self.event = event
    }
}

/// The outcome of a write on an existing note.
///
/// `.notFound` is decided before the version: a missing note is missing whatever the
/// preconditions (RFC 9110 §13.2.1).
public enum NoteWriteOutcome: Sendable, Hashable {
    case done(NoteChange)
    /// `owner` has no note with that id.
    case notFound
    /// `ifVersion` did not match; nothing changed. `current` is the note as stored.
    case versionMismatch(current: NoteRecord)

    /// The change, when the write was done.
    public var change: NoteChange? {
        if case .done(let change) = self { return change }
        return nil
    }
}

/// Write counters of a store, to see how well writes share commits.
public struct WriteStatistics: Sendable, Hashable {
    /// Transactions committed (each holding one batch of writes).
    public var commits: Int
    /// Writes completed (successfully or not) through those commits.
    public var writes: Int

    public init(commits: Int, writes: Int) {
        self.commits = commits
        self.writes = writes
    }
}

/// A stored note. Times are Unix seconds, UTC.
public struct NoteRecord: Sendable, Hashable {
    public var id: Int64
    public var body: String
    public var createdAt: Int64
    public var updatedAt: Int64
    /// 1 on create, +1 on every update or touch.
    public var version: Int64

    public init(id: Int64, body: String, createdAt: Int64, updatedAt: Int64, version: Int64) {
        self.id = id
        self.body = body
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }
}

/// The order of a notes listing (by id, which follows creation).
public enum NoteOrder: Sendable {
    case newestFirst
    case oldestFirst
}

/// A page request for `NoteStore.notes(_:)`.
public struct NoteQuery: Sendable {
    /// At most this many notes (0 or less gives none).
    public var limit: Int
    /// A cursor id: `.newestFirst` selects ids below it, `.oldestFirst` ids above it.
    public var after: Int64?
    public var order: NoteOrder
    /// Full-text search over the body: every word must occur (words are matched literally,
    /// never parsed as search syntax; words without a letter or digit are ignored). Nil or blank:
    /// no filter; only punctuation: no note matches.
    public var search: String?
    /// A budget of body bytes (UTF-8): once the notes read so far hold this many, one more note
    /// is read — so the caller can tell that the page was cut — and no more. Nil: no budget.
    /// Cut the page with `NoteQuery.cut(_:limit:budget:)`.
    public var maxBodyBytes: Int?

    public init(limit: Int = 100, after: Int64? = nil, order: NoteOrder = .newestFirst, search: String? = nil,
                maxBodyBytes: Int? = nil) {
        self.limit = limit
        self.after = after
        self.order = order
        self.search = search
        self.maxBodyBytes = maxBodyBytes
    }

    /// How many of `bodySizes` (in page order) make a page of at most `limit` notes within
    /// `budget` bytes — always at least one — and whether more follow.
    @inlinable
    public static func cut(_ bodySizes: some Sequence<Int>, limit: Int, budget: Int?) -> (count: Int, more: Bool) {
        var total = 0, count = 0
        for (index, size) in bodySizes.enumerated() {
            count = index + 1
            if index == limit { return (index, true) }
            if let budget, index > 0, total + size > budget { return (index, true) }
            total += size
        }
        return (count, false)
    }
}

/// What a change event reports.
public enum NoteEventKind: String, Sendable {
    case created = "note.created"
    case updated = "note.updated"
    case deleted = "note.deleted"
}

/// A change to a note, with an id that grows across all events and across restarts.
public struct NoteEvent: Sendable, Hashable {
    public var id: Int64
    public var kind: NoteEventKind
    /// The note after the change; for `.deleted`, the note as it was.
    public var note: NoteRecord
    /// When the change was made (Unix seconds, UTC): for `.deleted`, when the note was deleted,
    /// which none of its own times say.
    public var at: Int64

    public init(id: Int64, kind: NoteEventKind, note: NoteRecord, at: Int64) {
        self.id = id
        self.kind = kind
        self.note = note
        self.at = at
    }
}
