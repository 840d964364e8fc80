/// The statements of partial (resumable) uploads on SQLite.
enum PartialUploadRows {
    static let columns = """
        id, protocol, filename, content_type, length, upload_offset, note_id, expected_sha256, backend_state, created_at, expires_at, tus_metadata
        """

    static func record(_ row: Statement, from first: Int32 = 0) -> PartialUploadRecord {
        PartialUploadRecord(
            id: row.string(first), protocolName: row.string(first + 1), filename: row.string(first + 2),
            contentType: row.string(first + 3), length: row.isNull(first + 4) ? nil : row.int64(first + 4),
            offset: row.int64(first + 5), noteID: row.isNull(first + 6) ? nil : row.int64(first + 6),
            expectedSHA256: row.isNull(first + 7) ? nil : row.string(first + 7), backendState: row.string(first + 8),
            createdAt: row.int64(first + 9), expiresAt: row.int64(first + 10),
            tusMetadata: row.isNull(first + 11) ? nil : row.string(first + 11))
    }

    static func partial(id: String, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> PartialUploadRecord? {
        try db.first("SELECT \(columns) FROM partial_uploads WHERE id = ? AND owner = ?", [.text(id), .integer(owner.id)]) { record($0) }
    }

    static func usage(owner: Owner, on db: SQLiteConnection) throws(StoreError) -> PartialUploadUsage {
        try db.first(
            "SELECT count(*), coalesce(sum(max(coalesce(length, 0), upload_offset)), 0), min(expires_at) FROM partial_uploads WHERE owner = ?",
            [.integer(owner.id)]
        ) { PartialUploadUsage(count: Int($0.int64(0)), bytes: $0.int64(1), firstExpiry: $0.isNull(2) ? nil : $0.int64(2)) }
            ?? PartialUploadUsage(count: 0, bytes: 0, firstExpiry: nil)
    }

    static func expired(now: Int64, limit: Int, on db: SQLiteConnection) throws(StoreError) -> [(PartialUploadRecord, Owner)] {
        try db.query(
            "SELECT \(columns), owner FROM partial_uploads WHERE expires_at <= ? ORDER BY expires_at LIMIT ?",
            [.integer(now), .integer(Int64(limit))]
        ) { (record($0), Owner(id: $0.int64(12))) }
    }

    static func insert(_ record: PartialUploadRecord, owner: Owner, on db: SQLiteConnection) throws(StoreError) {
        try db.run(
            "INSERT INTO partial_uploads (\(columns), owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(record.id), .text(record.protocolName), .text(record.filename), .text(record.contentType), .integer(record.length),
                .integer(record.offset), .integer(record.noteID), .text(record.expectedSHA256), .text(record.backendState),
                .integer(record.createdAt), .integer(record.expiresAt), .text(record.tusMetadata), .integer(owner.id),
            ])
    }

    static func update(id: String, progress: PartialUploadProgress, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> Bool {
        guard try partial(id: id, owner: owner, on: db) != nil else { return false }
        try db.run(
            "UPDATE partial_uploads SET upload_offset = ?, length = ?, expires_at = ?, backend_state = ? WHERE id = ? AND owner = ?",
            [
                .integer(progress.offset), .integer(progress.length), .integer(progress.expiresAt), .text(progress.backendState),
                .text(id), .integer(owner.id),
            ])
        return true
    }

    static func delete(id: String, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> PartialUploadRecord? {
        guard let found = try partial(id: id, owner: owner, on: db) else { return nil }
        try db.run("DELETE FROM partial_uploads WHERE id = ? AND owner = ?", [.text(id), .integer(owner.id)])
        return found
    }
}

extension SQLiteStore {
    public func partialUpload(id: String, owner: Owner) throws(StoreError) -> PartialUploadRecord? {
        try readers.withConnection { db throws(StoreError) in try PartialUploadRows.partial(id: id, owner: owner, on: db) }
    }

    public func partialUploadUsage(owner: Owner) throws(StoreError) -> PartialUploadUsage {
        try readers.withConnection { db throws(StoreError) in try PartialUploadRows.usage(owner: owner, on: db) }
    }

    public func expiredPartialUploads(now: Int64, limit: Int) throws(StoreError) -> [(PartialUploadRecord, Owner)] {
        try readers.withConnection { db throws(StoreError) in try PartialUploadRows.expired(now: now, limit: limit, on: db) }
    }

    public func createPartialUpload(_ record: PartialUploadRecord, owner: Owner, completion: @escaping StoreCompletion<Void>) {
        submit({ db, _ throws(StoreError) in try PartialUploadRows.insert(record, owner: owner, on: db) }, owner: owner, completion: completion)
    }

    public func updatePartialUpload(id: String, progress: PartialUploadProgress, owner: Owner, completion: @escaping StoreCompletion<Bool>) {
        submit(
            { db, _ throws(StoreError) in try PartialUploadRows.update(id: id, progress: progress, owner: owner, on: db) },
            owner: owner, completion: completion)
    }

    public func completePartialUpload(_ upload: NewUpload, owner: Owner, completion: @escaping StoreCompletion<UploadsAdded?>) {
        let noteWriter = noteWriter
        submit(
            { db, effects throws(StoreError) -> UploadsAdded? in
                guard let partial = try PartialUploadRows.delete(id: upload.id, owner: owner, on: db) else { return nil }
                // The note may have gone meanwhile: the upload then stays unattached.
                var added = try noteWriter.addUploads([upload], noteID: partial.noteID, owner: owner, on: db, effects: effects)
                if added == nil { added = try noteWriter.addUploads([upload], noteID: nil, owner: owner, on: db, effects: effects) }
                if added != nil, let metadata = partial.tusMetadata {
                    try db.run(
                        "UPDATE uploads SET tus_metadata = ? WHERE id = ? AND owner = ?", [.text(metadata), .text(upload.id), .integer(owner.id)])
                }
                return added
            }, owner: owner, completion: completion)
    }

    public func uploadMetadata(id: String, owner: Owner) throws(StoreError) -> String? {
        try readers.withConnection { db throws(StoreError) in
            try db.first("SELECT tus_metadata FROM uploads WHERE id = ? AND owner = ?", [.text(id), .integer(owner.id)]) {
                $0.isNull(0) ? nil : $0.string(0)
            } ?? nil
        }
    }

    public func deletePartialUpload(id: String, owner: Owner, completion: @escaping StoreCompletion<Bool>) {
        submit(
            { db, _ throws(StoreError) in try PartialUploadRows.delete(id: id, owner: owner, on: db) != nil }, owner: owner,
            freesSpace: true, completion: completion)
    }
}
