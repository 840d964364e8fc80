/// What a store holds, for `/metrics` and `/healthz`.
public struct StorageStatistics: Sendable, Hashable {
    public var notes: Int64
    public var uploads: Int64
    /// The sum of the uploads' sizes.
    public var uploadBytes: Int64
    /// The database: SQLite's file with its write-ahead log, or PostgreSQL's `pg_database_size`.
    public var databaseBytes: Int64
}

extension SQLiteStore {
    /// Counts notes and uploads in one snapshot (a scan of each table: cheap at scrape
    /// intervals, not for every request) and sizes the database files.
    public func storageStatistics() throws(StoreError) -> StorageStatistics {
        let (notes, uploads, bytes) = try readers.withConnection { db throws(StoreError) in
            try db.first(
                """
                SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM uploads), (SELECT coalesce(sum(size), 0) FROM uploads)
                """
            ) { ($0.int64(0), $0.int64(1), $0.int64(2)) } ?? (0, 0, 0)
        }
        let database = (FileTransfer.size(of: path) ?? 0) + (FileTransfer.size(of: path + "-wal") ?? 0)
        return StorageStatistics(notes: notes, uploads: uploads, uploadBytes: bytes, databaseBytes: database)
    }

    /// Reads the schema version on a pooled connection: throws when the database can't be read.
    public func checkReadable() throws(StoreError) {
        _ = try readers.withConnection { db throws(StoreError) in try db.first("SELECT version FROM schema_version") { $0.int64(0) } }
    }
}

extension SQLiteStore {
    /// The schema version this build writes and understands; a database above it is refused.
    public static var schemaVersion: Int64 { SQLiteSchema.current }

    public var schemaVersion: Int64 { Self.schemaVersion }
}
