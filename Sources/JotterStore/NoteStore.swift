/// Persistence for notes, their change events and their versions.
///
/// Implemented by `SQLiteNoteStore` (and later by a PostgreSQL store). Reads are synchronous and
/// may run on any thread; writes are queued, committed durably, then acknowledged.
///
/// ```swift
/// let store: any NoteStore = try SQLiteNoteStore(dataDirectory: "/var/lib/jotter")
/// if case .done(let note, let event) = try store.perform(.create(body: "Buy milk"), owner: user.owner) {
///     print(note.id, event.id)
/// }
/// let page = try store.notes(NoteQuery(limit: 100, order: .newestFirst, search: "milk"), owner: user.owner)
/// ```
///
/// Every read and write is scoped by an `Owner`: another owner's note is as absent as one that
/// never existed.
///
/// ```swift
/// ```
public protocol NoteStore: Sendable {
    /// `owner`'s note with `id`, or nil when there is none.
    func note(id: Int64, owner: Owner) throws -> NoteRecord?

    /// One page of `owner`'s notes in `query.order`, after the `query.after` cursor, filtered by `query.search`.
    func notes(_ query: NoteQuery, owner: Owner) throws -> [NoteRecord]

    /// Runs the write durably; `completion` is called exactly once, on a store thread, only
    /// after the commit is durable.
    ///
    /// The completion must return quickly and must not call `perform` (it runs on the writer).
    /// - Parameters:
    ///   - write: what to change.
    ///   - owner: whose notes and uploads it reads and changes (and whose a created one becomes).
    ///   - completion: the outcome (`.done`, `.notFound`, `.versionMismatch`) or a `StoreError`.
    func submit(_ write: NoteWrite, owner: Owner, completion: @escaping @Sendable (Result<NoteWriteResult, StoreError>) -> Void)

    /// Blocking convenience over `submit`: returns once the write is durable.
    func perform(_ write: NoteWrite, owner: Owner) throws -> NoteWriteResult

    /// `owner`'s events with id > `after`, oldest first, at most `limit`; nil when `after` is
    /// older than the kept backlog or greater than the last issued id (the client must re-list).
    /// Ids are shared by all owners, so one owner's ids have gaps.
    func events(after: Int64, limit: Int, owner: Owner) throws -> [NoteEvent]?

    /// The id of the last event ever issued (0 when none), which never goes backwards.
    func lastEventID() throws -> Int64
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

    public init(limit: Int = 100, after: Int64? = nil, order: NoteOrder = .newestFirst, search: String? = nil) {
        self.limit = limit
        self.after = after
        self.order = order
        self.search = search
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

    public init(id: Int64, kind: NoteEventKind, note: NoteRecord) {
        self.id = id
        self.kind = kind
        self.note = note
    }
}
