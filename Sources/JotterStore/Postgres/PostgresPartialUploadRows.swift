import JotterPostgres

/// The statements of partial (resumable) uploads on PostgreSQL.
enum PostgresPartialUploadRows {
    static let columns = """
        id, protocol, filename, content_type, length, upload_offset, note_id, expected_sha256, backend_state, created_at, expires_at
        """

    static func record(_ row: PostgresRow) throws -> PartialUploadRecord {
        PartialUploadRecord(id: try row.value(0), protocolName: try row.value(1), filename: try row.value(2), contentType: try row.value(3),
                            length: try row.value(4), offset: try row.value(5), noteID: try row.value(6), expectedSHA256: try row.value(7),
                            backendState: try row.value(8), createdAt: try row.value(9), expiresAt: try row.value(10))
    }

    static func partial(id: String, owner: Owner, on db: PostgresConnection, locking: Bool = false) throws -> PartialUploadRecord? {
        try db.query("SELECT \(columns) FROM partial_uploads WHERE id = $1 AND owner = $2\(locking ? " FOR UPDATE" : "")", [id, owner.id])
            .first.map { try record($0) }
    }
}

extension PostgresStore {
    public func partialUpload(id: String, owner: Owner) throws(StoreError) -> PartialUploadRecord? {
        try read { db in try PostgresPartialUploadRows.partial(id: id, owner: owner, on: db) }
    }

    public func partialUploadUsage(owner: Owner) throws(StoreError) -> (count: Int, bytes: Int64) {
        try read { db in
            let row = try db.query("SELECT count(*)::bigint, coalesce(sum(greatest(coalesce(length, 0), upload_offset)), 0)::bigint FROM partial_uploads WHERE owner = $1",
                                   [owner.id]).first
            return (Int(try row?.value(0, as: Int64.self) ?? 0), try row?.value(1, as: Int64.self) ?? 0)
        }
    }

    public func expiredPartialUploads(now: Int64, limit: Int) throws(StoreError) -> [(PartialUploadRecord, Owner)] {
        try read { db in
            try db.query("SELECT \(PostgresPartialUploadRows.columns), owner FROM partial_uploads WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2",
                         [now, Int64(limit)]).map { (try PostgresPartialUploadRows.record($0), Owner(id: try $0.value(11))) }
        }
    }

    public func createPartialUpload(_ record: PartialUploadRecord, owner: Owner, completion: @escaping StoreCompletion<Void>) {
        write({ write in
            try write.db.query("""
                INSERT INTO partial_uploads (\(PostgresPartialUploadRows.columns), owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                """, [record.id, record.protocolName, record.filename, record.contentType, record.length, record.offset, record.noteID,
                      record.expectedSHA256, record.backendState, record.createdAt, record.expiresAt, owner.id])
            return ()
        }, completion: completion)
    }

    public func updatePartialUpload(id: String, progress: PartialUploadProgress, owner: Owner, completion: @escaping StoreCompletion<Bool>) {
        write({ write in
            !(try write.db.query("""
                UPDATE partial_uploads SET upload_offset = $1, length = $2, expires_at = $3, backend_state = $4 WHERE id = $5 AND owner = $6 RETURNING id
                """, [progress.offset, progress.length, progress.expiresAt, progress.backendState, id, owner.id]).isEmpty)
        }, completion: completion)
    }

    public func completePartialUpload(_ upload: NewUpload, owner: Owner, completion: @escaping StoreCompletion<UploadsAdded?>) {
        write({ write -> UploadsAdded? in
            guard let row = try write.db.query("DELETE FROM partial_uploads WHERE id = $1 AND owner = $2 RETURNING note_id", [upload.id, owner.id]).first
            else { return nil }
            let noteID: Int64? = try row.value(0)
            let rows = [(id: upload.id, filename: upload.filename, contentType: upload.contentType, size: upload.size, sha256: upload.sha256)]
            // The note may have gone meanwhile: the upload then stays unattached.
            guard let (records, change) = try PostgresUploadRows.add(rows, noteID: noteID, owner: owner, in: write)
                    ?? PostgresUploadRows.add(rows, noteID: nil, owner: owner, in: write) else { return nil }
            return UploadsAdded(uploads: records, change: change.map { NoteChange(note: $0.0, event: $0.1) })
        }, completion: completion)
    }

    public func deletePartialUpload(id: String, owner: Owner, completion: @escaping StoreCompletion<Bool>) {
        write({ write in
            !(try write.db.query("DELETE FROM partial_uploads WHERE id = $1 AND owner = $2 RETURNING id", [id, owner.id]).isEmpty)
        }, completion: completion)
    }
}
