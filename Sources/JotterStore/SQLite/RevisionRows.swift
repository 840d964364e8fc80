/// The revision statements of the SQLite store, shared by the readers and the writer.
enum RevisionRows {
    /// Keeps `note`'s body as its revision (`mergeBase`: the base of the merge that made it).
    static func keep(_ note: NoteRecord, mergeBase: Int64? = nil, owner: Owner, on db: SQLiteConnection) throws(StoreError) {
        try db.run(
            """
            INSERT INTO note_revisions (note_id, version, owner, body, size, created_at, merge_base) VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .integer(note.id), .integer(note.version), .integer(owner.id), .text(note.body), .integer(Int64(note.body.utf8.count)),
                .integer(note.updatedAt), mergeBase.map { .integer($0) } ?? .null,
            ])
    }

    /// Forgets every revision of the note (it is gone).
    static func removeAll(noteID: Int64, owner: Owner, on db: SQLiteConnection) throws(StoreError) {
        try db.run("DELETE FROM note_revisions WHERE note_id = ? AND owner = ?", [.integer(noteID), .integer(owner.id)])
    }

    /// Whether `owner` has the note `noteID` live (`inTrash` false) or in the trash.
    static func noteIsKept(_ noteID: Int64, owner: Owner, inTrash: Bool, on db: SQLiteConnection) throws(StoreError) -> Bool {
        let found = try db.first(
            inTrash ? "SELECT 1 FROM trashed_notes WHERE id = ? AND owner = ?" : "SELECT 1 FROM notes WHERE id = ? AND owner = ?",
            [.integer(noteID), .integer(owner.id)]
        ) { _ in true }
        return found != nil
    }

    /// Newest first, without bodies, of a note `noteIsKept` found (in the same transaction).
    static func list(noteID: Int64, before: Int64?, limit: Int, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> [NoteRevision] {
        guard limit > 0 else { return [] }
        return try db.query(
            """
            SELECT version, created_at, size, merge_base FROM note_revisions
            WHERE note_id = ? AND owner = ? AND version < ? ORDER BY version DESC LIMIT ?
            """, [.integer(noteID), .integer(owner.id), .integer(before ?? .max), .integer(Int64(limit))]
        ) { row in
            NoteRevision(
                noteID: noteID, version: row.int64(0), createdAt: row.int64(1), size: row.int64(2),
                mergeBase: row.optionalInt64(3), body: nil)
        }
    }

    static func revision(noteID: Int64, version: Int64, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> NoteRevision? {
        try db.first(
            """
            SELECT created_at, size, merge_base, body FROM note_revisions WHERE note_id = ? AND version = ? AND owner = ?
            """, [.integer(noteID), .integer(version), .integer(owner.id)]
        ) { row in
            NoteRevision(
                noteID: noteID, version: version, createdAt: row.int64(0), size: row.int64(1), mergeBase: row.optionalInt64(2),
                body: row.string(3))
        }
    }

    /// The revisions `RevisionRetention` lets go as of `now`: among those older than its
    /// `keepAll`, all but the newest (highest version) of each UTC day while younger than
    /// `daily`, then of each week. A note's newest revision is the newest of its day or week, so
    /// it always stays. Only the revisions past `keepAll` are read (`note_revisions_by_time`):
    /// what earlier sweeps left, at most one a day and one a week per note. Shared by both
    /// stores: `parameter(1)` is the keep-all cutoff, `parameter(2)` the daily one.
    static func thinned(_ parameter: (Int) -> String) -> String {
        """
        SELECT note_id, version FROM (
            SELECT note_id, version,
                   row_number() OVER (PARTITION BY note_id,
                                      CASE WHEN created_at >= \(parameter(2)) THEN created_at / 86400 ELSE -1 - created_at / 604800 END
                                      ORDER BY version DESC) AS rank
            FROM note_revisions WHERE created_at < \(parameter(1))
        ) AS ranked WHERE rank > 1
        """
    }

    private static let thin = "DELETE FROM note_revisions WHERE (note_id, version) IN (\(thinned { "?\($0)" })) RETURNING 1"

    /// Deletes what `thinned` selects; how many.
    static func thin(_ retention: RevisionRetention, now: Int64, on db: SQLiteConnection) throws(StoreError) -> Int {
        try db.query(thin, [.integer(now - retention.keepAll), .integer(now - retention.daily)]) { _ in 1 }.count
    }
}
