import Foundation
import JotterPostgres
import JotterTestSupport
import Testing
@testable import JotterStore

/// A PostgreSQL database restored from a dump starts a new history (`PostgresHistory`), as the
/// SQLite store's restore does: by itself when the dump came from a cluster whose transaction
/// ids were ahead of this one's, on demand (`PostgresStore.startNewHistory`) in the same cluster.
@Suite("PostgreSQL store: a new history after a restore", .enabled(if: PostgresServer.available, PostgresServer.skipMessage))
struct PostgresHistoryTests {
    /// How far ahead the "other cluster" was, in transactions: its ids are 50 million
    /// transactions past this one's.
    static let ahead: Int64 = 50_000_000

    @Test("a database restored from a cluster ahead of this one starts a new history when opened: the feed lists every note")
    func restoreFromAheadStartsANewHistory() throws {
        let fixture = try StoreFixture(.postgres)
        let made = try (1...3).map { try postgresCreate(fixture.postgres, "before-\($0)") }
        try postgresUpdate(fixture.postgres, made[0].note.id, "before-1, changed")
        let deleted = try postgresCreate(fixture.postgres, "deleted")
        _ = try fixture.postgres.perform(.delete(id: deleted.note.id, ifVersion: nil))
        fixture.postgres.close()
        // The rows as a dump from the other cluster brings them back: every event id and feed
        // place `ahead` transactions later (txid is a plain column; the id is generated from it).
        let db = try fixture.connect()
        try db.execute(
            """
            UPDATE events SET txid = (txid::text::bigint + \(Self.ahead))::text::xid8;
            UPDATE note_changes SET seq = seq + (\(Self.ahead)::bigint << 16);
            UPDATE trashed_notes SET deleted_seq = deleted_seq + (\(Self.ahead)::bigint << 16);
            """)
        let oldCursor: Int64 = try db.query("SELECT max(seq) FROM note_changes")[0].value(0)
        let highestNote: Int64 = try db.query("SELECT max(note_id) FROM note_changes")[0].value(0)

        let store = try #require(try fixture.reopen() as? PostgresStore)
        defer { store.close() }
        #expect(store.newHistory?.contains("restored from another cluster") == true, "\(store.newHistory ?? "nil")")
        let observed = ObservedIDs()
        store.observeEvents { event, _ in observed.append(event.id) }

        // A new device's first sync lists every note (and, walking, no tombstone is needed).
        let fromZero = try walk(store, since: 0)
        #expect(Set(fromZero.ids) == Set(made.map(\.note.id)), "\(fromZero.ids)")
        // A client from before walks once, then goes on from where the walk ended.
        let first = try store.changes(NoteFeedQuery(since: oldCursor, limit: 100), owner: .unclaimed)
        #expect(first.walk)
        let walked = try walk(store, since: oldCursor)
        #expect(Set(walked.ids) == Set(made.map(\.note.id)))
        #expect(walked.cursor >= oldCursor)
        let again = try store.changes(NoteFeedQuery(since: walked.cursor, limit: 100), owner: .unclaimed)
        #expect(!again.walk && again.entries.isEmpty, "the walk's end is a cursor the feed holds: \(again.entries)")
        // A stream resumed from before is told to reload.
        #expect(try store.events(after: oldCursor, limit: 10, owner: .unclaimed) == nil)

        // New notes: ids past the gap, events above every old id, seen by the feed and the stream.
        let after = try postgresCreate(store, "after-1")
        #expect(after.note.id > highestNote + DataFolderBackup.restoreGap)
        #expect(after.event.id > oldCursor + (DataFolderBackup.restoreGap << 16))
        let next = try store.changes(NoteFeedQuery(since: walked.cursor, limit: 100), owner: .unclaimed)
        #expect(!next.walk && next.entries.map(\.noteID) == [after.note.id])
        #expect(try waitFor { observed.ids == [after.event.id] }, "\(observed.ids)")
        #expect(try store.events(after: walked.cursor, limit: 10, owner: .unclaimed)?.map(\.id) == [after.event.id])
        #expect(Set(try walk(store, since: 0).ids) == Set(made.map(\.note.id) + [after.note.id]))

        // Opened again, it is no longer ahead: no second new history.
        store.close()
        let reopened = try #require(try fixture.reopen() as? PostgresStore)
        defer { reopened.close() }
        #expect(reopened.newHistory == nil)
        #expect(try reopened.lastEventID() == after.event.id)
    }

    @Test("a database opened in its own cluster keeps its history, while another transaction commits ahead of an older one")
    func ownClusterKeepsItsHistory() throws {
        let fixture = try StoreFixture(.postgres)
        let made = try postgresCreate(fixture.postgres, "one")
        // An event committed while an older transaction is open is above the readers' horizon,
        // rightly: no reason for a new history.
        let older = try fixture.connect()
        try older.execute("BEGIN; SELECT pg_current_xact_id()")
        let late = try fixture.connect()
        try late.execute("BEGIN")
        _ = try PostgresNoteRows.create(body: "late", owner: .unclaimed, in: PostgresWrite(db: late, now: 1))
        try late.execute("COMMIT")
        let other = try fixture.reopen() as! PostgresStore
        #expect(other.newHistory == nil)
        other.close()
        try older.execute("ROLLBACK")
        #expect(try fixture.postgres.changes(NoteFeedQuery(since: made.event.id, limit: 10), owner: .unclaimed).walk == false)
    }

    @Test("after a restore into the same cluster, startNewHistory makes clients walk once and issues no id twice; refused while an instance runs")
    func restoreInTheSameCluster() throws {
        let fixture = try StoreFixture(.postgres)
        let kept = try (1...2).map { try postgresCreate(fixture.postgres, "kept-\($0)") }
        let backup = URL(fileURLWithPath: fixture.directory.path + "/backup.dump")
        try Self.dump(fixture.url, to: backup)
        // After the backup: a client syncs, then the server makes a note the restore loses.
        let synced = try fixture.postgres.changes(NoteFeedQuery(since: 0, limit: 100), owner: .unclaimed)
        let clientCursor = synced.head
        #expect(clientCursor == kept[1].event.id)
        let lost = try postgresCreate(fixture.postgres, "lost")

        // The restore: a new database of the same cluster from the dump.
        let name = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(name) }
        let url = PostgresServer.url(database: name)
        try Self.restore(backup, into: url)
        let running = try PostgresStore(
            url: url, poolSize: 1, blobs: fixture.postgres.blobs, temporaryDirectory: fixture.directory.path + "/tmp")
        #expect(running.newHistory == nil, "same cluster: nothing tells")
        let db = try PostgresConnection(url: url)
        #expect(try waitFor { (try? PostgresIdempotencyRows.isAlive(running.instance, on: db)) == true }, "its event feed is connected")
        #expect(throws: StoreError.inUse) { try PostgresStore.startNewHistory(url: url) }
        running.close()
        #expect(try waitFor { (try? PostgresStore.startNewHistory(url: url)) != nil })

        let store = try PostgresStore(
            url: url, poolSize: 2, blobs: fixture.postgres.blobs, temporaryDirectory: fixture.directory.path + "/tmp")
        defer { store.close() }
        // The client that synced after the backup walks once; the walk names only the kept notes.
        #expect(try store.changes(NoteFeedQuery(since: clientCursor, limit: 100), owner: .unclaimed).walk)
        let walked = try walk(store, since: clientCursor)
        #expect(walked.ids == kept.map(\.note.id))
        // No note id or event id is given out twice.
        let after = try postgresCreate(store, "after")
        #expect(after.note.id > lost.note.id + DataFolderBackup.restoreGap - 1)
        #expect(after.event.id > lost.event.id)
        let next = try store.changes(NoteFeedQuery(since: walked.cursor, limit: 100), owner: .unclaimed)
        #expect(!next.walk && next.entries.map(\.noteID) == [after.note.id])
    }

    // MARK: - Helpers

    /// The live notes a feed read from `since` names, to its end (a walk's pages followed),
    /// and the cursor it ends at.
    func walk(_ store: PostgresStore, since: Int64) throws -> (ids: [Int64], cursor: Int64) {
        let read = try FeedTests.pull(store, since: since, limit: 2)
        return (read.entries.filter { !$0.deleted }.map(\.noteID), read.cursor)
    }

    static func pgTool(_ name: String) -> String {
        let bin = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.sorted().last.map {
            "/usr/lib/postgresql/\($0)/bin/\(name)"
        }
        return bin.flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil } ?? "/usr/bin/\(name)"
    }

    static func dump(_ url: String, to file: URL) throws {
        try run([pgTool("pg_dump"), "-Fc", "-d", url, "-f", file.path])
    }

    static func restore(_ dump: URL, into url: String) throws {
        try run([pgTool("pg_restore"), "--no-owner", "-d", url, dump.path])
    }

    /// Runs a PostgreSQL tool to its end (`runTool`: spawned and reaped as every program a
    /// test starts); throws with what it wrote to standard error when it fails.
    static func run(_ arguments: [String]) throws {
        let run = try runProgram(arguments, separateErrors: true)
        guard run.status == 0 else { throw FixtureError("\(arguments[0]) failed (\(run.status)): \(run.errors)") }
    }
}

func postgresUpdate(_ store: PostgresStore, _ id: Int64, _ body: String) throws {
    _ = try store.perform(.update(id: id, body: body, ifVersion: nil))
}
