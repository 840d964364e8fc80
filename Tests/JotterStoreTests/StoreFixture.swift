import Foundation
@testable import JotterStore

/// A fresh data directory under the system temp folder, removed when the fixture goes away
/// (tests that outlive their last use of it keep it with `withExtendedLifetime`).
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("jotter-store-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    var databasePath: String { path + "/" + SQLiteStore.fileName }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A `SQLiteStore` in its own temporary directory.
final class StoreFixture: Sendable {
    let directory: TemporaryDirectory
    let store: SQLiteStore

    init(options: SQLiteStore.Options = .init()) throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(dataDirectory: directory.path, options: options)
    }

    /// Creates a note and returns it.
    @discardableResult
    func create(_ body: String) throws -> NoteRecord {
        guard case .done(let note, _) = try store.perform(.create(body: body)) else {
            throw FixtureError("create did not succeed")
        }
        return note
    }

    /// `PRAGMA integrity_check` plus the FTS5 index check, on a fresh read-write connection.
    func integrityCheck() throws -> String {
        try Self.integrityCheck(path: directory.databasePath)
    }

    static func integrityCheck(path: String) throws -> String {
        let db = try SQLiteConnection(path: path, flags: SQLiteConnection.readWrite)
        defer { db.close() }
        // Raises SQLITE_CORRUPT_VTAB if the FTS index and the notes table disagree.
        try db.run("INSERT INTO notes_fts(notes_fts) VALUES ('integrity-check')")
        return try db.query("PRAGMA integrity_check") { $0.string(0) }.joined(separator: "\n")
    }

    deinit { store.close() }
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
