import JotterBlobs
import Synchronization
import JotterSystem

/// Everything the server keeps — notes, uploads and their bytes, events, accounts — behind
/// one value per backend: `SQLiteStore` (one machine, the default) or `PostgresStore` (any
/// number of instances on one PostgreSQL and one blob store).
///
/// ```swift
/// let store = try openDataStore(.sqlite(dataDirectory: "/var/lib/jotter"))
/// store.observeEvents { event, owner in broadcaster.publish(…) }
/// defer { store.close() }
/// ```
public protocol DataStore: NoteStore, UploadStore, PartialUploadStore, AccountStore, IdempotencyStore {
    /// Where upload bytes are (key `UploadRecord.blobKey(id)`): a local folder or a bucket.
    var blobs: any BlobStore { get }

    /// Where a request that reads the store does its work: nil when reads are local and short
    /// (SQLite) — on the request's own thread; the store's `threads` when a read may wait on the
    /// network (PostgreSQL), so that no engine thread waits for a round trip.
    var readThreads: StoreThreads? { get }

    /// The store's own threads, for work that blocks whatever the backend: moving a file's bytes
    /// into the blob store (fsync, the network), waiting for a write's commit.
    var threads: StoreThreads { get }

    /// Calls `handler` with every committed event, exactly once each, in id order: for
    /// PostgreSQL, those committed by other instances too. Set once, before serving; events
    /// committed before it is set are not replayed to it.
    func observeEvents(_ handler: @escaping @Sendable (NoteEvent, Owner) -> Void)

    /// One entry per check (`database`, …): "ok", or why not. `/healthz` reports them.
    func health() -> [String: String]

    /// Counts of what is stored and the database's size, for `/metrics` (a scan of each table:
    /// for scrape intervals, not for every request).
    func storageStatistics() throws -> StorageStatistics

    /// The schema version this build writes and understands.
    var schemaVersion: Int64 { get }

    /// What opening the store did to the schema: nil when it was already current.
    var migration: SchemaMigration? { get }

    /// Why opening the store started a new history (a PostgreSQL database restored from
    /// another cluster: `PostgresHistory`), for the log; nil when it did not.
    var newHistory: String? { get }

    /// A folder for files of requests in flight (multipart parts before they are stored).
    var temporaryDirectory: String { get }

    // MARK: Capabilities: what callers would otherwise learn by asking which store this is

    /// The token buckets behind rate limits and failed-sign-in limits: in this process's memory
    /// for a store one process serves (`SQLiteStore`), in a table every instance shares
    /// (`PostgresStore`). One value per store: every limit counts in it.
    var limitCounters: any LimitCounters { get }

    /// The rows of partial uploads whose bytes go to a bucket as they arrive, where every
    /// instance sees them (`PostgresStore`); nil for a store one process serves, whose partial
    /// uploads keep their bytes in the data folder. Used with `blobs.multipart`.
    var bucketPartialUploads: (any BucketPartialUploadStore)? { get }

    /// Online snapshots of everything stored (`SQLiteStore`: the database and the upload
    /// files); nil where the data is backed up with the tools of where it lives (PostgreSQL and
    /// its blob store).
    var backups: (any StoreBackups)? { get }

    /// Runs the work queued on `threads` to its end, with every read and write that work makes
    /// (a request's abort recording what it received is such work), and finishes queued
    /// writes; then closes every connection. Later reads and writes fail with
    /// `StoreError.closed`. Idempotent.
    func close()
}

// MARK: - Blocking conveniences

extension NoteStore {
    /// Blocks until `createNote` is durable. Never from a completion (it would wait for itself).
    public func createNote(body: String, owner: Owner) throws(StoreError) -> NoteChange {
        try StoreWait.wait { createNote(body: body, owner: owner, completion: $0) }
    }

    /// Blocks until `updateNote` is durable. Never from a completion.
    public func updateNote(id: Int64, body: String?, ifVersion: Int64?, owner: Owner) throws(StoreError) -> NoteWriteOutcome {
        try StoreWait.wait { updateNote(id: id, body: body, ifVersion: ifVersion, owner: owner, completion: $0) }
    }

    /// Blocks until `mergeNote` is durable. Never from a completion.
    public func mergeNote(id: Int64, base: Int64, body: String, ifVersion: Int64?, owner: Owner) throws(StoreError) -> NoteWriteOutcome {
        try StoreWait.wait { mergeNote(id: id, base: base, body: body, ifVersion: ifVersion, owner: owner, completion: $0) }
    }

    /// Blocks until `restoreTrashedNote` is durable. Never from a completion.
    public func restoreTrashedNote(id: Int64, owner: Owner) throws(StoreError) -> NoteWriteOutcome {
        try StoreWait.wait { restoreTrashedNote(id: id, owner: owner, completion: $0) }
    }

    /// Blocks until `purgeTrashedNote` is durable (at any version); the note removed, nil when
    /// it was not in the trash. Never from a completion.
    public func purgeTrashedNote(id: Int64, owner: Owner) throws(StoreError) -> TrashedNote? {
        try purgeTrashedNote(id: id, ifVersion: nil, owner: owner).purged
    }

    /// Blocks until `purgeTrashedNote` is durable. Never from a completion.
    public func purgeTrashedNote(id: Int64, ifVersion: Int64?, owner: Owner) throws(StoreError) -> TrashPurge {
        try StoreWait.wait { purgeTrashedNote(id: id, ifVersion: ifVersion, owner: owner, completion: $0) }
    }

    /// Blocks until `emptyTrash` is durable. Never from a completion.
    public func emptyTrash(keep: Int64, asOf now: Int64? = nil) throws(StoreError) -> Int {
        try StoreWait.wait { emptyTrash(keep: keep, asOf: now, completion: $0) }
    }

    /// Blocks until `restoreNote` is durable. Never from a completion.
    public func restoreNote(id: Int64, version: Int64, ifVersion: Int64?, owner: Owner) throws(StoreError) -> NoteWriteOutcome {
        try StoreWait.wait { restoreNote(id: id, version: version, ifVersion: ifVersion, owner: owner, completion: $0) }
    }

    /// Blocks until `thinRevisions` is durable. Never from a completion.
    public func thinRevisions(_ retention: RevisionRetention, asOf now: Int64? = nil) throws(StoreError) -> Int {
        try StoreWait.wait { thinRevisions(retention, asOf: now, completion: $0) }
    }

    /// Blocks until `pruneFeed` is durable. Never from a completion.
    public func pruneFeed(_ retention: FeedRetention, asOf now: Int64? = nil) throws(StoreError) -> Int {
        try StoreWait.wait { pruneFeed(retention, asOf: now, completion: $0) }
    }

    /// Blocks until `deleteNote` is durable. Never from a completion.
    public func deleteNote(id: Int64, ifVersion: Int64?, owner: Owner) throws(StoreError) -> NoteWriteOutcome {
        try StoreWait.wait { deleteNote(id: id, ifVersion: ifVersion, owner: owner, completion: $0) }
    }
}

extension UploadStore {
    /// Blocks until `addUploads` is durable. Never from a completion.
    public func addUploads(_ uploads: [NewUpload], noteID: Int64?, owner: Owner) throws(StoreError) -> UploadsAdded? {
        try StoreWait.wait { addUploads(uploads, noteID: noteID, owner: owner, completion: $0) }
    }

    /// Blocks until `deleteUpload` is durable. Never from a completion.
    public func deleteUpload(id: String, owner: Owner) throws(StoreError) -> UploadRemoved? {
        try StoreWait.wait { deleteUpload(id: id, owner: owner, completion: $0) }
    }

    /// Blocks until `attachUpload` is durable. Never from a completion.
    public func attachUpload(id: String, noteID: Int64?, owner: Owner) throws(StoreError) -> UploadAttached? {
        try StoreWait.wait { attachUpload(id: id, noteID: noteID, owner: owner, completion: $0) }
    }
}

extension AccountStore {
    /// Blocks until `submit(_:completion:)` is durable. Never from a completion.
    public func perform(_ write: AccountWrite) throws(StoreError) -> AccountWriteResult {
        try StoreWait.wait { submit(write, completion: $0) }
    }
}

/// Turns a completion-taking call into a blocking one.
public enum StoreWait {
    /// Runs `start` and blocks until the completion it is given is called.
    public static func wait<Value: Sendable>(_ start: (@escaping StoreCompletion<Value>) -> Void) throws(StoreError) -> Value {
        let done = Semaphore()
        let outcome = Mutex<Result<Value, StoreError>?>(nil)
        start { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }
}

/// The handler `observeEvents` was given, called by a store as its events commit.
final class EventObserver: Sendable {
    /// The handler in a class: a closure stored in the `Mutex` itself would be re-thunked (its
    /// abstraction converted there and back) by every `withLock` that hands it out, each time
    /// wrapping the last, so that every delivery would cost more (and nest deeper) than the one
    /// before it.
    private final class Handler: Sendable {
        let call: @Sendable (NoteEvent, Owner) -> Void
        init(_ call: @escaping @Sendable (NoteEvent, Owner) -> Void) { self.call = call }
    }

    private let handler = Mutex<Handler?>(nil)

    func set(_ handler: @escaping @Sendable (NoteEvent, Owner) -> Void) {
        let boxed = Handler(handler)
        self.handler.withLock { $0 = boxed }
    }

    func deliver(_ events: [NoteEvent], owner: Owner) {
        guard !events.isEmpty, let handler = handler.withLock({ $0 }) else { return }
        for event in events { handler.call(event, owner) }
    }
}

/// A schema brought to the version this build writes, as opening a store did it.
public struct SchemaMigration: Sendable, Hashable, CustomStringConvertible {
    /// The version found: 0 for an empty database.
    public var from: Int64
    /// The version it was migrated to.
    public var to: Int64

    /// `created the database at schema version 12`, or `migrated the database from schema version 11 to 12`.
    public var description: String {
        from == 0 ? "created the database at schema version \(to)" : "migrated the database from schema version \(from) to \(to)"
    }
}
