/// The note and event queries, shared by the readers and the writer.
///
/// Every query is a fixed SQL string with `?` parameters; a listing picks one of four texts by
/// order and by whether it searches, and a missing cursor binds the far end of the id range.
enum NoteRows {
    /// A `NoteRecord` from a row of `id, body, created_at, updated_at, version`.
    static func record(_ row: Statement, from first: Int32 = 0) -> NoteRecord {
        NoteRecord(
            id: row.int64(first), body: row.string(first + 1), createdAt: row.int64(first + 2),
            updatedAt: row.int64(first + 3), version: row.int64(first + 4))
    }

    static func note(id: Int64, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> NoteRecord? {
        try db.first(
            "SELECT id, body, created_at, updated_at, version FROM notes WHERE id = ? AND owner = ?",
            [.integer(id), .integer(owner.id)]
        ) {
            record($0)
        }
    }

    // MARK: - Listing

    private static let newestFirst =
        "SELECT id, body, created_at, updated_at, version FROM notes WHERE owner = ? AND id < ? ORDER BY id DESC LIMIT ?"
    private static let oldestFirst =
        "SELECT id, body, created_at, updated_at, version FROM notes WHERE owner = ? AND id > ? ORDER BY id ASC LIMIT ?"
    // The same rows read from the table itself in id order, every owner's: see `page`.
    private static let tableNewestFirst =
        "SELECT id, body, created_at, updated_at, version, owner FROM notes WHERE id < ? ORDER BY id DESC"
    private static let tableOldestFirst =
        "SELECT id, body, created_at, updated_at, version, owner FROM notes WHERE id > ? ORDER BY id ASC"
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

    // By last change: the feed's rows of live notes, newest change first (`NoteOrder.recentlyUpdated`).
    private static let recentlyUpdated = """
        SELECT n.id, n.body, n.created_at, n.updated_at, n.version, c.seq
        FROM note_changes AS c CROSS JOIN notes AS n ON n.id = c.note_id AND n.owner = c.owner
        WHERE c.owner = ? AND c.seq < ? ORDER BY c.seq DESC LIMIT ?
        """
    private static let searchRecentlyUpdated = """
        SELECT n.id, n.body, n.created_at, n.updated_at, n.version, c.seq
        FROM note_changes AS c CROSS JOIN notes AS n ON n.id = c.note_id AND n.owner = c.owner
        WHERE c.owner = ? AND c.seq < ? AND n.id IN (SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?)
        ORDER BY c.seq DESC LIMIT ?
        """

    /// Another owner's rows a table scan may pass before the rest of the page is read through
    /// the owner's index: this many, plus one for every two of the owner's found so far.
    static let foreignRowsAllowed = 8

    static func page(_ query: NoteQuery, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> [NoteRecord] {
        var page = NotePage(capacity: query.limit)
        try db.readTransaction { () throws(StoreError) in try self.page(query, owner: owner, into: &page, on: db) }
        return page.records
    }

    /// The same page, its rows copied into `page` as bytes (no String per note). Run it in a
    /// read transaction: a listing may take two statements.
    ///
    /// Without a search, the page starts as a scan of the table in id order, every owner's rows,
    /// skipping the others': the owner's index would cost an index entry and a seek into the
    /// table for every note (about half the SQLite work of a page of 100, measured), and on one
    /// machine one owner usually has most of the rows. Once too many rows are another owner's
    /// (`foreignRowsAllowed`), the rest of the page comes through the index, after the last row
    /// seen — the same notes either way.
    static func page(_ query: NoteQuery, owner: Owner, into page: inout NotePage, on db: SQLiteConnection) throws(StoreError) {
        guard query.limit > 0 else { return }
        var cursor: Int64 =
            switch query.order {
            case .newestFirst, .recentlyUpdated: query.after ?? .max
            case .oldestFirst: query.after ?? .min
            }
        // Once the notes read so far hold the budget, one more is read (the caller sees the cut).
        let budget = query.maxBodyBytes ?? .max
        var total = 0, found = 0
        /// Adds the row's note; whether the page wants another.
        func add(_ row: Statement, position: Int64? = nil) -> Bool {
            let size = append(row, position: position, to: &page)
            found += 1
            defer { total += size }
            return total < budget && found < query.limit
        }
        if query.order == .recentlyUpdated {
            let limit = SQLiteValue.integer(Int64(query.limit))
            switch FullTextQuery(search: query.search) {
            case .nothing: return
            case .match(let match):
                try db.forEachRow(searchRecentlyUpdated, [.integer(owner.id), .integer(cursor), .text(match), limit]) {
                    add($0, position: $0.int64(5))
                }
            case .everything:
                try db.forEachRow(recentlyUpdated, [.integer(owner.id), .integer(cursor), limit]) { add($0, position: $0.int64(5)) }
            }
            return
        }
        switch FullTextQuery(search: query.search) {
        case .nothing:
            return
        case .match(let match):
            let sql = query.order == .newestFirst ? searchNewestFirst : searchOldestFirst
            try db.forEachRow(sql, [.text(match), .integer(owner.id), .integer(cursor), .integer(Int64(query.limit))]) { add($0) }
        case .everything:
            var foreign = 0, abandoned = false, done = false
            try db.forEachRow(query.order == .newestFirst ? tableNewestFirst : tableOldestFirst, [.integer(cursor)]) { row in
                cursor = row.int64(0)
                guard row.int64(5) == owner.id else {
                    foreign += 1
                    abandoned = foreign > foreignRowsAllowed + found / 2
                    return !abandoned
                }
                done = !add(row)
                return !done
            }
            guard abandoned, !done else { return }
            let sql = query.order == .newestFirst ? newestFirst : oldestFirst
            try db.forEachRow(sql, [.integer(owner.id), .integer(cursor), .integer(Int64(query.limit - found))]) { add($0) }
        }
    }

    // MARK: - Events

    /// The last event id ever issued: AUTOINCREMENT's high-water mark, which trimming leaves alone.
    static func lastEventID(on db: SQLiteConnection) throws(StoreError) -> Int64 {
        try db.first("SELECT seq FROM sqlite_sequence WHERE name = 'events'") { $0.int64(0) } ?? 0
    }

    /// `owner`'s events after `after`, or nil when they can't all be replayed (the bounds are
    /// those of the one id sequence all users share): the last `backlog` events are kept (the
    /// writer trims the table only now and then, so older rows may still be there — they count
    /// as gone). Run in a read transaction, so the bounds and the rows come from one snapshot.
    static func events(after: Int64, limit: Int, owner: Owner, backlog: Int64, on db: SQLiteConnection) throws(StoreError) -> [NoteEvent]? {
        let last = try lastEventID(on: db)
        let oldestRow = try db.first("SELECT min(id) FROM events") { $0.optionalInt64(0) }.flatMap { $0 } ?? (last + 1)
        let oldestKept = max(oldestRow, last - backlog + 1)
        // Replayable: every event after `after` is still kept, and `after` was issued (or is 0).
        guard after >= 0, after <= last, after >= oldestKept - 1 else { return nil }
        guard limit > 0, after < last else { return [] }
        return try db.query(
            """
            SELECT id, kind, note_id, note_body, note_created_at, note_updated_at, note_version, created_at, note_merge_base
            FROM events WHERE owner = ? AND id > ? ORDER BY id ASC LIMIT ?
            """, [.integer(owner.id), .integer(after), .integer(Int64(limit))]
        ) { row in
            // Only NoteWriter writes `kind`, always a NoteEventKind raw value.
            NoteEvent(
                id: row.int64(0), kind: NoteEventKind(rawValue: row.string(1)) ?? .updated,
                note: record(row, from: 2), at: row.int64(7), mergeBase: row.optionalInt64(8))
        }
    }

    // MARK: - Change feed

    /// A page of `owner`'s change feed (`NoteFeedPage`). Run in a read transaction, so the
    /// horizon, the last event id and the rows come from one snapshot.
    static func changes(_ query: NoteFeedQuery, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> NoteFeedPage {
        let head = try lastEventID(on: db)
        let pruned = try db.first("SELECT pruned_through FROM feed_marks") { $0.int64(0) } ?? 0
        let (after, walk) = NoteFeedPage.start(since: query.since, prunedThrough: pruned, head: head)
        guard query.limit > 0 else { return NoteFeedPage(walk: walk, head: head) }
        var entries: [NoteFeedEntry] = []
        entries.reserveCapacity(min(query.limit, 1024))
        var notes = NotePage(capacity: query.limit)
        let budget = query.maxBodyBytes ?? .max
        var total = 0
        try db.forEachRow(
            """
            SELECT c.note_id, c.seq, c.version, n.id, n.body, n.created_at, n.updated_at, n.version
            FROM note_changes AS c LEFT JOIN notes AS n ON n.id = c.note_id AND n.owner = c.owner AND c.deleted = 0
            WHERE c.owner = ? AND c.seq > ? ORDER BY c.seq LIMIT ?
            """, [.integer(owner.id), .integer(after), .integer(Int64(query.limit))]
        ) { row in
            let deleted = row.isNull(3)
            entries.append(
                NoteFeedEntry(
                    noteID: row.int64(0), seq: row.int64(1), version: deleted ? row.int64(2) : row.int64(7),
                    deleted: deleted))
            // The body's bytes into the page's one buffer, as a listing's: no String.
            if !deleted { total += append(row, from: 3, to: &notes) }
            return total < budget
        }
        if !notes.isEmpty { notes.attachmentsByNote = try UploadRows.attachments(of: notes.notes.map(\.id), owner: owner, on: db) }
        return NoteFeedPage(entries: entries, notes: notes, walk: walk, head: head)
    }

    /// Copies the note of a row of `id, body, created_at, updated_at, version` (from column
    /// `first`) into `page`, its body as bytes; the body's size.
    @discardableResult
    static func append(_ row: Statement, from first: Int32 = 0, position: Int64? = nil, to page: inout NotePage) -> Int {
        let body = row.textBytes(first + 1)
        page.append(
            id: row.int64(first), body: body, createdAt: row.int64(first + 2), updatedAt: row.int64(first + 3),
            version: row.int64(first + 4), position: position)
        return body.count
    }
}
