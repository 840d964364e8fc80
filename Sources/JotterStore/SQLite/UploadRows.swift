/// The upload queries, shared by the readers and the writer.
enum UploadRows {
    static let columns = "id, filename, content_type, size, sha256, created_at, note_id"

    static func record(_ row: Statement) -> UploadRecord {
        UploadRecord(id: row.string(0), filename: row.string(1), contentType: row.string(2), size: row.int64(3),
                     sha256: row.string(4), createdAt: row.int64(5), noteID: row.isNull(6) ? nil : row.int64(6))
    }

    static func upload(id: String, on db: SQLiteConnection) throws(StoreError) -> UploadRecord? {
        try db.first("SELECT \(columns) FROM uploads WHERE id = ?", [.text(id)]) { record($0) }
    }

    /// Newest first (insertion order, by rowid).
    static func uploads(limit: Int, on db: SQLiteConnection) throws(StoreError) -> [UploadRecord] {
        try db.query("SELECT \(columns) FROM uploads ORDER BY rowid DESC LIMIT ?", [.integer(Int64(limit))]) { record($0) }
    }

    /// Attachments of each note, oldest first. One query per note keeps the SQL fixed; a page
    /// has at most 1000 notes and each query is an index look-up.
    static func attachments(of noteIDs: [Int64], on db: SQLiteConnection) throws(StoreError) -> [Int64: [UploadRecord]] {
        var result: [Int64: [UploadRecord]] = [:]
        for id in noteIDs {
            let uploads = try db.query("SELECT \(columns) FROM uploads WHERE note_id = ? ORDER BY rowid", [.integer(id)]) { record($0) }
            if !uploads.isEmpty { result[id] = uploads }
        }
        return result
    }

    static func allIDs(on db: SQLiteConnection) throws(StoreError) -> Set<String> {
        Set(try db.query("SELECT id FROM uploads") { $0.string(0) })
    }
}

/// The files one write moved in or freed; acted on once its transaction has committed or failed.
/// Only the writer thread touches it: filled while the write runs, read in its completion,
/// which the writer also runs — so it needs no lock.
final class FileChanges: @unchecked Sendable {
    /// Files renamed into uploads/: removed again if the transaction does not commit.
    var added: [String] = []
    /// Files whose rows were deleted: removed once the transaction has committed.
    var removed: [String] = []
}
