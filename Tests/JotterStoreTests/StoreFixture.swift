import Foundation
import JotterBlobs
import JotterPostgres
import Testing
@testable import JotterStore

/// A fresh data directory under the system temp folder, removed when the fixture goes away
/// (tests that outlive their last use of it keep it with `withExtendedLifetime`).
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("jotter-store-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    var databasePath: String { path + "/" + SQLiteStore.fileName }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The backends every behaviour test runs against: SQLite always, PostgreSQL when the test
/// server is given (`make test` gives it; in CI its absence fails `PostgresAvailabilityTests`).
enum Backend: String, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static let all: [Backend] = PostgresServer.available ? [.sqlite, .postgres] : [.sqlite]

    var testDescription: String { rawValue }
}

/// A store of `backend` on its own data folder (SQLite: everything; PostgreSQL: the upload
/// blobs and `tmp/`) and, for PostgreSQL, its own database, dropped when the fixture goes away.
final class StoreFixture: Sendable {
    let backend: Backend
    let directory: TemporaryDirectory
    let store: any DataStore
    /// The PostgreSQL database's name and URL.
    let database: (name: String, url: String)?

    init(_ backend: Backend = .sqlite, options: SQLiteStore.Options = .init()) throws {
        self.backend = backend
        directory = try TemporaryDirectory()
        switch backend {
        case .sqlite:
            database = nil
            store = try SQLiteStore(dataDirectory: directory.path, options: options)
        case .postgres:
            let name = try PostgresServer.createDatabase()
            database = (name, PostgresServer.url(database: name))
            do {
                store = try Self.openPostgres(url: database!.url, directory: directory, eventBacklog: options.eventBacklog)
            } catch {
                PostgresServer.dropDatabase(name)
                throw error
            }
        }
    }

    static func openPostgres(url: String, directory: TemporaryDirectory, eventBacklog: Int = 10_000) throws -> PostgresStore {
        try PostgresStore(
            url: url, poolSize: 4, blobs: try LocalBlobStore(root: directory.path),
            temporaryDirectory: directory.path + "/tmp", options: .init(eventBacklog: eventBacklog))
    }

    /// Another store on the same data (after `store.close()`: a restart).
    func reopen(options: SQLiteStore.Options = .init()) throws -> any DataStore {
        switch backend {
        case .sqlite: return try SQLiteStore(dataDirectory: directory.path, options: options)
        case .postgres: return try Self.openPostgres(url: database!.url, directory: directory, eventBacklog: options.eventBacklog)
        }
    }

    /// The SQLite store, for what only it has (its file, group-commit statistics).
    var sqlite: SQLiteStore? { store as? SQLiteStore }

    /// Creates a note and returns it.
    @discardableResult
    func create(_ body: String) throws -> NoteRecord {
        guard case .done(let note, _) = try store.perform(.create(body: body)) else {
            throw FixtureError("create did not succeed")
        }
        return note
    }

    /// Where upload `id`'s bytes are (both backends keep them in the fixture's folder).
    func contentPath(of id: String) -> String { directory.path + "/" + UploadRecord.blobKey(id) }

    /// "ok" when the stored data is consistent. SQLite: `PRAGMA integrity_check` plus the FTS5
    /// index check, on a fresh read-write connection. PostgreSQL: every search vector is its
    /// body's, and every attachment's note exists (or is in the trash).
    func integrityCheck() throws -> String {
        guard let database else { return try Self.integrityCheck(path: directory.databasePath) }
        let db = try PostgresConnection(url: database.url)
        let stale: Int64 = try db.query("SELECT count(*) FROM notes WHERE search IS DISTINCT FROM jotter_search_vector(body)")[0].value(0)
        let dangling: Int64 = try db.query(
            """
            SELECT count(*) FROM uploads AS u WHERE note_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM notes AS n WHERE n.id = u.note_id)
                AND NOT EXISTS (SELECT 1 FROM trashed_notes AS t WHERE t.id = u.note_id)
            """)[0].value(0)
        return stale == 0 && dangling == 0 ? "ok" : "\(stale) stale search vectors, \(dangling) attachments of missing notes"
    }

    /// Runs `sql` (no parameters, no rows wanted) on the store's database, beside the store:
    /// to age rows the store's clock cannot.
    func execute(_ sql: String) throws {
        if let database {
            _ = try PostgresConnection(url: database.url).execute(sql)
        } else {
            let db = try SQLiteConnection(path: directory.databasePath, flags: SQLiteConnection.readWrite)
            defer { db.close() }
            try db.execute(sql)
        }
    }

    static func integrityCheck(path: String) throws -> String {
        let db = try SQLiteConnection(path: path, flags: SQLiteConnection.readWrite)
        defer { db.close() }
        // Raises SQLITE_CORRUPT_VTAB if the FTS index and the notes table disagree.
        try db.run("INSERT INTO notes_fts(notes_fts) VALUES ('integrity-check')")
        return try db.query("PRAGMA integrity_check") { $0.string(0) }.joined(separator: "\n")
    }

    deinit {
        store.close()
        if let database { PostgresServer.dropDatabase(database.name) }
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body(i)` for i in 0..<count, each on its own thread, all at once; returns when all end.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.start()
    }
    group.wait()
}
