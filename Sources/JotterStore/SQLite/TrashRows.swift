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
    /// trashed note `after`.
    static func page(limit: Int, after: Int64?, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> [TrashedNote] {
        guard limit > 0 else { return [] }
        var cursor: (deletedAt: Int64, seq: Int64, id: Int64) = (.max, .max, .max)
        if let after {
            guard
                let found = try db.first(
                    "SELECT deleted_at, deleted_seq FROM trashed_notes WHERE id = ? AND owner = ?",
                    [.integer(after), .integer(owner.id)], row: { ($0.int64(0), $0.int64(1)) })
            else { return [] }
            cursor = (found.0, found.1, after)
        }
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
}
