import Foundation
import JotterPostgres
import Testing
@testable import JotterStore

@Suite("Revisions: kept, listed, restored, per owner, thinned")
struct RevisionTests {
    let alice = Owner(id: 1), bob = Owner(id: 2)

    @Test(arguments: Backend.all) func everyChangeKeepsItsBody(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let note = try fixture.create("one")
        _ = try store.perform(.update(id: note.id, body: "two 😀", ifVersion: nil))
        _ = try store.perform(.touch(id: note.id, ifVersion: nil))  // an attachment changed: the body stays
        _ = try store.perform(.update(id: note.id, body: "", ifVersion: 3))

        let listed = try #require(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false))
        #expect(listed.map(\.version) == [4, 3, 2, 1])
        #expect(listed.map(\.size) == [0, 8, 8, 3])
        #expect(listed.allSatisfy { $0.body == nil && !$0.merged })
        let current = try #require(try store.note(id: note.id))
        #expect(listed[0].createdAt == current.updatedAt)
        #expect(listed[3].createdAt == note.createdAt)
        for (version, body) in [(1, "one"), (2, "two 😀"), (3, "two 😀"), (4, "")] {
            #expect(try store.revision(noteID: note.id, version: Int64(version), owner: .unclaimed, inTrash: false)?.body == body)
        }
        #expect(try store.revision(noteID: note.id, version: 5, owner: .unclaimed, inTrash: false) == nil)

        // Paged by version, newest first.
        #expect(try store.revisions(noteID: note.id, before: 4, limit: 2, owner: .unclaimed, inTrash: false)?.map(\.version) == [3, 2])
        #expect(try store.revisions(noteID: note.id, before: 1, limit: 2, owner: .unclaimed, inTrash: false)?.isEmpty == true)
        #expect(try store.revisions(noteID: note.id + 100, before: nil, limit: 2, owner: .unclaimed, inTrash: false) == nil)
    }

    @Test(arguments: Backend.all) func anotherOwnersRevisionsAreAbsent(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        guard case .done(let note, _) = try store.perform(.create(body: "alice's"), owner: alice) else { throw FixtureError("create") }
        _ = try store.perform(.update(id: note.id, body: "alice's, edited", ifVersion: nil), owner: alice)

        #expect(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: bob, inTrash: false) == nil)
        #expect(try store.revision(noteID: note.id, version: 1, owner: bob, inTrash: false) == nil)
        #expect(try store.restoreNote(id: note.id, version: 1, ifVersion: nil, owner: bob) == .notFound)
        #expect(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: alice, inTrash: false)?.count == 2)
        #expect(try store.note(id: note.id, owner: alice)?.body == "alice's, edited")
    }

    @Test(arguments: Backend.all) func restoreMakesANewVersion(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let note = try fixture.create("first\0draft")
        _ = try store.perform(.update(id: note.id, body: "second", ifVersion: nil))

        // Decided in order: the note, If-Match, the revision.
        #expect(try store.restoreNote(id: note.id + 100, version: 1, ifVersion: nil, owner: .unclaimed) == .notFound)
        let second = try #require(try store.note(id: note.id))
        #expect(try store.restoreNote(id: note.id, version: 9, ifVersion: 1, owner: .unclaimed) == .versionMismatch(current: second))
        #expect(try store.restoreNote(id: note.id, version: 9, ifVersion: nil, owner: .unclaimed) == .noRevision(current: second))
        #expect(try store.restoreNote(id: note.id, version: 9, ifVersion: 2, owner: .unclaimed) == .noRevision(current: second))

        let change = try #require(try store.restoreNote(id: note.id, version: 1, ifVersion: 2, owner: .unclaimed).change)
        #expect(change.note.body == "first\0draft")
        #expect(change.note.version == 3)
        #expect(change.event.kind == .updated)
        #expect(change.event.note == change.note)
        #expect(try store.note(id: note.id) == change.note)
        #expect(try store.revision(noteID: note.id, version: 3, owner: .unclaimed, inTrash: false)?.body == "first\0draft")
        #expect(try store.revisions(noteID: note.id, before: nil, limit: 1, owner: .unclaimed, inTrash: false)?.first?.size == 11)
        #expect(try store.notes(NoteQuery(search: "second")).isEmpty)
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test(arguments: Backend.all) func revisionsGoWithTheirNoteAndSurviveARestart(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let kept = try fixture.create("kept")
        _ = try fixture.store.perform(.update(id: kept.id, body: "kept, 2", ifVersion: nil))
        let gone = try fixture.create("gone")
        _ = try fixture.store.perform(.delete(id: gone.id, ifVersion: nil))
        // In the trash, its revisions stay; out of it, they go with it.
        #expect(try Self.count(fixture, "SELECT count(*) FROM note_revisions WHERE note_id = \(gone.id)") == 1)
        _ = try fixture.store.purgeTrashedNote(id: gone.id, owner: .unclaimed)
        fixture.store.close()
        let store = try fixture.reopen()
        defer { store.close() }
        #expect(try store.revisions(noteID: kept.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false)?.map(\.version) == [2, 1])
        #expect(try store.revision(noteID: gone.id, version: 1, owner: .unclaimed, inTrash: true) == nil)
        #expect(try Self.count(fixture, "SELECT count(*) FROM note_revisions WHERE note_id = \(gone.id)") == 0)
    }

    /// Revisions at chosen times, thinned as of a chosen time: every one younger than 30 days,
    /// the newest of each day until 90, then the newest of each week; per note.
    @Test(arguments: Backend.all) func thinningKeepsOneADayThenOneAWeek(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let day: Int64 = 86_400, hour: Int64 = 3_600
        let week0: Int64 = 604_800 * 3_000  // a week's start (Thursday 00:00 UTC)
        let now = week0 + 150 * day
        let a = try fixture.create("a"), b = try fixture.create("b")
        let rows: [(note: Int64, version: Int64, at: Int64)] = [
            (a.id, 1, week0 + hour), (a.id, 2, week0 + 2 * day),  // one week: 2 stays
            (a.id, 3, week0 + 8 * day),  // the next week: stays
            (a.id, 4, week0 + 70 * day + hour), (a.id, 5, week0 + 70 * day + 5 * hour),  // one day, 80 days ago: 5 stays
            (a.id, 6, week0 + 71 * day),  // the next day: stays
            (a.id, 7, week0 + 140 * day), (a.id, 8, week0 + 140 * day + 1),  // 10 days ago: both stay
            (b.id, 1, week0 + hour), (b.id, 2, week0 + 2 * hour),  // b's own week: 2 stays
        ]
        try Self.replaceRevisions(fixture, with: rows)
        let retention = RevisionRetention(days: 30)
        #expect(retention == RevisionRetention(keepAll: 30 * day, daily: 90 * day))
        #expect(try fixture.store.thinRevisions(retention, asOf: now) == 3)
        #expect(
            try fixture.store.revisions(noteID: a.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false)?.map(\.version) == [
                8, 7, 6, 5, 3, 2,
            ])
        #expect(try fixture.store.revisions(noteID: b.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false)?.map(\.version) == [2])
        // Again: nothing more to do. A year on: one a week, and the newest.
        #expect(try fixture.store.thinRevisions(retention, asOf: now) == 0)
        #expect(try fixture.store.thinRevisions(retention, asOf: now + 365 * day) == 2)
        #expect(try fixture.store.revisions(noteID: a.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false)?.map(\.version) == [8, 6, 3, 2])
    }

    @Test("a backup holds every revision, and a restored data folder lists them")
    func backupKeepsRevisions() throws {
        let fixture = try StoreFixture()
        let note = try fixture.create("first")
        _ = try fixture.store.perform(.update(id: note.id, body: "second", ifVersion: nil))
        let folder = try TemporaryDirectory()
        _ = try fixture.sqlite!.backup(into: folder.path + "/b")
        let target = try TemporaryDirectory()
        _ = try DataFolderBackup.restore(from: folder.path + "/b", into: target.path + "/data", replacing: false)
        let restored = try SQLiteStore(dataDirectory: target.path + "/data")
        defer { restored.close() }
        #expect(try restored.revisions(noteID: note.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false)?.map(\.version) == [2, 1])
        #expect(try restored.revision(noteID: note.id, version: 1, owner: .unclaimed, inTrash: false)?.body == "first")
    }

    /// Puts `rows` in place of every revision (same body, its note's), straight into the database.
    static func replaceRevisions(_ fixture: StoreFixture, with rows: [(note: Int64, version: Int64, at: Int64)]) throws {
        if let database = fixture.database {
            let db = try PostgresConnection(url: database.url)
            try db.query("DELETE FROM note_revisions")
            for row in rows {
                try db.query(
                    "INSERT INTO note_revisions (note_id, version, owner, body, size, created_at) VALUES ($1, $2, 0, 'x', 1, $3)",
                    [row.note, row.version, row.at])
            }
        } else {
            let db = try SQLiteConnection(path: fixture.directory.databasePath, flags: SQLiteConnection.readWrite)
            defer { db.close() }
            try db.run("DELETE FROM note_revisions")
            for row in rows {
                try db.run(
                    "INSERT INTO note_revisions (note_id, version, owner, body, size, created_at) VALUES (?, ?, 0, 'x', 1, ?)",
                    [.integer(row.note), .integer(row.version), .integer(row.at)])
            }
        }
    }

    static func count(_ fixture: StoreFixture, _ sql: String) throws -> Int64 {
        if let database = fixture.database {
            return try PostgresConnection(url: database.url).query(sql)[0].value(0)
        }
        let db = try SQLiteConnection(path: fixture.directory.databasePath, flags: SQLiteConnection.readWrite)
        defer { db.close() }
        return try db.first(sql) { $0.int64(0) } ?? -1
    }
}
