import JotterSystem

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

    /// A page of `owner`'s change feed (`NoteFeedQuery`, `NoteFeedPage`) from one snapshot:
    /// every note whose latest change has an event id above the cursor, each once, in its
    /// current state (a deleted one as a tombstone), in event-id order — on PostgreSQL, only
    /// below the horizon the event stream reads under, so no commit is ever passed over.
    func changes(_ query: NoteFeedQuery, owner: Owner) throws -> NoteFeedPage

    /// Prunes every owner's feed tombstones older than `retention` as of `now` (nil: the
    /// store's clock), raising the feed's horizon to the newest pruned; how many went.
    func pruneFeed(_ retention: FeedRetention, asOf now: Int64?, completion: @escaping StoreCompletion<Int>)

    /// A new note at version 1 (`created_at` = `updated_at` = now), `owner`'s.
    func createNote(body: String, owner: Owner, completion: @escaping StoreCompletion<NoteChange>)
    /// `createNote` under an `Idempotency-Key` claimed in the same transaction, which also keeps
    /// a reference answer (`201`, `Location: /notes/{id}`); refused, without a write, when the key
    /// is held, was used for another request, or has an answer.
    func createNote(
        body: String, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<NoteChange>>)

    /// Replaces the body (`ifVersion` nil: unconditionally). `body` nil is a touch: version and
    /// `updated_at` grow, the body stays (attachments changed); either way a `note.updated` event.
    func updateNote(id: Int64, body: String?, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>)

    /// Moves the note to the trash (`note.deleted`): it is no longer listed or shown, and no
    /// longer changed; its revisions and attachments stay with it until it leaves the trash
    /// (`purgeTrashedNote`, `emptyTrash`) or is restored (`restoreTrashedNote`).
    func deleteNote(id: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>)

    /// `body` written over version `base` of the note (what the client's edit was made from).
    /// `base` the current version: a plain update. An older `base`: a three-way merge
    /// (`TextMerge`) of revision `base` (the common ancestor), the current body and `body`,
    /// made inside the write — no other write of the note comes between the read and the
    /// write, on any instance — whose version is marked merged (`NoteRevision.mergeBase`) and
    /// whose change says how it merged (`NoteChange.merge`). Decided in this order: `.notFound`,
    /// `.versionMismatch` (`ifVersion`), `.noRevision` (`base` not kept, or not a version the
    /// note had), `.cannotMerge` (the merge is past `TextMerge.Limits.default`).
    func mergeNote(
        id: Int64, base: Int64, body: String, ifVersion: Int64?, owner: Owner,
        completion: @escaping StoreCompletion<NoteWriteOutcome>)

    /// `updateNote` (`base` nil) or `mergeNote` under an `Idempotency-Key` claimed in the same
    /// transaction: once the note is written the key keeps a reference to it (`/notes/{id}`),
    /// so a retry after a crash between the commit and the stored answer is answered, not
    /// merged twice. Refused, without a write, when the key is held, was used for another
    /// request, or has an answer; a write that is not `.done` leaves the key free.
    func editNote(
        id: Int64, base: Int64?, body: String, ifVersion: Int64?, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<NoteWriteOutcome>>)

    // MARK: Trash

    /// `owner`'s notes in the trash, most recently deleted first (within a second, the later
    /// deletion first), at most `limit`, after the `after` cursor (a trashed note's id from a
    /// previous page; one restored or purged in the last week still marks its place). Nil when
    /// `after` names no such note.
    func trashedNotes(limit: Int, after: Int64?, owner: Owner) throws -> [TrashedNote]?

    /// `owner`'s note `id` if it is in the trash.
    func trashedNote(id: Int64, owner: Owner) throws -> TrashedNote?

    /// Brings note `id` back from the trash with its id, body and attachments, at a new version
    /// (`note.created`); `.notFound` when it is not in `owner`'s trash.
    func restoreTrashedNote(id: Int64, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>)

    /// Removes note `id` from the trash for good, with its revisions and attachments (rows now,
    /// bytes once this committed), if it is there at `ifVersion` (nil: at any version — a note
    /// restored and deleted again is at a later one).
    func purgeTrashedNote(id: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<TrashPurge>)

    /// Removes every owner's notes deleted `keep` seconds or more before `now` (nil: the store's
    /// clock) from the trash for good, as `purgeTrashedNote`; how many.
    func emptyTrash(keep: Int64, asOf now: Int64?, completion: @escaping StoreCompletion<Int>)

    // MARK: Revisions

    /// `owner`'s note's revisions, newest first, without their bodies: at most `limit`, with
    /// versions below `before` (nil: from the newest). Nil when `owner` has no note `noteID`
    /// live (`inTrash` false) or in the trash (`inTrash` true): a deleted note keeps its
    /// revisions in the trash, where its history can be read and exported.
    func revisions(noteID: Int64, before: Int64?, limit: Int, owner: Owner, inTrash: Bool) throws -> [NoteRevision]?

    /// Revision `version` of `owner`'s note `noteID`, live or in the trash as `inTrash` says,
    /// with its body; nil when there is none (no such note there, or that version was never
    /// kept or was thinned away).
    func revision(noteID: Int64, version: Int64, owner: Owner, inTrash: Bool) throws -> NoteRevision?

    /// A new version of the note whose body is revision `version`'s (`note.updated`). Decided in
    /// this order: `.notFound`, `.versionMismatch` (`ifVersion`), `.noRevision`.
    func restoreNote(id: Int64, version: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>)

    /// Thins every owner's revisions (`RevisionRetention`) as of `now` (nil: the store's clock);
    /// the number of revisions deleted.
    func thinRevisions(_ retention: RevisionRetention, asOf now: Int64?, completion: @escaping StoreCompletion<Int>)
}

/// A note in the trash: as it was when deleted, and when that was.
public struct TrashedNote: Sendable, Hashable {
    public var note: NoteRecord
    /// Unix seconds, UTC (the store's clock, as the `note.deleted` event's).
    public var deletedAt: Int64

    public init(note: NoteRecord, deletedAt: Int64) {
        self.note = note
        self.deletedAt = deletedAt
    }
}

/// What removing a note from the trash for good did.
public enum TrashPurge: Sendable, Hashable {
    /// Removed; the note as it was in the trash.
    case purged(TrashedNote)
    /// `owner` has no note with that id in the trash.
    case notFound
    /// It is in the trash at another version than the one asked for; nothing changed.
    case versionMismatch(current: TrashedNote)

    /// The note removed, when it was.
    public var purged: TrashedNote? {
        if case .purged(let note) = self { return note }
        return nil
    }
}

/// A kept version of a note: the body it had at `version`.
public struct NoteRevision: Sendable, Hashable {
    public var noteID: Int64
    public var version: Int64
    /// When this version was committed (Unix seconds, UTC).
    public var createdAt: Int64
    /// The body's length in UTF-8 bytes.
    public var size: Int64
    /// The base version, when a server-side merge made this version; nil otherwise.
    public var mergeBase: Int64?
    /// The body; nil in a listing (`NoteStore.revisions`).
    public var body: String?

    /// Whether a merge made this version.
    public var merged: Bool { mergeBase != nil }
}

/// Which revisions the retention keeps: every one younger than `keepAll` seconds; of the older
/// ones, the newest of each UTC day while younger than `daily` seconds, then the newest of each
/// week (7 × 86,400 s from the Unix epoch); and always each note's newest.
public struct RevisionRetention: Sendable, Hashable {
    public var keepAll: Int64
    public var daily: Int64

    /// `days` of every revision (`--revision-days`), one a day until three times as long, then
    /// one a week.
    public init(days: Int) {
        keepAll = Int64(days) * 86_400
        daily = 3 * keepAll
    }

    public init(keepAll: Int64, daily: Int64) {
        self.keepAll = keepAll
        self.daily = daily
    }
}

/// Called once, on a store thread, with a write's outcome — only after it is durable (or failed).
/// It must return quickly and must not wait for another write.
public typealias StoreCompletion<Value: Sendable> = @Sendable (Result<Value, StoreError>) -> Void

/// A committed change of a note, with the event it made.
public struct NoteChange: Sendable, Hashable {
    /// The note after the change; for a delete, the note as it was.
    public var note: NoteRecord
    public var event: NoteEvent
    /// How the body was merged, when `mergeNote` merged it.
    public var merge: NoteMerge?
}

/// What a merged write did: the version it was made from and where both sides had changed the text.
public struct NoteMerge: Sendable, Hashable {
    /// The version the incoming body was made from (the common ancestor).
    public var base: Int64
    /// Whether both sides changed the same text somewhere (both kept, `regions`).
    public var overlapped: Bool
    /// Where both sides changed the same text: UTF-16 offsets into the merged body, end exclusive.
    public var regions: [Range<Int>]
    /// What the merge cost, charged to the user's budget of merge work by the server: the steps
    /// it took (`TextMerge.counted`), or its CPU time at the cap's rate if more (the cap, 60 M
    /// steps, takes about 1 s of CPU; steps don't weigh every input alike — a long line's
    /// tokens are cheap steps and dear CPU).
    public var work: Int

    /// The merge of `body` made from `base` into `current`: `nil` past `TextMerge.Limits.default`.
    static func merge(base: Int64, ancestor: String, current: String, incoming: String) -> (text: String, merge: NoteMerge)? {
        let started = ThreadCPUClock.microseconds()
        let (merged, steps) = TextMerge.counted(base: ancestor, current: current, incoming: incoming)
        let took = MonotonicClock.since(started, to: ThreadCPUClock.microseconds())
        let work = max(steps, Int(min(took, 10_000_000)) * (TextMerge.Limits.default.maxWork / 1_000_000))
        guard let outcome = merged else { return nil }
        return (
            outcome.text,
            NoteMerge(
                base: base, overlapped: outcome.result == .overlap,
                regions: outcome.regions.map { $0.start..<max($0.start, $0.end) }, work: work)
        )
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
    /// The revision the write needs (a restore's, a merge's base) is not kept; nothing changed.
    case noRevision(current: NoteRecord)
    /// The merge is past its bounds (`TextMerge.Limits`); nothing changed. `base` is the
    /// revision the incoming body was made from.
    case cannotMerge(current: NoteRecord, base: NoteRevision)

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

/// The order of a notes listing: by id (which follows creation), or by last change.
public enum NoteOrder: Sendable {
    case newestFirst
    case oldestFirst
    /// The note changed last first (as notes apps sort): by the event id of each note's latest
    /// change (`NoteFeedEntry.seq`), which is commit order. The cursor is that id
    /// (`NotePage.Note.position`), not a note id.
    case recentlyUpdated
}

/// A page request for `NoteStore.notes(_:)`.
public struct NoteQuery: Sendable {
    /// At most this many notes (0 or less gives none).
    public var limit: Int
    /// A cursor: `.newestFirst` selects ids below it, `.oldestFirst` ids above it,
    /// `.recentlyUpdated` notes whose latest change's event id is below it (`NotePage.Note.position`).
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

    public init(
        limit: Int = 100, after: Int64? = nil, order: NoteOrder = .newestFirst, search: String? = nil,
        maxBodyBytes: Int? = nil
    ) {
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
    /// The base version, when a server-side merge made this version (`NoteMerge.base`).
    public var mergeBase: Int64?

    public init(id: Int64, kind: NoteEventKind, note: NoteRecord, at: Int64, mergeBase: Int64? = nil) {
        self.id = id
        self.kind = kind
        self.note = note
        self.at = at
        self.mergeBase = mergeBase
    }
}
