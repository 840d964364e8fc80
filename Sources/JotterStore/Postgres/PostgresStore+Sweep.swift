import JotterBlobs
import JotterPostgres

extension PostgresStore {
    /// Which of `ids` have an upload row (one statement for the batch).
    static func knownUploadIDs(_ ids: [String], pool: PostgresPool) throws(StoreError) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        // Upload ids are hex digits: the array literal needs no quoting.
        let literal = "{" + ids.joined(separator: ",") + "}"
        return try mapped {
            try pool.withConnection { db in
                Set(try db.query("SELECT id FROM uploads WHERE id = ANY($1::text[])", [literal]).map { row in try row.value(0, as: String.self) })
            }
        }
    }

    /// The orphan sweep of this store's blobs: upload bytes older than an hour that no row names
    /// (a crash between storing bytes and committing their row, or between deleting a row and
    /// its bytes). Every instance runs it (`PeriodicTask`, hourly); they may overlap safely.
    static func uploadSweep(blobs: any BlobStore, pool: PostgresPool) -> UploadSweep {
        UploadSweep(blobs: blobs) { ids in try knownUploadIDs(ids, pool: pool) }
    }
}
