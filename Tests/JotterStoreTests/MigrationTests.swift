import Foundation
import Testing
@testable import JotterStore

@Suite("Schema: creation, migrations, refusing newer databases")
struct MigrationTests {
    static func schemaVersion(at path: String) throws -> Int64? {
        let db = try SQLiteConnection(path: path, flags: SQLiteConnection.readOnly)
        defer { db.close() }
        return try db.first("SELECT version FROM schema_version") { $0.int64(0) }
    }

    /// Version 11 → 12 keeps tus's Upload-Metadata (`tus_metadata`) on partial uploads and on
    /// the uploads they become. A partial upload made before has none; one made after keeps
    /// exactly what it was given, through its completion, for its owner alone.
    @Test(arguments: Backend.all) func version11GainsTusMetadata(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let now = Int64(Date().timeIntervalSince1970)
        func record(_ metadata: String?) -> PartialUploadRecord {
            PartialUploadRecord(
                id: UploadRecord.newID(), protocolName: "tus", filename: "a.bin", contentType: "application/octet-stream", length: 3,
                offset: 0, noteID: nil, expectedSHA256: nil, createdAt: now, expiresAt: now + 3600, tusMetadata: metadata)
        }
        let old = record(nil)
        try fixture.store.createPartialUpload(old, owner: .unclaimed)
        fixture.store.close()
        if backend == .postgres {
            // PostgreSQL's version 13 undone (the events' offset), so that it runs after 12.
            try fixture.execute(
                """
                ALTER TABLE events DROP COLUMN id, DROP COLUMN xid_offset,
                    ADD COLUMN id bigint GENERATED ALWAYS AS ((txid::text::bigint << 16) | seq) STORED PRIMARY KEY;
                CREATE INDEX events_by_owner ON events (owner, id);
                DROP FUNCTION jotter_xid_offset(); ALTER TABLE event_marks DROP COLUMN xid_offset;
                """)
        }
        try fixture.execute(
            """
            ALTER TABLE partial_uploads DROP COLUMN tus_metadata; ALTER TABLE uploads DROP COLUMN tus_metadata;
            UPDATE schema_version SET version = 11;
            """)
        let store = try fixture.reopen()
        defer { store.close() }
        #expect(store.migration == SchemaMigration(from: 11, to: store.schemaVersion))
        #expect(try store.partialUpload(id: old.id, owner: .unclaimed) == old)
        let sent = record("filename YS5iaW4=,is_confidential")
        try store.createPartialUpload(sent, owner: .unclaimed)
        #expect(try store.partialUpload(id: sent.id, owner: .unclaimed)?.tusMetadata == "filename YS5iaW4=,is_confidential")
        for partial in [old, sent] {
            let upload = NewUpload(
                id: partial.id, filename: partial.filename, contentType: partial.contentType, size: 3,
                sha256: String(repeating: "0", count: 64))
            #expect(try store.completePartialUpload(upload, owner: .unclaimed) != nil)
        }
        #expect(try store.uploadMetadata(id: sent.id, owner: .unclaimed) == "filename YS5iaW4=,is_confidential")
        #expect(try store.uploadMetadata(id: sent.id, owner: Owner(id: 2)) == nil)
        #expect(try store.uploadMetadata(id: old.id, owner: .unclaimed) == nil)
    }

    @Test func freshDatabaseGetsTheCurrentVersionInWALMode() throws {
        let fixture = try StoreFixture()
        #expect(fixture.store.migration == SchemaMigration(from: 0, to: SQLiteSchema.current))
        #expect(FileManager.default.fileExists(atPath: fixture.directory.databasePath))
        #expect(try Self.schemaVersion(at: fixture.directory.databasePath) == SQLiteSchema.current)
        let db = try SQLiteConnection(path: fixture.directory.databasePath, flags: SQLiteConnection.readOnly)
        defer { db.close() }
        #expect(try db.first("PRAGMA journal_mode") { $0.string(0) } == "wal")
        #expect(try db.query("SELECT count(*) FROM schema_version") { $0.int64(0) } == [1])
    }

    @Test func createsAMissingDataDirectory() throws {
        let parent = try TemporaryDirectory()
        defer { withExtendedLifetime(parent) {} }  // keep the folder until the test ends
        let store = try SQLiteStore(dataDirectory: parent.path + "/a/b/")
        defer { store.close() }
        #expect(store.path == parent.path + "/a/b/jotter.sqlite")
        #expect(FileManager.default.fileExists(atPath: store.path))
    }

    @Test func reopeningKeepsDataAndVersion() throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }  // keep the folder until the test ends
        var store = try SQLiteStore(dataDirectory: directory.path)
        let note = try #require(try store.perform(.create(body: "kept")).note)
        store.close()
        store = try SQLiteStore(dataDirectory: directory.path)
        defer { store.close() }
        #expect(store.migration == nil)
        #expect(try store.note(id: note.id) == note)
        #expect(try Self.schemaVersion(at: store.path) == SQLiteSchema.current)
    }

    @Test func newerDatabaseIsRefusedUntouched() throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }  // keep the folder until the test ends
        let store = try SQLiteStore(dataDirectory: directory.path)
        _ = try store.perform(.create(body: "from the future"))
        store.close()
        let db = try SQLiteConnection(path: directory.databasePath, flags: SQLiteConnection.readWrite)
        try db.run("UPDATE schema_version SET version = 99")
        db.close()  // last connection: checkpoints and removes the WAL

        let files = { try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() }
        let filesBefore = try files()
        let bytesBefore = try Data(contentsOf: URL(fileURLWithPath: directory.databasePath))

        let error = #expect(throws: StoreError.newerSchema) {
            try SQLiteStore(dataDirectory: directory.path, options: .init(synchronous: .normal))
        }
        #expect(error?.message.contains("jotter.sqlite has schema version 99") == true)
        #expect(error?.message.contains("understands up to \(SQLiteSchema.current); upgrade jotter") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.databasePath)) == bytesBefore)
        #expect(try files() == filesBefore)
        #expect(try Self.schemaVersion(at: directory.databasePath) == 99)
    }

    @Test func foreignDatabaseIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }  // keep the folder until the test ends
        let db = try SQLiteConnection(path: directory.databasePath, flags: SQLiteConnection.readWrite)
        try db.execute("CREATE TABLE somebody_elses (x)")
        db.close()
        #expect(throws: StoreError.notJotterDatabase) { try SQLiteStore(dataDirectory: directory.path) }
    }

    @Test func garbageFileIsAnSQLiteError() throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }  // keep the folder until the test ends
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: directory.databasePath))
        do {
            _ = try SQLiteStore(dataDirectory: directory.path)
            Issue.record("opened a file that is not a database")
        } catch {
            #expect(error.sqliteCode != nil)
            #expect(error.message.contains("not a database"))
        }
    }
}
