import JotterSystem

/// The trash's reads, shared by the readers and the writer.
enum TrashRows {
    static func note(id: Int64, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> TrashedNote? {
        try db.first(
            """
            SELECT id, body, created_at, updated_at, version, deleted_at FROM trashed_notes WHERE id = ? AND owner = ?
            """, [.integer(id), .integer(owner.id)]
        ) { TrashedNote(note: NoteRows.record($0), deletedAt: $0.int64(5)) }
    }

    /// Most recently deleted first (within a second, the later deletion first); after the
    /// trashed note `after`, or after its place when it left the trash in the last week (nil:
    /// `after` names neither).
    static func page(limit: Int, after: Int64?, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> [TrashedNote]? {
        var cursor: (deletedAt: Int64, seq: Int64, id: Int64) = (.max, .max, .max)
        if let after {
            guard
                let found = try db.first(
                    """
                    SELECT deleted_at, deleted_seq FROM trashed_notes WHERE id = ?1 AND owner = ?2
                    UNION ALL SELECT deleted_at, deleted_seq FROM trash_places WHERE id = ?1 AND owner = ?2 AND left_at >= ?3
                    """,
                    [.integer(after), .integer(owner.id), .integer(WallClock.seconds() - placeKept)], row: { ($0.int64(0), $0.int64(1)) })
            else { return nil }
            cursor = (found.0, found.1, after)
        }
        guard limit > 0 else { return [] }
        return try db.query(
            """
            SELECT id, body, created_at, updated_at, version, deleted_at FROM trashed_notes
            WHERE owner = ? AND (deleted_at, deleted_seq, id) < (?, ?, ?)
            ORDER BY deleted_at DESC, deleted_seq DESC, id DESC LIMIT ?
            """,
            [.integer(owner.id), .integer(cursor.deletedAt), .integer(cursor.seq), .integer(cursor.id), .integer(Int64(limit))]
        ) {
            TrashedNote(note: NoteRows.record($0), deletedAt: $0.int64(5))
        }
    }

    /// How long the place of a note that left the trash is kept for cursors.
    static let placeKept: Int64 = 7 * 86400

    /// Takes note `id` out of the trash (restored or purged), keeping its place in the trash's
    /// order for a week, and forgets older places.
    static func leave(id: Int64, now: Int64, on db: SQLiteConnection) throws(StoreError) {
        try db.run("DELETE FROM trash_places WHERE left_at < ?", [.integer(now - placeKept)])
        try db.run(
            """
            INSERT OR REPLACE INTO trash_places (id, owner, deleted_at, deleted_seq, left_at)
            SELECT id, owner, deleted_at, deleted_seq, ? FROM trashed_notes WHERE id = ?
            """, [.integer(now), .integer(id)])
        try db.run("DELETE FROM trashed_notes WHERE id = ?", [.integer(id)])
    }
}
