import JotterPostgres

/// A new history for a PostgreSQL database restored from a dump, by the rules of the SQLite
/// store's restore (`DataFolderBackup.startNewHistory`): what clients learned from the server
/// after the dump was taken cannot be mistaken for the restored state.
///
/// - Event ids go on `DataFolderBackup.restoreGap` transactions' worth past every id the
///   database knows (`event_marks.xid_offset`, `PostgresSchema` version 13), and never below
///   the ids this cluster's transactions gave it before: in a cluster whose transaction ids
///   are behind the database's (a restore onto a new machine) they would otherwise sit below
///   the restored ones, which stay above the readers' horizon — invisible to the change feed.
/// - The change feed holds no cursor from before (`feed_pruned_through`): each client walks
///   the complete state once, and drops what it held that the restore took back.
/// - The event backlog is emptied (`trimmed_through`): a stream resumed with a
///   `Last-Event-ID` from before is told to reload.
/// - Note ids go on `restoreGap` past the highest issued, so none is issued twice.
///
/// One transaction, with `events` locked against writers (`EXCLUSIVE`): no event made with the
/// old offset commits after it.
enum PostgresHistory {
    /// What a new history set.
    struct Started: Sendable, Equatable {
        /// The highest event id the database knew.
        var known: Int64
        /// Every event id from now on is above this; cursors below it walk once.
        var eventsFrom: Int64
        /// The id the next note gets.
        var nextNoteID: Int64

        /// What the log says when opening a restored database started it.
        var restoredFromAheadDescription: String {
            "started a new history: the database holds event ids (up to \(known)) beyond this PostgreSQL cluster's "
                + "transactions, so it was restored from another cluster; event ids go on after \(eventsFrom), note ids "
                + "from \(nextNoteID), and every client walks its notes once"
        }
    }

    /// Starts a new history when the database was restored from a cluster ahead of this one
    /// (`restoredFromAhead`), under the migrations' lock: instances starting at once start one.
    static func startIfRestoredFromAhead(on db: PostgresConnection) throws -> Started? {
        try db.transaction { db -> Started? in
            try db.query("SELECT pg_advisory_xact_lock($1)", [PostgresSchema.migrationLock])
            guard try restoredFromAhead(on: db) else { return nil }
            return try start(on: db)
        }
    }

    /// Every event id the database holds or remembers: events, the change feed, the marks,
    /// the trash's order.
    private static let known = """
        greatest(coalesce((SELECT max(id) FROM events), 0), coalesce((SELECT max(seq) FROM note_changes), 0),
                 coalesce((SELECT max(deleted_seq) FROM trashed_notes), 0),
                 m.high_water, m.trimmed_through, m.feed_pruned_through)
        """

    /// Whether the database knows an event id that no transaction of this cluster can have
    /// made — at or above where the next transaction's ids start (`pg_snapshot_xmax`, the first
    /// transaction id not yet given out): the database was restored from another cluster whose
    /// transaction ids were ahead of this one's. (The readers' horizon, `pg_snapshot_xmin`, is
    /// no test: events committed while an older transaction runs are above it, rightly.)
    static func restoredFromAhead(on db: PostgresConnection) throws -> Bool {
        try db.query(
            """
            SELECT \(known) >= ((pg_snapshot_xmax(pg_current_snapshot())::text::bigint + m.xid_offset) << 16) FROM event_marks AS m
            """)[0].value(0)
    }

    /// Starts a new history inside the caller's transaction (which must not have appended events).
    static func start(on db: PostgresConnection) throws -> Started {
        try db.execute("LOCK TABLE events IN EXCLUSIVE MODE")
        // After the lock: every writer that appended events before it has committed.
        let row = try db.query(
            """
            SELECT pg_current_xact_id()::text::bigint, pg_snapshot_xmin(pg_current_snapshot())::text::bigint, m.xid_offset, \(known)
            FROM event_marks AS m
            """)[0]
        let xid = try row.int64(0), xmin = try row.int64(1), offset = try row.int64(2), known = try row.int64(3)
        // Every event from now on is made by a transaction whose id is at least `xmin` (those
        // older hold no lock on `events`: they have made none), so its id is at least
        // `base << 16`: past every known id, and every id this cluster gave the database before
        // (below `(xid + offset) << 16`). `start`, just below, is under the readers' horizon as
        // soon as this commits: the feed's last event id (`high_water`) at once, so a walk that
        // ends there is not walked again.
        let base = max((known >> 16) + 1, xid + offset) + DataFolderBackup.restoreGap
        let start = (base << 16) - 1
        try db.query("DELETE FROM events")
        try db.query(
            "UPDATE event_marks SET xid_offset = $1, high_water = $2, trimmed_through = $2, feed_pruned_through = $2",
            [base - xmin, start])
        let issued = try db.query(
            """
            SELECT greatest(coalesce(pg_sequence_last_value(pg_get_serial_sequence('notes', 'id')::regclass), 0),
                            coalesce((SELECT max(id) FROM notes), 0), coalesce((SELECT max(id) FROM trashed_notes), 0),
                            coalesce((SELECT max(note_id) FROM note_changes), 0))
            """)[0].int64(0)
        let next = issued + DataFolderBackup.restoreGap + 1
        try db.execute("ALTER TABLE notes ALTER COLUMN id RESTART WITH \(next)")
        return Started(known: known, eventsFrom: start, nextNoteID: next)
    }

    /// Instances running on the database: the sessions of their event feeds
    /// (`PostgresEventFeed`), each holding its instance's advisory lock.
    static func runningInstances(on db: PostgresConnection) throws -> Int64 {
        try db.query(
            """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()
            """, [PostgresEventFeed.applicationName])[0].int64(0)
    }
}

extension PostgresStore {
    /// What `startNewHistory(url:)` did.
    public struct NewHistory: Sendable, Equatable {
        /// What opening the database did to its schema first (a dump from an older jotter).
        public var migration: SchemaMigration?
        /// Every event id from now on is above this; clients whose cursors are below it
        /// walk the notes once.
        public var eventsFrom: Int64
        /// The id the next note gets.
        public var nextNoteID: Int64
    }

    /// Starts a new history on the Jotter database at `url` (`PostgresHistory`): for the
    /// operator, after restoring a dump into the cluster it was taken from (a restore into
    /// another cluster starts one by itself when an instance opens it). Migrates an older
    /// schema first. Refused while instances run on the database — the sessions of their event
    /// feeds — and on a database that holds no Jotter data.
    public static func startNewHistory(url: String) throws(StoreError) -> NewHistory {
        let db: PostgresConnection
        do { db = try PostgresConnection(url: url) } catch {
            throw .invalidArgument("cannot open the PostgreSQL database: \(error)")
        }
        return try mapped {
            let holds: Bool = try db.query("SELECT to_regclass('schema_version') IS NOT NULL")[0].value(0)
            guard holds else { throw StoreError.notJotterDatabase(file: "the PostgreSQL database") }
            let running = try PostgresHistory.runningInstances(on: db)
            guard running == 0 else {
                throw StoreError.inUse("\(running) jotter instance(s) are running on the database; stop them first")
            }
            let migration = try PostgresSchema.prepare(db, name: "the PostgreSQL database")
            let started = try db.transaction { db in
                try db.query("SELECT pg_advisory_xact_lock($1)", [PostgresSchema.migrationLock])
                return try PostgresHistory.start(on: db)
            }
            return NewHistory(migration: migration, eventsFrom: started.eventsFrom, nextNoteID: started.nextNoteID)
        }
    }
}
