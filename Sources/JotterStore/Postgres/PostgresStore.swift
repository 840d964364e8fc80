#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterBlobs
import JotterPostgres
import Synchronization
import JotterSystem

/// The store on PostgreSQL, for several `jotter serve` instances sharing one database.
///
/// Reads run on the calling thread on a pooled connection (they wait on the network, so the
/// server runs requests that read on `readThreads`). Writes run on the store's own threads,
/// each in one READ COMMITTED transaction with `synchronous_commit` on, and call their
/// completion once `COMMIT` has returned. Retryable failures (serialization failure, deadlock,
/// a connection lost before `COMMIT`) are retried inside the store; PostgreSQL unreachable is
/// `StoreError.unavailable`, and the store comes back by itself when the server does.
///
/// Events are ordered by committing transaction (`PostgresSchema`), and every instance learns
/// of every event, its own included, through `observeEvents` (`PostgresEventFeed`).
///
/// ```swift
/// let store = try PostgresStore(url: "postgres://jotter@db/jotter", poolSize: 8, blobs: blobs)
/// defer { store.close() }
/// store.createNote(body: "Buy milk", owner: user.owner) { result in … }   // called once committed
/// ```
public final class PostgresStore: DataStore {
    /// Settings beyond the URL and the pool size.
    public struct Options: Sendable {
        /// Events kept for replay by `events(after:limit:owner:)`; at least 1.
        public var eventBacklog: Int
        /// How long a caller waits for a pooled connection, in milliseconds.
        public var acquireTimeoutMilliseconds: Int
        /// How many times a transaction is run in all when it fails with a retryable error.
        public var attempts: Int

        public init(eventBacklog: Int = 10_000, acquireTimeoutMilliseconds: Int = 5_000, attempts: Int = 3) {
            self.eventBacklog = eventBacklog
            self.acquireTimeoutMilliseconds = acquireTimeoutMilliseconds
            self.attempts = attempts
        }
    }

    /// Where upload bytes are; the store deletes an upload's blob once its row's delete committed.
    public let blobs: any BlobStore
    let options: Options
    /// A folder for files of requests in flight (multipart parts before they are stored).
    public let temporaryDirectory: String
    public let migration: SchemaMigration?
    /// Why opening the database started a new history (`PostgresHistory`), when it did.
    public let newHistory: String?
    let pool: PostgresPool
    /// Where writes run, and requests that read (`readThreads`).
    public let threads: StoreThreads
    let feed: PostgresEventFeed
    /// This instance's number among those sharing the database: random, positive, fixed for
    /// its life. Its event-feed session holds the advisory lock of this number, so that the
    /// others can tell whether it is alive (`PostgresIdempotencyRows`).
    let instance = Int64.random(in: 1...Int64.max)
    /// The hourly orphan sweep of the blobs (`PostgresStore+Sweep.swift`).
    private let sweeper: PeriodicTask
    /// `close()` has begun (it runs once).
    private let closing = Atomic<Bool>(false)
    /// `close()` has drained the threads: reads and writes are refused.
    private let closed = Atomic<Bool>(false)

    /// Connects, migrates (or refuses a newer schema, untouched) and starts the store's threads.
    ///
    /// - Parameters:
    ///   - url: a `postgres://` URL or a libpq connection string.
    ///   - poolSize: the most connections open at once (the event feed has one more of its own).
    ///   - blobs: where upload bytes are.
    ///   - temporaryDirectory: where requests keep files in flight (created if missing).
    /// - Throws: `StoreError.newerSchema`, `.notJotterDatabase`, `.unavailable` when PostgreSQL
    ///   can't be reached, `.invalidArgument` for a URL libpq can't read.
    public init(
        url: String, poolSize: Int, blobs: any BlobStore, temporaryDirectory: String,
        options: Options = Options()
    ) throws(StoreError) {
        guard options.eventBacklog >= 1 else { throw .invalidArgument("eventBacklog must be at least 1") }
        self.blobs = blobs
        do {
            try FileManager.default.createDirectory(atPath: temporaryDirectory, withIntermediateDirectories: true)
        } catch {
            throw .invalidArgument("cannot create the folder \(temporaryDirectory): \(error)")
        }
        self.temporaryDirectory = temporaryDirectory
        self.options = options
        do {
            pool = try PostgresPool(.init(url: url, size: poolSize, acquireTimeoutMilliseconds: options.acquireTimeoutMilliseconds))
        } catch {
            throw .invalidArgument("not a PostgreSQL URL: \(error)")
        }
        let pool = pool
        let (migration, history, position) = try Self.mapped {
            try Self.retrying(options.attempts) {
                try pool.withConnection { db in
                    (
                        try PostgresSchema.prepare(db, name: "the PostgreSQL database"),
                        try PostgresHistory.startIfRestoredFromAhead(on: db), try PostgresNoteRows.lastEventID(on: db)
                    )
                }
            }
        }
        self.migration = migration
        newHistory = history?.restoredFromAheadDescription
        threads = try StoreThreads(count: max(2, 2 * pool.configuration.size))
        do {
            feed = try PostgresEventFeed(url: url, backlog: options.eventBacklog, position: position, presence: instance)
        } catch {
            threads.stop()
            throw error
        }
        let sweep = Self.uploadSweep(blobs: blobs, pool: pool)
        sweeper = PeriodicTask(every: 3600, firstAfter: 60) { _ = try? sweep.run(now: WallClock.seconds()) }
        sweeper.start()
    }

    deinit { close() }

    /// Runs the work queued on the threads to its end — with the reads and writes it makes
    /// (a request's abort recording what it received) — and ends them; then refuses reads and
    /// writes (`StoreError.closed`) and closes every connection. Idempotent.
    /// Whether the database at `url` holds Jotter's data (its `schema_version` table), read
    /// without changing anything: for tools that must not turn a mistyped database into an
    /// empty store, as opening one (which migrates it) would.
    public static func holdsJotterData(url: String) throws(StoreError) -> Bool {
        do {
            let db = try PostgresConnection(url: url)
            return try db.query("SELECT to_regclass('schema_version') IS NOT NULL")[0].value(0)
        } catch {
            throw .invalidArgument("cannot read the PostgreSQL database: \(error)")
        }
    }

    public func close() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sweeper.stop()
        threads.stop()
        closed.store(true, ordering: .releasing)
        feed.stop()
        pool.close()
    }

    /// The store's threads: every read waits on the network.
    public var readThreads: StoreThreads? { threads }

    /// This store: the rows of partial uploads are in PostgreSQL, for every instance.
    public var bucketPartialUploads: (any BucketPartialUploadStore)? { self }

    /// nil: the data is backed up with PostgreSQL's tools (`pg_dump`) and the blob store's.
    public var backups: (any StoreBackups)? { nil }

    /// Every committed event, exactly once each, in event-id order — this instance's and every
    /// other's — on the event thread, from the last event id when it is set.
    public func observeEvents(_ handler: @escaping @Sendable (NoteEvent, Owner) -> Void) {
        feed.observe(handler, from: try? lastEventID())
    }

    /// `["database": "ok"]`, or why not.
    public func health() -> [String: String] {
        do {
            try read { db in _ = try db.query("SELECT 1") }
            return ["database": "ok"]
        } catch {
            return ["database": error.message]
        }
    }

    // MARK: - Running reads and writes

    /// Runs a read on a pooled connection, again when it failed in a way worth retrying.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws(StoreError) -> T {
        guard !closed.load(ordering: .relaxed) else { throw .closed }
        return try Self.mapped { try Self.retrying(options.attempts) { try pool.withConnection(body) } }
    }

    /// Runs `body` in a transaction on a store thread (retried when that is safe), deletes the
    /// blobs of the uploads it removed once it committed, then calls `completion`. From a store
    /// thread (a blocking convenience inside dispatched work) it runs right there.
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresWrite) throws -> T, completion: @escaping StoreCompletion<T>) {
        // Refused once closed; work queued before close() still runs, and writes (close() drains
        // the threads first).
        guard !closed.load(ordering: .acquiring) else { return completion(.failure(.closed)) }
        let work: @Sendable () -> Void = { [self] in
            let result = Result { () throws(StoreError) -> T in
                let (value, removed) = try Self.mapped {
                    try Self.retrying(options.attempts) {
                        try pool.withConnection { db -> (T, [String]) in
                            // Durable when acknowledged, whatever the server's default.
                            let (value, removed, txid) = try db.transaction(settings: [("synchronous_commit", "on")]) {
                                db -> (T, [String], String?) in
                                let write = PostgresWrite(db: db, now: WallClock.seconds())
                                let value = try body(write)
                                guard write.events > 0 else { return (value, write.removedUploads, nil) }
                                // Wake every instance's feed.
                                let txid: String? = try db.execute("NOTIFY \(PostgresEventFeed.channel); SELECT pg_current_xact_id()")
                                    .first?.value(0)
                                return (value, write.removedUploads, txid)
                            }
                            if let txid { Self.waitUntilVisible(txid, on: db) }
                            return (value, removed)
                        }
                    }
                }
                // Blobs follow their rows: deleted once the delete has committed (a failure leaves an orphan for the sweep).
                for id in removed { try? blobs.delete(UploadRecord.blobKey(id)) }
                return value
            }
            completion(result)
        }
        if threads.isCurrent { work() } else { threads.run(work) }
    }

    /// Waits (up to 10 s) until every transaction older than `txid` has ended, so that the
    /// events `txid` committed are visible to every reader — `lastEventID()` and `events(after:)`
    /// included — when its write is acknowledged. Usually at once; longer while an older
    /// transaction on the cluster is still open.
    private static func waitUntilVisible(_ txid: String, on db: PostgresConnection) {
        var pause: UInt32 = 500
        let deadline = MonotonicClock.seconds() + 10
        while MonotonicClock.seconds() < deadline {
            guard let visible: Bool = try? db.query("SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8", [txid])[0].value(0),
                !visible
            else { return }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
    }

    /// Runs `body` up to `attempts` times while it fails in a way that makes running it again
    /// safe (`PostgresError.isRetryable`), pausing briefly between.
    static func retrying<T>(_ attempts: Int, _ body: () throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try body()
            } catch let error as PostgresError where error.isRetryable && attempt < attempts {
                usleep(UInt32(attempt) * 50_000)
                attempt += 1
            }
        }
    }

    /// `body`'s errors as `StoreError`s: PostgreSQL unreachable or overloaded is `.unavailable`.
    static func mapped<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch let error as StoreError {
            throw error
        } catch let error as PostgresError {
            throw error.isTransient ? StoreError.unavailable(error.description) : StoreError.database(error.description)
        } catch {
            throw StoreError.database("\(error)")
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
