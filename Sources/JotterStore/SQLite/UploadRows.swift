import JotterSystem

/// The upload queries, shared by the readers and the writer.
enum UploadRows {
    static let columns = "id, filename, content_type, size, sha256, created_at, note_id"

    static func record(_ row: Statement, from first: Int32 = 0) -> UploadRecord {
        UploadRecord(
            id: row.string(first), filename: row.string(first + 1), contentType: row.string(first + 2), size: row.int64(first + 3),
            sha256: row.string(first + 4), createdAt: row.int64(first + 5), noteID: row.isNull(first + 6) ? nil : row.int64(first + 6))
    }

    /// A note and its attachments in one statement (one snapshot, one lock): the note's
    /// columns, then an upload's (NULL when it has none), a row per attachment.
    static func noteWithAttachments(id: Int64, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> (NoteRecord, [UploadRecord])? {
        var note: NoteRecord?
        var attachments: [UploadRecord] = []
        try db.forEachRow(
            """
            SELECT n.id, n.body, n.created_at, n.updated_at, n.version,
                   u.id, u.filename, u.content_type, u.size, u.sha256, u.created_at, u.note_id
            FROM notes AS n LEFT JOIN uploads AS u ON u.note_id = n.id
            WHERE n.id = ? AND n.owner = ? ORDER BY u.rowid
            """, [.integer(id), .integer(owner.id)]
        ) { row in
            if note == nil { note = NoteRows.record(row) }
            if !row.isNull(5) { attachments.append(record(row, from: 5)) }
            return true
        }
        return note.map { ($0, attachments) }
    }

    static func upload(id: String, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> UploadRecord? {
        try db.first("SELECT \(columns) FROM uploads WHERE id = ? AND owner = ?", [.text(id), .integer(owner.id)]) { record($0) }
    }

    // One fixed text per filter; the cursor is a rowid (the far end when there is none).
    private static let everyUpload = "SELECT \(columns) FROM uploads WHERE owner = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?"
    private static let unattachedUploads =
        "SELECT \(columns) FROM uploads WHERE owner = ? AND note_id IS NULL AND rowid < ? ORDER BY rowid DESC LIMIT ?"
    private static let uploadsOfNote =
        "SELECT \(columns) FROM uploads WHERE owner = ? AND note_id = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?"

    /// A page of `owner`'s uploads, newest first (insertion order, by rowid); nil when the
    /// cursor names no upload of theirs, nor one of theirs deleted in the last week. Run in a read transaction, so the cursor and the page
    /// come from one snapshot.
    static func page(_ query: UploadQuery, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> [UploadRecord]? {
        var cursor = Int64.max
        if let after = query.after {
            // A deleted upload's place is kept for a week: the listing goes on after it.
            var found = try db.first(
                "SELECT rowid FROM uploads WHERE id = ? AND owner = ?", [.text(after), .integer(owner.id)], row: { $0.int64(0) })
            if found == nil {
                found = try db.first(
                    "SELECT position FROM removed_uploads WHERE id = ? AND owner = ? AND removed_at >= ?",
                    [.text(after), .integer(owner.id), .integer(WallClock.seconds() - removedKept)], row: { $0.int64(0) })
            }
            guard let rowid = found else { return nil }
            cursor = rowid
        }
        guard query.limit > 0 else { return [] }
        let limit = SQLiteValue.integer(Int64(query.limit)), who = SQLiteValue.integer(owner.id)
        switch query.attachment {
        case .any: return try db.query(everyUpload, [who, .integer(cursor), limit]) { record($0) }
        case .unattached: return try db.query(unattachedUploads, [who, .integer(cursor), limit]) { record($0) }
        case .note(let id): return try db.query(uploadsOfNote, [who, .integer(id), .integer(cursor), limit]) { record($0) }
        }
    }

    private static let attachmentsBetween = "SELECT \(columns) FROM uploads WHERE note_id BETWEEN ? AND ? AND owner = ? ORDER BY note_id, rowid"

    /// Attachments of each note, oldest first: one range scan of the note index over the
    /// span of ids (fixed SQL), keeping only the notes asked for.
    static func attachments(of noteIDs: [Int64], owner: Owner, on db: SQLiteConnection) throws(StoreError) -> [Int64: [UploadRecord]] {
        guard let low = noteIDs.min(), let high = noteIDs.max() else { return [:] }
        return try db.query(attachmentsBetween, [.integer(low), .integer(high), .integer(owner.id)]) { record($0) }.byNote(keeping: noteIDs)
    }

    /// How long a deleted upload's place is kept for cursors.
    static let removedKept: Int64 = 7 * 86400

    /// Keeps the places of the uploads `condition` selects (`?` bound to `values`), about to be
    /// deleted, and forgets places older than a week.
    static func keepPlaces(where condition: String, _ values: [SQLiteValue], now: Int64, on db: SQLiteConnection) throws(StoreError) {
        try db.run("DELETE FROM removed_uploads WHERE removed_at < ?", [.integer(now - removedKept)])
        try db.run(
            "INSERT OR REPLACE INTO removed_uploads (id, owner, position, removed_at) SELECT id, owner, rowid, ? FROM uploads WHERE "
                + condition, [.integer(now)] + values)
    }

    /// Which of `ids` have a row (one fixed statement: the ids as a JSON array).
    static func known(_ ids: [String], on db: SQLiteConnection) throws(StoreError) -> Set<String> {
        // Upload ids are hex digits: the array needs no escaping.
        let array = "[" + ids.map { "\"" + $0 + "\"" }.joined(separator: ",") + "]"
        return Set(try db.query("SELECT id FROM uploads WHERE id IN (SELECT value FROM json_each(?))", [.text(array)]) { $0.string(0) })
    }
}

/// What one write leaves to do once its transaction has committed: upload files to delete,
/// events to publish. Only the writer thread touches it: filled while the write runs, read in
/// its completion, which the writer also runs — so it needs no lock.
final class WriteEffects: @unchecked Sendable {
    /// Uploads whose rows were deleted: their files go once the transaction has committed.
    var removed: [String] = []
    /// The events the write appended, published once it has committed.
    var events: [NoteEvent] = []
}
