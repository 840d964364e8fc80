/// The note and event queries, shared by the readers and the writer.
///
/// Every query is a fixed SQL string with `?` parameters; a listing picks one of four texts by
/// order and by whether it searches, and a missing cursor binds the far end of the id range.
enum NoteRows {
    /// A `NoteRecord` from a row of `id, body, created_at, updated_at, version`.
    static func record(_ row: Statement, from first: Int32 = 0) -> NoteRecord {
        NoteRecord(id: row.int64(first), body: row.string(first + 1), createdAt: row.int64(first + 2),
                   updatedAt: row.int64(first + 3), version: row.int64(first + 4))
    }

    static func note(id: Int64, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> NoteRecord? {
        try db.first("SELECT id, body, created_at, updated_at, version FROM notes WHERE id = ? AND owner = ?",
                     [.integer(id), .integer(owner.id)]) {
            record($0)
        }
    }

    // MARK: - Listing

    private static let newestFirst =
        "SELECT id, body, created_at, updated_at, version FROM notes WHERE owner = ? AND id < ? ORDER BY id DESC LIMIT ?"
    private static let oldestFirst =
        "SELECT id, body, created_at, updated_at, version FROM notes WHERE owner = ? AND id > ? ORDER BY id ASC LIMIT ?"
    // The FTS table drives the loop (CROSS JOIN keeps it outermost) and yields rowids in order.
    private static let searchNewestFirst = """
        SELECT n.id, n.body, n.created_at, n.updated_at, n.version
        FROM notes_fts CROSS JOIN notes AS n ON n.id = notes_fts.rowid
        WHERE notes_fts MATCH ? AND n.owner = ? AND notes_fts.rowid < ? ORDER BY notes_fts.rowid DESC LIMIT ?
        """
    private static let searchOldestFirst = """
        SELECT n.id, n.body, n.created_at, n.updated_at, n.version
        FROM notes_fts CROSS JOIN notes AS n ON n.id = notes_fts.rowid
        WHERE notes_fts MATCH ? AND n.owner = ? AND notes_fts.rowid > ? ORDER BY notes_fts.rowid ASC LIMIT ?
        """

    static func page(_ query: NoteQuery, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> [NoteRecord] {
        guard query.limit > 0 else { return [] }
        let limit = SQLiteValue.integer(Int64(query.limit))
        let cursor: SQLiteValue = switch query.order {
        case .newestFirst: .integer(query.after ?? .max)
        case .oldestFirst: .integer(query.after ?? .min)
        }
        let sql: String
        let values: [SQLiteValue]
        switch FullTextQuery(search: query.search) {
        case .nothing:
            return []
        case .match(let match):
            sql = query.order == .newestFirst ? searchNewestFirst : searchOldestFirst
            values = [.text(match), .integer(owner.id), cursor, limit]
        case .everything:
            sql = query.order == .newestFirst ? newestFirst : oldestFirst
            values = [.integer(owner.id), cursor, limit]
        }
        guard let budget = query.maxBodyBytes else { return try db.query(sql, values) { record($0) } }
        var total = 0
        return try db.query(sql, values, row: { record($0) }, last: { note in
            defer { total += note.body.utf8.count }
            return total >= budget
        })
    }

    // MARK: - Events

    /// The last event id ever issued: AUTOINCREMENT's high-water mark, which trimming leaves alone.
    static func lastEventID(on db: SQLiteConnection) throws(StoreError) -> Int64 {
        try db.first("SELECT seq FROM sqlite_sequence WHERE name = 'events'") { $0.int64(0) } ?? 0
    }

    /// `owner`'s events after `after`, or nil when they can't all be replayed (the bounds are
    /// those of the one id sequence all users share). Run in a read transaction, so the bounds
    /// and the rows come from one snapshot.
    static func events(after: Int64, limit: Int, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> [NoteEvent]? {
        let last = try lastEventID(on: db)
        let oldestKept = try db.first("SELECT min(id) FROM events") { $0.optionalInt64(0) }.flatMap { $0 } ?? (last + 1)
        // Replayable: every event after `after` is still kept, and `after` was issued (or is 0).
        guard after >= 0, after <= last, after >= oldestKept - 1 else { return nil }
        guard limit > 0, after < last else { return [] }
        return try db.query("""
            SELECT id, kind, note_id, note_body, note_created_at, note_updated_at, note_version, created_at
            FROM events WHERE owner = ? AND id > ? ORDER BY id ASC LIMIT ?
            """, [.integer(owner.id), .integer(after), .integer(Int64(limit))]) { row in
            // Only NoteWriter writes `kind`, always a NoteEventKind raw value.
            NoteEvent(id: row.int64(0), kind: NoteEventKind(rawValue: row.string(1)) ?? .updated,
                      note: record(row, from: 2), at: row.int64(7))
        }
    }
}
