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

    @Test func freshDatabaseGetsTheCurrentVersionInWALMode() throws {
        let fixture = try StoreFixture()
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
