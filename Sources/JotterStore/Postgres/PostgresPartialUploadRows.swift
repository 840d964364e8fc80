import JotterBlobs
import JotterPostgres

/// The statements of partial (resumable) uploads on PostgreSQL.
enum PostgresPartialUploadRows {
    static let columns = """
        id, protocol, filename, content_type, length, upload_offset, note_id, expected_sha256, backend_state, created_at, expires_at, tus_metadata
        """

    static func record(_ row: PostgresRow) throws -> PartialUploadRecord {
        PartialUploadRecord(
            id: try row.value(0), protocolName: try row.value(1), filename: try row.value(2), contentType: try row.value(3),
            length: try row.value(4), offset: try row.value(5), noteID: try row.value(6), expectedSHA256: try row.value(7),
            backendState: try row.value(8), createdAt: try row.value(9), expiresAt: try row.value(10),
            tusMetadata: try row.value(11))
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

    public func partialUploadUsage(owner: Owner) throws(StoreError) -> PartialUploadUsage {
        try read { db in
            let row = try db.query(
                "SELECT count(*)::bigint, coalesce(sum(greatest(coalesce(length, 0), upload_offset)), 0)::bigint, min(expires_at)::bigint FROM partial_uploads WHERE owner = $1",
                [owner.id]
            ).first
            return PartialUploadUsage(
                count: Int(try row?.value(0, as: Int64.self) ?? 0), bytes: try row?.value(1, as: Int64.self) ?? 0,
                firstExpiry: try row?.value(2, as: Int64?.self) ?? nil)
        }
    }

    public func expiredPartialUploads(now: Int64, limit: Int) throws(StoreError) -> [(PartialUploadRecord, Owner)] {
        try read { db in
            try db.query(
                "SELECT \(PostgresPartialUploadRows.columns), owner FROM partial_uploads WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2",
                [now, Int64(limit)]
            ).map { (try PostgresPartialUploadRows.record($0), Owner(id: try $0.value(12))) }
        }
    }

    public func createPartialUpload(_ record: PartialUploadRecord, owner: Owner, completion: @escaping StoreCompletion<Void>) {
        write(
            { write in
                try write.db.query(
                    """
                    INSERT INTO partial_uploads (\(PostgresPartialUploadRows.columns), owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                    """,
                    [
                        record.id, record.protocolName, record.filename, record.contentType, record.length, record.offset, record.noteID,
                        record.expectedSHA256, record.backendState, record.createdAt, record.expiresAt, record.tusMetadata, owner.id,
                    ])
                return ()
            }, completion: completion)
    }

    public func updatePartialUpload(id: String, progress: PartialUploadProgress, owner: Owner, completion: @escaping StoreCompletion<Bool>) {
        write(
            { write in
                !(try write.db.query(
                    """
                    UPDATE partial_uploads SET upload_offset = $1, length = $2, expires_at = $3, backend_state = $4 WHERE id = $5 AND owner = $6 RETURNING id
                    """, [progress.offset, progress.length, progress.expiresAt, progress.backendState, id, owner.id]
                ).isEmpty)
            }, completion: completion)
    }

    public func completePartialUpload(_ upload: NewUpload, owner: Owner, completion: @escaping StoreCompletion<UploadsAdded?>) {
        write(
            { write -> UploadsAdded? in
                let deleted = try write.db.query(
                    "DELETE FROM partial_uploads WHERE id = $1 AND owner = $2 RETURNING note_id, tus_metadata", [upload.id, owner.id])
                guard let row = deleted.first else { return nil }
                let noteID: Int64? = try row.value(0)
                let metadata: String? = try row.value(1)
                let rows = [(id: upload.id, filename: upload.filename, contentType: upload.contentType, size: upload.size, sha256: upload.sha256)]
                // The note may have gone meanwhile: the upload then stays unattached.
                guard
                    let (records, change) = try PostgresUploadRows.add(rows, noteID: noteID, owner: owner, in: write)
                        ?? PostgresUploadRows.add(rows, noteID: nil, owner: owner, in: write)
                else { return nil }
                if let metadata {
                    try write.db.query("UPDATE uploads SET tus_metadata = $1 WHERE id = $2 AND owner = $3", [metadata, upload.id, owner.id])
                }
                return UploadsAdded(uploads: records, change: change.map { NoteChange(note: $0.0, event: $0.1) })
            }, completion: completion)
    }

    public func uploadMetadata(id: String, owner: Owner) throws(StoreError) -> String? {
        try read { db in
            try db.query("SELECT tus_metadata FROM uploads WHERE id = $1 AND owner = $2", [id, owner.id]).first?.value(0, as: String?.self)
                ?? nil
        }
    }

    public func deletePartialUpload(id: String, owner: Owner, completion: @escaping StoreCompletion<Bool>) {
        write(
            { write in
                !(try write.db.query("DELETE FROM partial_uploads WHERE id = $1 AND owner = $2 RETURNING id", [id, owner.id]).isEmpty)
            }, completion: completion)
    }
}

/// Partial uploads whose bytes are an S3 multipart upload: the holder's generation and lease,
/// the parts, the tail pieces (`BucketPartialUploadStore`). Leases run on the database's clock,
/// the one every instance shares.
extension PostgresStore: BucketPartialUploadStore {
    private static let now = "floor(extract(epoch FROM clock_timestamp()))::bigint"

    public func createPartialUpload(_ record: PartialUploadRecord, owner: Owner, leaseSeconds: Int64, emptySHA256: [UInt8]) throws(StoreError) {
        try StoreWait.wait { completion in
            write(
                { write in
                    try write.db.query(
                        """
                        INSERT INTO partial_uploads (\(PostgresPartialUploadRows.columns), owner, generation, writer_until, parts_sha256)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1, \(Self.now) + $14::bigint, $15)
                        """,
                        [
                            record.id, record.protocolName, record.filename, record.contentType, record.length, record.offset, record.noteID,
                            record.expectedSHA256, record.backendState, record.createdAt, record.expiresAt, record.tusMetadata, owner.id,
                            leaseSeconds,
                            PostgresBytes(emptySHA256),
                        ])
                    return ()
                }, completion: completion)
        }
    }

    public func takeOverPartialUpload(
        id: String, owner: Owner, leaseSeconds: Int64, force: Bool,
        loadingBytes: Bool
    ) throws(StoreError) -> PartialUploadTakeOver {
        try StoreWait.wait { completion in
            write(
                { write -> PartialUploadTakeOver in
                    let db = write.db
                    // A sealed upload is forced only once its sealer's lease ran out.
                    guard
                        let row = try db.query(
                            """
                            UPDATE partial_uploads SET generation = generation + 1, sealed = false,
                                writer_until = CASE WHEN $3::bigint > 0 THEN \(Self.now) + $3::bigint ELSE 0 END
                            WHERE id = $1 AND owner = $2 AND (writer_until <= \(Self.now) OR ($4::boolean AND NOT sealed))
                            RETURNING \(PostgresPartialUploadRows.columns), generation, parts_sha256
                            """, [id, owner.id, leaseSeconds, force]
                        ).first
                    else {
                        guard
                            let found = try db.query("SELECT sealed, generation FROM partial_uploads WHERE id = $1 AND owner = $2", [id, owner.id])
                                .first
                        else {
                            return .missing
                        }
                        return try found.value(0, as: Bool.self) ? .sealed : .busy(holder: try found.value(1))
                    }
                    let record = try PostgresPartialUploadRows.record(row)
                    var hold = PartialUploadHold(
                        record: record, generation: try row.value(12), parts: [],
                        partsSHA256: try row.value(13, as: PostgresBytes?.self)?.bytes ?? [], tail: [])
                    guard loadingBytes else { return .held(hold) }
                    hold.parts = try db.query("SELECT number, size, etag FROM partial_upload_parts WHERE upload_id = $1 ORDER BY number", [id])
                        .map { BlobPart(number: try $0.value(0), etag: try $0.value(2), size: try $0.value(1)) }
                    let partsEnd = hold.partsEnd
                    for piece in try db.query("SELECT start, bytes FROM partial_upload_tails WHERE upload_id = $1 ORDER BY start", [id]) {
                        let start: Int64 = try piece.value(0)
                        guard start == partsEnd + Int64(hold.tail.count) else {
                            throw StoreError.database("upload \(id): its tail piece at \(start) does not follow the bytes before it")
                        }
                        hold.tail += try piece.value(1, as: PostgresBytes.self).bytes
                    }
                    guard partsEnd + Int64(hold.tail.count) == record.offset else {
                        throw StoreError.database(
                            "upload \(id): its parts and tail hold \(partsEnd + Int64(hold.tail.count)) bytes, its offset is \(record.offset)")
                    }
                    return .held(hold)
                }, completion: completion)
        }
    }

    public func reservePartialUploadPart(id: String, owner: Owner, generation: Int64, leaseSeconds: Int64) throws(StoreError) -> Int? {
        try StoreWait.wait { completion in
            write(
                { write -> Int? in
                    try write.db.query(
                        """
                        UPDATE partial_uploads SET next_part = next_part + 1, writer_until = \(Self.now) + $4::bigint
                        WHERE id = $1 AND owner = $2 AND generation = $3 RETURNING next_part - 1
                        """, [id, owner.id, generation, leaseSeconds]
                    ).first.map { try $0.value(0) }
                }, completion: completion)
        }
    }

    public func recordPartialUpload(
        id: String, owner: Owner, generation: Int64,
        _ recording: PartialUploadRecording
    ) throws(StoreError) -> PartialUploadRecorded? {
        try StoreWait.wait { completion in
            write(
                { write -> PartialUploadRecorded? in
                    let db = write.db
                    guard
                        let row = try db.query(
                            """
                            UPDATE partial_uploads SET upload_offset = coalesce($4, upload_offset), length = coalesce($5, length),
                                expires_at = coalesce($6, expires_at), parts_sha256 = coalesce($7, parts_sha256),
                                writer_until = CASE WHEN $8::bigint > 0 THEN \(Self.now) + $8::bigint ELSE 0 END, sealed = $9,
                                next_part = next_part + $10::integer
                            WHERE id = $1 AND owner = $2 AND generation = $3 RETURNING next_part - 1
                            """,
                            [
                                id, owner.id, generation, recording.offset, recording.length, recording.expiresAt,
                                recording.partsSHA256.map { PostgresBytes($0) }, recording.leaseSeconds, recording.seal,
                                recording.reservesNextPart ? 1 : 0,
                            ]
                        ).first
                    else { return nil }
                    let recorded = PartialUploadRecorded(reservedPart: recording.reservesNextPart ? try row.value(0, as: Int.self) : nil)
                    for part in recording.parts {
                        try db.query(
                            "INSERT INTO partial_upload_parts (upload_id, number, size, etag) VALUES ($1, $2, $3, $4)",
                            [id, part.number, part.size, part.etag])
                    }
                    if let partsEnd = recording.partsEnd {
                        try db.query("DELETE FROM partial_upload_tails WHERE upload_id = $1 AND start < $2", [id, partsEnd])
                    }
                    if let piece = recording.tailPiece, !piece.bytes.isEmpty {
                        try db.query(
                            "INSERT INTO partial_upload_tails (upload_id, start, bytes) VALUES ($1, $2, $3)",
                            [id, piece.start, PostgresBytes(piece.bytes)])
                    }
                    return recorded
                }, completion: completion)
        }
    }

    public func announcePartialUploadTakeOver(id: String, holder: Int64?) {
        let payload = PostgresEventFeed.takeOverPayload(id: id, holder: holder)
        _ = try? read { db in try db.query("SELECT pg_notify($1, $2)", [PostgresEventFeed.uploadsChannel, payload]) }
    }

    public func observePartialUploadTakeOvers(_ handler: @escaping @Sendable (_ id: String, _ holder: Int64?) -> Void) {
        feed.observeTakeOvers(handler)
    }

    public func knownPartialUploadIDs(_ ids: [String]) throws(StoreError) -> Set<String> {
        // Upload ids are hex digits: the array literal needs no quoting (others name no row).
        let ids = ids.filter { !$0.isEmpty && $0.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } }
        guard !ids.isEmpty else { return [] }
        let literal = "{" + ids.joined(separator: ",") + "}"
        return try read { db in
            Set(try db.query("SELECT id FROM partial_uploads WHERE id = ANY($1::text[])", [literal]).map { try $0.value(0, as: String.self) })
        }
    }
}
