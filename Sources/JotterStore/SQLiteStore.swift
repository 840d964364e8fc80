#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterBlobs
import Synchronization
import JotterSystem

/// The `DataStore` of one machine: an embedded SQLite database at `<dataDirectory>/jotter.sqlite`
/// and upload files in `<dataDirectory>/uploads/` (a `LocalBlobStore` on the data folder).
///
/// WAL mode; one writer thread owning the only read-write connection commits writes in groups
/// (`GroupCommitWriter`), acknowledging each only once its commit is durable; reads run on the
/// caller's thread on pooled read-only connections and never wait for the writer. Opening
/// creates the file if needed and migrates it; a database from a newer jotter is refused.
///
/// ```swift
/// let store = try SQLiteStore(dataDirectory: "/var/lib/jotter")
/// defer { store.close() }
/// store.createNote(body: "Buy milk", owner: user.owner) { result in … }   // called once durable
/// let newest = try store.notes(NoteQuery(limit: 20), owner: user.owner)
/// ```
public final class SQLiteStore: DataStore {
    /// How durable a commit is when it is acknowledged.
    public enum Synchronous: String, Sendable {
        /// fsync the WAL on every commit: an acknowledged write survives power loss (the default).
        case full = "FULL"
        /// fsync only at checkpoints: survives a crash of jotter, may lose the last commits on power loss.
        case normal = "NORMAL"
    }

    /// Settings for opening the store.
    public struct Options: Sendable {
        public var synchronous: Synchronous
        /// Events kept for replay by `events(after:limit:)`; at least 1.
        public var eventBacklog: Int
        /// At most this many writes share one commit.
        public var maxBatchSize: Int
        /// Idle read connections kept open (one is in use per concurrently reading thread).
        public var maxIdleReaders: Int
        /// How long any connection retries a locked database before failing.
        public var busyTimeoutMilliseconds: Int32
        /// Empty `tmp/` at opening and sweep upload files that no row names and that are over
        /// an hour old, a minute after opening and hourly after (`uploadSweep`: what a crash left
        /// between storing an upload's bytes and committing its row). Younger files are never
        /// swept, whatever the rows say at that moment: their row may be committing. Off for a
        /// second process on a folder a server may be using (`jotter users` on `--data`): the
        /// server's uploads in flight are in `tmp/`.
        public var removesOrphans: Bool = true

        public init(
            synchronous: Synchronous = .full, eventBacklog: Int = 10_000, maxBatchSize: Int = 256,
            maxIdleReaders: Int = 16, busyTimeoutMilliseconds: Int32 = 5_000
        ) {
            self.synchronous = synchronous
            self.eventBacklog = eventBacklog
            self.maxBatchSize = maxBatchSize
            self.maxIdleReaders = maxIdleReaders
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        }
    }

    /// The database file's name inside the data directory.
    public static let fileName = "jotter.sqlite"

    /// The path of the database file.
    public let path: String
    public let migration: SchemaMigration?
    /// nil: a restore starts its new history (`DataFolderBackup.startNewHistory`).
    public var newHistory: String? { nil }
    private let writer: GroupCommitWriter
    let readers: ReaderPool
    let noteWriter: NoteWriter
    private let files: UploadFiles
    private let observer = EventObserver()
    /// Where blob moves run (fsync and rename of an upload's file), off the engine threads.
    public let threads: StoreThreads
    /// The upload files, as blobs: keys `uploads/<id>` under the data folder.
    public let blobs: any BlobStore
    /// The data folder this store was opened on.
    public let dataDirectory: String
    /// Held shared while open, so a restore (which needs it exclusive) never runs under us.
    private let folderLock: DataFolderLock
    /// What this store's `Idempotency-Key` claims name: once it is gone (closed, its process
    /// dead), another store on the folder takes an unanswered claim over.
    let instance: SQLiteInstance
    /// The orphan sweep of `uploads/`: files over an hour old that no committed row names,
    /// the rows read by the writer, in its transaction. Run hourly while open when
    /// `Options.removesOrphans`.
    public let uploadSweep: UploadSweep
    private let sweeper: PeriodicTask?

    /// Opens (creating and migrating as needed) `<dataDirectory>/jotter.sqlite`.
    ///
    /// - Parameters:
    ///   - dataDirectory: the data folder; created if missing.
    ///   - options: durability, event backlog, batching.
    /// - Throws: `StoreError.newerSchema` when the database is from a newer jotter (it is left
    ///   untouched), `.notJotterDatabase`, or an SQLite error.
    public init(dataDirectory: String, options: Options = Options()) throws(StoreError) {
        guard options.eventBacklog >= 1 else { throw .invalidArgument("eventBacklog must be at least 1") }
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw .invalidArgument("cannot create the data directory \(dataDirectory): \(error)")
        }
        folderLock = try DataFolderLock(dataDirectory, exclusive: false)
        instance = try SQLiteInstance(dataDirectory: dataDirectory)
        path = dataDirectory.hasSuffix("/") ? dataDirectory + Self.fileName : dataDirectory + "/" + Self.fileName

        let db = try SQLiteConnection(
            path: path, flags: SQLiteConnection.readWrite,
            busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        migration = try SQLiteSchema.prepare(db, fileName: Self.fileName)
        // After the schema check: never change anything in a database we refuse.
        try db.execute("PRAGMA synchronous = \(options.synchronous.rawValue)")
        try db.execute("PRAGMA journal_size_limit = 67108864")  // shrink the WAL back to 64 MiB after checkpoints

        self.dataDirectory = dataDirectory
        let files = try UploadFiles(dataDirectory: dataDirectory)
        self.files = files
        let blobs: LocalBlobStore
        do {
            blobs = try LocalBlobStore(root: dataDirectory)
            self.blobs = blobs
        } catch {
            throw .invalidArgument("cannot use \(dataDirectory) for uploads: \(error)")
        }
        // Only tmp/ now: an upload file without a row in this view of the rows may have its row
        // committing (or committed out of this view), so it is left to the sweep, which spares
        // young files.
        if options.removesOrphans { files.emptyTemporary() }
        // The writer keeps the full-text index itself, once per transaction (FullTextIndex).
        try db.disableTriggers()
        noteWriter = NoteWriter(eventBacklog: Int64(options.eventBacklog))
        threads = try StoreThreads(count: 2)
        readers = ReaderPool(
            path: path, maxIdle: options.maxIdleReaders,
            busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        let writer = try GroupCommitWriter(connection: db, maxBatch: options.maxBatchSize, reserve: SpaceReserve(dataDirectory: dataDirectory))
        self.writer = writer
        let sweep = UploadSweep(
            blobs: blobs, known: { ids in try Self.knownUploadIDs(ids, writer: writer) },
            delete: { key in files.remove([String(key.dropFirst(UploadRecord.blobKey("").count))]) })
        uploadSweep = sweep
        sweeper = options.removesOrphans ? PeriodicTask(every: 3600, firstAfter: 60) { _ = try? sweep.run(now: WallClock.seconds()) } : nil
        sweeper?.start()
    }

    /// Which of `ids` have an upload row, read by the writer inside its transaction: the write
    /// lock held, so the rows are every committed one (recovery of the log done) and none
    /// commits while they are read.
    static func knownUploadIDs(_ ids: [String], writer: GroupCommitWriter) throws(StoreError) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return try StoreWait.wait { completion in
            writer.submit(.make({ db throws(StoreError) in try UploadRows.known(ids, on: db) }, completion: completion))
        }
    }

    deinit { close() }

    /// Runs the work queued on the threads to its end — with the reads and writes it makes (a
    /// request's abort recording what it received) — then finishes queued writes, closes every
    /// connection, and checkpoints the write-ahead log into `jotter.sqlite` and truncates it
    /// (`wal_checkpoint(TRUNCATE)`), so that the database file alone holds every commit — a
    /// copy of it is complete. Later calls fail with `StoreError.closed`. Idempotent.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sweeper?.stop()
        threads.stop()
        writer.stop()
        readers.close()
        checkpoint()
        instance.close()
        folderLock.unlock()
    }

    private let closed = Atomic<Bool>(false)

    /// Copies the WAL into the database and truncates it, on a connection of its own (the
    /// readers are read-only and cannot). Best effort: another process reading the data
    /// folder at this moment may keep part of the log, which SQLite applies on the next open.
    private func checkpoint() {
        guard let db = try? SQLiteConnection(path: path, flags: SQLiteConnection.readWriteExisting) else { return }
        _ = try? db.first("PRAGMA wal_checkpoint(TRUNCATE)") { $0.int64(0) }
        db.close()
    }

    /// nil: reads are local and short, they run where the request is.
    public var readThreads: StoreThreads? { nil }

    /// In this process's memory: one process serves the data folder.
    public let limitCounters: any LimitCounters = MemoryLimitCounters()

    /// nil: a partial upload's bytes are a file in the data folder.
    public var bucketPartialUploads: (any BucketPartialUploadStore)? { nil }

    /// This store: `backup(into:linkUploads:)` snapshots the data folder.
    public var backups: (any StoreBackups)? { self }

    /// Events are handed over on the writer thread, in commit order, before the completion of
    /// the write that made them.
    public func observeEvents(_ handler: @escaping @Sendable (NoteEvent, Owner) -> Void) { observer.set(handler) }

    /// `database`: whether a pooled connection can read the schema version.
    public func health() -> [String: String] {
        do {
            try checkReadable()
            return ["database": "ok"]
        } catch {
            return ["database": "cannot read the database: \(error)"]
        }
    }

    /// Holds back the deletion of upload files until `releaseRemovals()` (a backup copying them).
    func holdRemovals() { files.removals.hold() }

    func releaseRemovals() { files.removals.release() }

    /// How many commits the writes so far took (fewer commits than writes = group commit at work).
    public var statistics: WriteStatistics { writer.statistics }

    // MARK: - Reads

    public func note(id: Int64, owner: Owner) throws(StoreError) -> NoteRecord? {
        try readers.withConnection { db throws(StoreError) in try NoteRows.note(id: id, owner: owner, on: db) }
    }

    public func notes(_ query: NoteQuery, owner: Owner) throws(StoreError) -> [NoteRecord] {
        try readers.withConnection { db throws(StoreError) in try NoteRows.page(query, owner: owner, on: db) }
    }

    public func events(after: Int64, limit: Int, owner: Owner) throws(StoreError) -> [NoteEvent]? {
        try readers.withConnection { db throws(StoreError) in
            try db.readTransaction { () throws(StoreError) in
                try NoteRows.events(after: after, limit: limit, owner: owner, backlog: noteWriter.eventBacklog, on: db)
            }
        }
    }

    public func lastEventID() throws(StoreError) -> Int64 {
        try readers.withConnection { db throws(StoreError) in try NoteRows.lastEventID(on: db) }
    }

    public func changes(_ query: NoteFeedQuery, owner: Owner) throws(StoreError) -> NoteFeedPage {
        try readers.withConnection { db throws(StoreError) in
            try db.readTransaction { () throws(StoreError) in try NoteRows.changes(query, owner: owner, on: db) }
        }
    }

    /// Where requests put files while they run (`<data>/tmp`, emptied at start-up).
    public var temporaryDirectory: String { files.temporaryDirectory }

    // MARK: - Writes

    public func createNote(body: String, owner: Owner, completion: @escaping StoreCompletion<NoteChange>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in try noteWriter.create(body: body, owner: owner, on: db, effects: effects) },
            owner: owner, completion: completion)
    }

    public func createNote(
        body: String, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<NoteChange>>
    ) {
        let noteWriter = noteWriter, instance = instance
        submit(
            { db, effects throws(StoreError) in
                try IdempotencyRows.keyed(claim, owner: owner, claimer: instance, on: db) { () throws(StoreError) in
                    let change = try noteWriter.create(body: body, owner: owner, on: db, effects: effects)
                    return (change, "/notes/\(change.note.id)")
                }
            }, owner: owner, completion: completion)
    }

    public func editNote(
        id: Int64, base: Int64?, body: String, ifVersion: Int64?, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<NoteWriteOutcome>>
    ) {
        let noteWriter = noteWriter, instance = instance
        submit(
            { db, effects throws(StoreError) in
                try IdempotencyRows.keyed(claim, owner: owner, claimer: instance, on: db) { () throws(StoreError) in
                    let outcome =
                        if let base {
                            try noteWriter.merge(id: id, base: base, body: body, ifVersion: ifVersion, owner: owner, on: db, effects: effects)
                        } else {
                            try noteWriter.update(id: id, body: body, ifVersion: ifVersion, owner: owner, on: db, effects: effects)
                        }
                    return (outcome, outcome.change == nil ? nil : "/notes/\(id)")
                }
            }, owner: owner, completion: completion)
    }

    public func updateNote(id: Int64, body: String?, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in
                try noteWriter.update(id: id, body: body, ifVersion: ifVersion, owner: owner, on: db, effects: effects)
            }, owner: owner, completion: completion)
    }

    public func deleteNote(id: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in try noteWriter.delete(id: id, ifVersion: ifVersion, owner: owner, on: db, effects: effects) },
            owner: owner, freesSpace: true, completion: completion)
    }

    public func mergeNote(
        id: Int64, base: Int64, body: String, ifVersion: Int64?, owner: Owner,
        completion: @escaping StoreCompletion<NoteWriteOutcome>
    ) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in
                try noteWriter.merge(id: id, base: base, body: body, ifVersion: ifVersion, owner: owner, on: db, effects: effects)
            }, owner: owner, completion: completion)
    }

    public func trashedNotes(limit: Int, after: Int64?, owner: Owner) throws(StoreError) -> [TrashedNote]? {
        try readers.withConnection { db throws(StoreError) in
            try db.readTransaction { () throws(StoreError) in try TrashRows.page(limit: limit, after: after, owner: owner, on: db) }
        }
    }

    public func trashedNote(id: Int64, owner: Owner) throws(StoreError) -> TrashedNote? {
        try readers.withConnection { db throws(StoreError) in try TrashRows.note(id: id, owner: owner, on: db) }
    }

    public func restoreTrashedNote(id: Int64, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in try noteWriter.restoreTrashed(id: id, owner: owner, on: db, effects: effects) },
            owner: owner, completion: completion)
    }

    public func purgeTrashedNote(id: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<TrashPurge>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in
                try noteWriter.purgeTrashed(id: id, ifVersion: ifVersion, owner: owner, on: db, effects: effects)
            },
            owner: owner, freesSpace: true, completion: completion)
    }

    public func emptyTrash(keep: Int64, asOf now: Int64?, completion: @escaping StoreCompletion<Int>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in try noteWriter.emptyTrash(keep: keep, at: now, on: db, effects: effects) },
            owner: .unclaimed, freesSpace: true, completion: completion)
    }

    public func restoreNote(id: Int64, version: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in
                try noteWriter.restore(id: id, version: version, ifVersion: ifVersion, owner: owner, on: db, effects: effects)
            }, owner: owner, completion: completion)
    }

    public func thinRevisions(_ retention: RevisionRetention, asOf now: Int64?, completion: @escaping StoreCompletion<Int>) {
        let noteWriter = noteWriter
        submit(
            { db, _ throws(StoreError) in try noteWriter.thinRevisions(retention, at: now, on: db) },
            owner: .unclaimed, freesSpace: true, completion: completion)
    }

    public func pruneFeed(_ retention: FeedRetention, asOf now: Int64?, completion: @escaping StoreCompletion<Int>) {
        let noteWriter = noteWriter
        submit(
            { db, _ throws(StoreError) in try noteWriter.pruneFeed(retention, at: now, on: db) },
            owner: .unclaimed, completion: completion)
    }

    public func revisions(noteID: Int64, before: Int64?, limit: Int, owner: Owner, inTrash: Bool) throws(StoreError) -> [NoteRevision]? {
        try readers.withConnection { db throws(StoreError) in
            try db.readTransaction { () throws(StoreError) in
                guard try RevisionRows.noteIsKept(noteID, owner: owner, inTrash: inTrash, on: db) else { return nil }
                return try RevisionRows.list(noteID: noteID, before: before, limit: limit, owner: owner, on: db)
            }
        }
    }

    public func revision(noteID: Int64, version: Int64, owner: Owner, inTrash: Bool) throws(StoreError) -> NoteRevision? {
        try readers.withConnection { db throws(StoreError) in
            try db.readTransaction { () throws(StoreError) in
                guard try RevisionRows.noteIsKept(noteID, owner: owner, inTrash: inTrash, on: db) else { return nil }
                return try RevisionRows.revision(noteID: noteID, version: version, owner: owner, on: db)
            }
        }
    }

    public func addUploads(_ uploads: [NewUpload], noteID: Int64?, owner: Owner, completion: @escaping StoreCompletion<UploadsAdded?>) {
        let noteWriter = noteWriter, files = files
        submit(
            { db, effects throws(StoreError) in
                try noteWriter.addUploads(uploads, noteID: noteID, owner: owner, on: db, effects: effects)
            }, owner: owner,
            completion: { result in
                // Bytes without a committed row go again.
                if case .success(.some) = result {} else { files.remove(uploads.map(\.id)) }
                completion(result)
            })
    }

    public func addUploads(
        _ uploads: [NewUpload], noteID: Int64?, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<UploadsAdded?>>
    ) {
        let noteWriter = noteWriter, files = files, instance = instance
        submit(
            { db, effects throws(StoreError) in
                try IdempotencyRows.keyed(claim, owner: owner, claimer: instance, on: db) { () throws(StoreError) in
                    let added = try noteWriter.addUploads(uploads, noteID: noteID, owner: owner, on: db, effects: effects)
                    return (added, added == nil ? nil : "/uploads/\(uploads[0].id)")
                }
            }, owner: owner,
            completion: { result in
                // Bytes without a committed row go again.
                if case .success(.done(.some)) = result {} else { files.remove(uploads.map(\.id)) }
                completion(result)
            })
    }

    public func deleteUpload(id: String, owner: Owner, completion: @escaping StoreCompletion<UploadRemoved?>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in try noteWriter.deleteUpload(id: id, owner: owner, on: db, effects: effects) },
            owner: owner, freesSpace: true, completion: completion)
    }

    public func attachUpload(id: String, noteID: Int64?, owner: Owner, completion: @escaping StoreCompletion<UploadAttached?>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) in
                try noteWriter.attachUpload(id: id, noteID: noteID, owner: owner, on: db, effects: effects)
            }, owner: owner, completion: completion)
    }

    /// Queues `apply` for the next group commit; once it has committed, the files it freed go,
    /// its events are handed to the observer, then `completion` runs — all on the writer thread.
    /// After `close()`, `completion` gets `StoreError.closed` at once on the calling thread.
    func submit<Value: Sendable>(
        _ apply: @escaping @Sendable (SQLiteConnection, WriteEffects) throws(StoreError) -> Value,
        owner: Owner, freesSpace: Bool = false, completion: @escaping StoreCompletion<Value>
    ) {
        let files = files, observer = observer
        let effects = WriteEffects()
        writer.submit(
            .make(
                { db throws(StoreError) in try apply(db, effects) }, freesSpace: freesSpace,
                completion: { result in
                    if case .success = result {
                        files.remove(effects.removed)
                        observer.deliver(effects.events, owner: owner)
                    }
                    completion(result)
                }))
    }

    // MARK: - Uploads

    public func upload(id: String, owner: Owner) throws(StoreError) -> UploadRecord? {
        try readers.withConnection { db throws(StoreError) in try UploadRows.upload(id: id, owner: owner, on: db) }
    }

    public func uploads(_ query: UploadQuery, owner: Owner) throws(StoreError) -> [UploadRecord]? {
        try readers.withConnection { db throws(StoreError) in
            try db.readTransaction { () throws(StoreError) in try UploadRows.page(query, owner: owner, on: db) }
        }
    }

    public func attachments(of noteIDs: [Int64], owner: Owner) throws(StoreError) -> [Int64: [UploadRecord]] {
        guard !noteIDs.isEmpty else { return [:] }
        return try readers.withConnection { db throws(StoreError) in try UploadRows.attachments(of: noteIDs, owner: owner, on: db) }
    }

    public func noteWithAttachments(id: Int64, owner: Owner) throws(StoreError) -> (NoteRecord, [UploadRecord])? {
        try readers.withConnection { db throws(StoreError) in try UploadRows.noteWithAttachments(id: id, owner: owner, on: db) }
    }

    public func notesWithAttachments(_ query: NoteQuery, owner: Owner) throws(StoreError) -> NotePage {
        try readers.withConnection { db throws(StoreError) in
            try db.readTransaction { () throws(StoreError) -> NotePage in
                var page = NotePage(capacity: query.limit)
                try NoteRows.page(query, owner: owner, into: &page, on: db)
                page.attachmentsByNote = try UploadRows.attachments(of: page.notes.map(\.id), owner: owner, on: db)
                return page
            }
        }
    }
}

// MARK: - Accounts

extension SQLiteStore {
    public func users() throws(StoreError) -> [UserRecord] {
        try readers.withConnection { db throws(StoreError) in try AccountRows.users(on: db) }
    }

    public func user(named name: String) throws(StoreError) -> UserRecord? {
        try readers.withConnection { db throws(StoreError) in try AccountRows.user(named: name, on: db) }
    }

    public func user(id: Int64) throws(StoreError) -> UserRecord? {
        try readers.withConnection { db throws(StoreError) in try AccountRows.user(id: id, on: db) }
    }

    public func passwordHash(userID: Int64) throws(StoreError) -> String? {
        try readers.withConnection { db throws(StoreError) in try AccountRows.passwordHash(userID: userID, on: db) }
    }

    public func credential(digest: [UInt8]) throws(StoreError) -> (CredentialRecord, UserRecord)? {
        try readers.withConnection { db throws(StoreError) in try AccountRows.credential(digest: digest, on: db) }
    }

    public func credentials(userID: Int64, kind: CredentialKind) throws(StoreError) -> [CredentialRecord] {
        try readers.withConnection { db throws(StoreError) in try AccountRows.credentials(userID: userID, kind: kind, on: db) }
    }

    /// Queues an account change for the next group commit; `completion` runs on the writer
    /// thread once it is durable. A removed user's files go once the removal has committed.
    public func submit(_ write: AccountWrite, completion: @escaping @Sendable (Result<AccountWriteResult, StoreError>) -> Void) {
        let files = files, now = noteWriter.now
        let effects = WriteEffects()
        writer.submit(
            .make(
                { db throws(StoreError) in try AccountRows.apply(write, now: now(), on: db, changes: effects) },
                completion: { result in
                    if case .success(.done) = result { files.remove(effects.removed) }
                    completion(result)
                }))
    }
}
