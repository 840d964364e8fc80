import JotterPostgres
import JotterSystem

/// The upload statements of the PostgreSQL store. Uploads are ordered by `seq`, their
/// insertion order (SQLite's rowid).
enum PostgresUploadRows {
    static let columns = "id, filename, content_type, size, sha256, created_at, note_id"

    static func record(_ row: PostgresRow, from first: Int = 0) throws -> UploadRecord {
        UploadRecord(
            id: try row.value(first), filename: try row.value(first + 1), contentType: try row.value(first + 2),
            size: try row.value(first + 3), sha256: try row.value(first + 4), createdAt: try row.value(first + 5),
            noteID: try row.value(first + 6))
    }

    static func upload(id: String, owner: Owner, on db: PostgresConnection) throws -> UploadRecord? {
        try db.query("SELECT \(columns) FROM uploads WHERE id = $1 AND owner = $2", [id, owner.id]).first.map { try record($0) }
    }

    /// A note and its attachments in one statement (one snapshot).
    static func noteWithAttachments(id: Int64, owner: Owner, on db: PostgresConnection) throws -> (NoteRecord, [UploadRecord])? {
        let rows = try db.query(
            """
            SELECT n.id, n.body, n.created_at, n.updated_at, n.version,
                   u.id, u.filename, u.content_type, u.size, u.sha256, u.created_at, u.note_id
            FROM notes AS n LEFT JOIN uploads AS u ON u.note_id = n.id AND u.owner = n.owner
            WHERE n.id = $1 AND n.owner = $2 ORDER BY u.seq
            """, [id, owner.id])
        guard let first = rows.first else { return nil }
        let uploads = try rows.compactMap { row -> UploadRecord? in try row.text(5) == nil ? nil : record(row, from: 5) }
        return (try PostgresNoteRows.record(first), uploads)
    }

    // One text per filter. $1 owner, $2 the cursor's upload id (NULL: from the newest), $3 limit,
    // $4 the note, $5 the oldest time a deleted upload's place is still kept. The cursor's seq and the page come from one statement, so one snapshot.
    private static func listing(_ filter: String) -> String {
        """
        WITH c AS (SELECT CASE WHEN $2::text IS NULL THEN 9223372036854775807
                               ELSE coalesce((SELECT seq FROM uploads WHERE id = $2::text AND owner = $1),
                                             (SELECT seq FROM removed_uploads WHERE id = $2::text AND owner = $1 AND removed_at >= $5)) END AS cursor)
        SELECT c.cursor, u.id, u.filename, u.content_type, u.size, u.sha256, u.created_at, u.note_id
        FROM c LEFT JOIN LATERAL (
            SELECT * FROM uploads WHERE owner = $1 AND seq < c.cursor\(filter) ORDER BY seq DESC LIMIT $3
        ) AS u ON true ORDER BY u.seq DESC
        """
    }
    private static let everyUpload = listing(" AND $4::bigint IS NULL")
    private static let unattachedUploads = listing(" AND note_id IS NULL AND $4::bigint IS NULL")
    private static let uploadsOfNote = listing(" AND note_id = $4")

    /// A page of `owner`'s uploads, newest first; nil when the cursor names no upload of theirs,
    /// nor one of theirs deleted in the last week.
    static func page(_ query: UploadQuery, owner: Owner, on db: PostgresConnection) throws -> [UploadRecord]? {
        let sql: String, note: Int64?
        switch query.attachment {
        case .any: (sql, note) = (everyUpload, nil)
        case .unattached: (sql, note) = (unattachedUploads, nil)
        case .note(let id): (sql, note) = (uploadsOfNote, id)
        }
        let rows = try db.query(sql, [owner.id, query.after, max(0, query.limit), note, WallClock.seconds() - removedKept])
        guard let first = rows.first, try first.text(0) != nil else { return nil }
        return try rows.compactMap { row -> UploadRecord? in try row.text(1) == nil ? nil : record(row, from: 1) }
    }

    /// The attachments of each of `noteIDs`, oldest first; notes without any are absent: one
    /// range scan of the note index over the span of ids (as SQLite's), keeping only the notes
    /// asked for — no list of the ids sent.
    static func attachments(of noteIDs: [Int64], owner: Owner, on db: PostgresConnection) throws -> [Int64: [UploadRecord]] {
        guard let low = noteIDs.min(), let high = noteIDs.max() else { return [:] }
        let rows = try db.query(
            """
            SELECT \(columns) FROM uploads WHERE owner = $1 AND note_id BETWEEN $2 AND $3 ORDER BY note_id, seq
            """, [owner.id, low, high])
        return try (0..<rows.count).map { try record(rows[$0]) }.byNote(keeping: noteIDs)
    }

    // MARK: - Writes

    private static let insert = """
        INSERT INTO uploads (id, owner, filename, content_type, size, sha256, created_at, note_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        """

    /// A note's new version because its attachments changed (`note.updated`); nil when it is gone.
    static func touch(_ noteID: Int64, owner: Owner, in write: PostgresWrite) throws -> (NoteRecord, NoteEvent)? {
        try PostgresNoteRows.update(id: noteID, body: nil, ifVersion: nil, owner: owner, in: write)
    }

    /// Records uploads whose blobs are stored, attached to `noteID` when given (its version
    /// grows); nil when that note is not `owner`'s. The note is changed first: its row lock
    /// keeps a concurrent delete of it from missing the new attachments.
    static func add(
        _ uploads: [(id: String, filename: String, contentType: String, size: Int64, sha256: String)], noteID: Int64?,
        owner: Owner, in write: PostgresWrite
    ) throws -> (records: [UploadRecord], change: (NoteRecord, NoteEvent)?)? {
        var change: (NoteRecord, NoteEvent)?
        if let noteID {
            guard let touched = try touch(noteID, owner: owner, in: write) else { return nil }
            change = touched
        }
        var records: [UploadRecord] = []
        for upload in uploads {
            let record = UploadRecord(
                id: upload.id, filename: upload.filename, contentType: upload.contentType, size: upload.size,
                sha256: upload.sha256, createdAt: write.now, noteID: noteID)
            try write.db.query(
                insert,
                [
                    record.id, owner.id, record.filename, record.contentType, record.size, record.sha256,
                    record.createdAt, noteID,
                ])
            records.append(record)
        }
        return (records, change)
    }

    /// How long a deleted upload's place is kept for cursors (as SQLite's).
    private static let removedKept = UploadRows.removedKept

    /// Keeps the places of the uploads `condition` selects (`$1`, `$2` bound to `values`), about
    /// to be deleted, and forgets places older than a week.
    static func keepPlaces(where condition: String, _ values: [(any PostgresEncodable)?], in write: PostgresWrite) throws {
        try write.db.query("DELETE FROM removed_uploads WHERE removed_at < $1", [write.now - removedKept])
        try write.db.query(
            """
            INSERT INTO removed_uploads (id, owner, seq, removed_at) SELECT id, owner, seq, $3::bigint FROM uploads WHERE \(condition)
            ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, seq = excluded.seq, removed_at = excluded.removed_at
            """, values + [write.now])
    }

    /// Deletes an upload (its blob goes once this commits); its note, if any, gets a new version.
    static func delete(id: String, owner: Owner, in write: PostgresWrite) throws -> (upload: UploadRecord, change: (NoteRecord, NoteEvent)?)? {
        try refuseIfTrashed(id: id, owner: owner, in: write)
        try keepPlaces(where: "id = $1 AND owner = $2", [id, owner.id], in: write)
        guard let row = try write.db.query("DELETE FROM uploads WHERE id = $1 AND owner = $2 RETURNING \(columns)", [id, owner.id]).first else {
            return nil
        }
        let upload = try record(row)
        write.removedUploads.append(id)
        return (upload, try upload.noteID.flatMap { try touch($0, owner: owner, in: write) })
    }

    /// Throws `noteInTrash` when upload `id` is attached to a note in the trash, which keeps its
    /// attachments as they were. Locks the upload's row, then its note's (live or trashed), in
    /// the order `attach` takes them, so a delete or restore of the note waits for this
    /// transaction. A note that moved between the two tables while this waited (a delete or a
    /// restore that committed) is looked for again in the other.
    private static func refuseIfTrashed(id: String, owner: Owner, in write: PostgresWrite) throws {
        guard
            let noteID: Int64? = try write.db.query("SELECT note_id FROM uploads WHERE id = $1 AND owner = $2 FOR UPDATE", [id, owner.id])
                .first?.value(0),
            let noteID
        else { return }
        for _ in 0..<2 {
            if try !write.db.query("SELECT 1 FROM notes WHERE id = $1 AND owner = $2 FOR UPDATE", [noteID, owner.id]).isEmpty { return }
            if try !write.db.query("SELECT 1 FROM trashed_notes WHERE id = $1 AND owner = $2 FOR UPDATE", [noteID, owner.id]).isEmpty {
                throw StoreError.noteInTrash(noteID)
            }
        }
    }

    /// Moves an upload to `noteID` (nil: to no note); the note it leaves and the note it joins
    /// each get a new version, in that order. Nil when the upload or the note does not exist.
    static func attach(id: String, noteID: Int64?, owner: Owner, in write: PostgresWrite) throws -> (upload: UploadRecord, events: [NoteEvent])? {
        // Locked: two moves of one upload run one after the other.
        guard let row = try write.db.query("SELECT \(columns) FROM uploads WHERE id = $1 AND owner = $2 FOR UPDATE", [id, owner.id]).first else {
            return nil
        }
        var upload = try record(row)
        try refuseIfTrashed(id: id, owner: owner, in: write)
        if let noteID {
            // Locked too, so it can't be deleted before it is touched below.
            guard try !write.db.query("SELECT 1 FROM notes WHERE id = $1 AND owner = $2 FOR UPDATE", [noteID, owner.id]).isEmpty else { return nil }
        }
        guard upload.noteID != noteID else { return (upload, []) }
        let left = upload.noteID
        try write.db.query("UPDATE uploads SET note_id = $1 WHERE id = $2 AND owner = $3", [noteID, id, owner.id])
        upload.noteID = noteID
        var events: [NoteEvent] = []
        for note in [left, noteID].compactMap({ $0 }) {
            if let (_, event) = try touch(note, owner: owner, in: write) { events.append(event) }
        }
        return (upload, events)
    }
}

extension PostgresResult {
    var isEmpty: Bool { count == 0 }
}
