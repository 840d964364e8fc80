import Foundation
import Testing
@testable import JotterStore
import JotterSystem

/// The trash, on both backends: a delete keeps the note, its revisions and its attachments
/// (bytes too) until it is restored, purged or swept; per owner.
@Suite("Trash: deleted notes kept, listed, restored, purged, swept")
struct TrashTests {
    let alice = Owner(id: 1), bob = Owner(id: 2)

    /// A note of `owner` with one attachment holding `bytes`.
    func noteWithAttachment(_ fixture: StoreFixture, body: String, bytes: [UInt8], owner: Owner = .unclaimed) throws -> (NoteRecord, UploadRecord) {
        let store = fixture.store
        guard case .done(let note, _) = try store.perform(.create(body: body), owner: owner) else { throw FixtureError("create") }
        let path = fixture.directory.path + "/tmp/t-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        guard
            case .uploadsAdded(let records, let touched?, _) = try store.perform(
                .addUploads(
                    [try store.stage(path, size: Int64(bytes.count))],
                    noteID: note.id), owner: owner)
        else {
            throw FixtureError("upload")
        }
        return (touched, records[0])
    }

    @Test(arguments: Backend.all) func deleteMovesTheNoteToTheTrashWithItsAttachments(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let (note, upload) = try noteWithAttachment(fixture, body: "kept\0safe", bytes: [1, 2, 3])
        let other = try fixture.create("other")

        let deleted = try store.perform(.delete(id: note.id, ifVersion: nil))
        let event = try #require(deleted.event)
        #expect(event.kind == .deleted)
        #expect(try store.note(id: note.id) == nil)
        #expect(try store.notes(NoteQuery()).map(\.id) == [other.id])
        #expect(try store.notes(NoteQuery(search: "kept")).isEmpty)
        // Its history is still listed (and exported) from the trash, not as a live note's; not another owner's.
        #expect(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: .unclaimed, inTrash: true)?.map(\.version) == [2, 1])
        #expect(try store.revision(noteID: note.id, version: 1, owner: .unclaimed, inTrash: true)?.body == "kept\0safe")
        #expect(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false) == nil)
        #expect(try store.revision(noteID: note.id, version: 1, owner: .unclaimed, inTrash: false) == nil)
        #expect(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: bob, inTrash: true) == nil)
        // In the trash, as it was, at the event's time; its attachment and its bytes stay.
        let trashed = try #require(try store.trashedNote(id: note.id, owner: .unclaimed))
        #expect(trashed == TrashedNote(note: note, deletedAt: event.at))
        #expect(try store.trashedNotes(limit: 10, after: nil, owner: .unclaimed) == [trashed])
        #expect(try store.upload(id: upload.id)?.noteID == note.id)
        #expect(FileManager.default.contents(atPath: fixture.contentPath(of: upload.id)) == Data([1, 2, 3]))
        // No longer changed: every write is .notFound, a second delete too.
        #expect(try store.perform(.update(id: note.id, body: "x", ifVersion: nil)) == .notFound)
        #expect(try store.mergeNote(id: note.id, base: 1, body: "x", ifVersion: nil, owner: .unclaimed) == .notFound)
        #expect(try store.perform(.delete(id: note.id, ifVersion: nil)) == .notFound)
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test(arguments: Backend.all) func restoreBringsBackIdBodyAttachmentsAndRevisions(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let (note, upload) = try noteWithAttachment(fixture, body: "first", bytes: [4, 5])
        _ = try store.perform(.update(id: note.id, body: "second 😀", ifVersion: nil))
        let deleted = try #require(try store.perform(.delete(id: note.id, ifVersion: nil)).note)

        #expect(try store.restoreTrashedNote(id: note.id + 100, owner: .unclaimed) == .notFound)
        let change = try #require(try store.restoreTrashedNote(id: note.id, owner: .unclaimed).change)
        #expect(change.note.id == note.id)
        #expect(change.note.body == "second 😀")
        #expect(change.note.createdAt == note.createdAt)
        #expect(change.note.version == deleted.version + 1)
        #expect(change.event.kind == .created)
        #expect(change.event.note == change.note)
        #expect(try store.note(id: note.id) == change.note)
        #expect(try store.notes(NoteQuery(search: "second")).map(\.id) == [note.id])
        #expect(try store.trashedNote(id: note.id, owner: .unclaimed) == nil)
        #expect(try store.trashedNotes(limit: 10, after: nil, owner: .unclaimed)?.isEmpty == true)
        #expect(try store.attachments(of: [note.id])[note.id]?.map(\.id) == [upload.id])
        #expect(FileManager.default.contents(atPath: fixture.contentPath(of: upload.id)) == Data([4, 5]))
        // Its history came back with it, the restore as its newest version.
        let versions = try store.revisions(noteID: note.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false)
        #expect(versions?.map(\.version) == [change.note.version] + Array((1...deleted.version).reversed()))
        #expect(versions?.first?.size == Int64("second 😀".utf8.count))
        #expect(try store.revision(noteID: note.id, version: 1, owner: .unclaimed, inTrash: false)?.body == "first")
        // The event stream says it is back; a second restore finds nothing.
        let events = try #require(try store.events(after: 0, limit: 100))
        #expect(events.last?.kind == .created && events.last?.note.id == note.id)
        #expect(try store.restoreTrashedNote(id: note.id, owner: .unclaimed) == .notFound)
        // Writable again, by its id.
        #expect(try store.perform(.update(id: note.id, body: "third", ifVersion: change.note.version)).note?.version == change.note.version + 1)
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test("a purge at a version removes the note only at that version: one restored and deleted again stays", arguments: Backend.all)
    func purgeAtAVersion(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let note = try fixture.create("listed")
        _ = try store.perform(.delete(id: note.id, ifVersion: nil))
        _ = try store.restoreTrashedNote(id: note.id, owner: .unclaimed)
        _ = try store.perform(.delete(id: note.id, ifVersion: nil))
        let current = try #require(try store.trashedNote(id: note.id, owner: .unclaimed))
        #expect(current.note.version == note.version + 1)
        #expect(try store.purgeTrashedNote(id: note.id, ifVersion: note.version, owner: .unclaimed) == .versionMismatch(current: current))
        #expect(try store.trashedNote(id: note.id, owner: .unclaimed) == current, "nothing changed")
        #expect(try store.purgeTrashedNote(id: note.id + 100, ifVersion: 1, owner: .unclaimed) == .notFound)
        #expect(try store.purgeTrashedNote(id: note.id, ifVersion: current.note.version, owner: .unclaimed) == .purged(current))
        #expect(try store.trashedNote(id: note.id, owner: .unclaimed) == nil)
    }

    @Test(arguments: Backend.all) func purgeRemovesRowsRevisionsAndBytes(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let (note, upload) = try noteWithAttachment(fixture, body: "gone soon", bytes: [9])
        let (kept, keptUpload) = try noteWithAttachment(fixture, body: "kept", bytes: [8])
        _ = try store.perform(.delete(id: note.id, ifVersion: nil))
        _ = try store.perform(.delete(id: kept.id, ifVersion: nil))

        #expect(try store.purgeTrashedNote(id: note.id + 100, owner: .unclaimed) == nil)
        let purged = try #require(try store.purgeTrashedNote(id: note.id, owner: .unclaimed))
        #expect(purged.note.id == note.id)
        #expect(try store.trashedNote(id: note.id, owner: .unclaimed) == nil)
        #expect(try store.upload(id: upload.id) == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.contentPath(of: upload.id)))
        #expect(try store.restoreTrashedNote(id: note.id, owner: .unclaimed) == .notFound)
        #expect(try store.purgeTrashedNote(id: note.id, owner: .unclaimed) == nil)
        // Its revisions went with it; the other trashed note keeps everything.
        _ = try store.restoreTrashedNote(id: kept.id, owner: .unclaimed)
        #expect(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: .unclaimed, inTrash: true) == nil)
        #expect(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: .unclaimed, inTrash: false) == nil)
        #expect(FileManager.default.contents(atPath: fixture.contentPath(of: keptUpload.id)) == Data([8]))
        #expect(try store.note(id: kept.id)?.body == "kept")
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test(arguments: Backend.all) func theSweepEmptiesWhatIsOldEnough(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let (old, oldUpload) = try noteWithAttachment(fixture, body: "old", bytes: [1])
        let (young, youngUpload) = try noteWithAttachment(fixture, body: "young", bytes: [2])
        let oldAt = try #require(try store.perform(.delete(id: old.id, ifVersion: nil)).event?.at)
        let youngAt = try #require(try store.perform(.delete(id: young.id, ifVersion: nil)).event?.at)
        let day: Int64 = 86_400

        // A second short of 30 days: nothing goes (nor now, with the store's clock).
        #expect(try store.emptyTrash(keep: 30 * day) == 0)
        #expect(try store.emptyTrash(keep: 30 * day, asOf: oldAt + 30 * day - 1) == 0)
        #expect(try store.trashedNotes(limit: 10, after: nil, owner: .unclaimed)?.count == 2)
        #expect(FileManager.default.contents(atPath: fixture.contentPath(of: oldUpload.id)) == Data([1]))
        // 30 days after the first deletion: it goes, with its attachment's bytes.
        let sameSecond = youngAt == oldAt
        #expect(try store.emptyTrash(keep: 30 * day, asOf: oldAt + 30 * day) == (sameSecond ? 2 : 1))
        #expect(try store.trashedNote(id: old.id, owner: .unclaimed) == nil)
        #expect(try store.upload(id: oldUpload.id) == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.contentPath(of: oldUpload.id)))
        if !sameSecond {
            #expect(try store.trashedNote(id: young.id, owner: .unclaimed) != nil)
            #expect(FileManager.default.contents(atPath: fixture.contentPath(of: youngUpload.id)) == Data([2]))
        }
        #expect(try store.emptyTrash(keep: 30 * day, asOf: youngAt + 30 * day) == (sameSecond ? 0 : 1))
        #expect(try store.trashedNotes(limit: 10, after: nil, owner: .unclaimed)?.isEmpty == true)
        #expect(!FileManager.default.fileExists(atPath: fixture.contentPath(of: youngUpload.id)))
        #expect(try fixture.integrityCheck() == "ok")
    }

    /// Notes deleted in the reverse of the order they were made, within a second or two: the
    /// trash lists them in the order of their deletions (ids and times alone would not: the
    /// time has seconds, and ids follow creation), page by page too.
    @Test(arguments: Backend.all) func theLatestDeletionComesFirstWithinASecond(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let made = try (0..<4).map { try fixture.create("note \($0)") }
        for note in made.reversed() { _ = try store.perform(.delete(id: note.id, ifVersion: nil)) }
        let all = try #require(try store.trashedNotes(limit: 10, after: nil, owner: .unclaimed))
        #expect(all.map(\.note.id) == made.map(\.id))
        let first = try #require(try store.trashedNotes(limit: 3, after: nil, owner: .unclaimed))
        let second = try #require(try store.trashedNotes(limit: 3, after: first.last!.note.id, owner: .unclaimed))
        #expect((first + second).map(\.note.id) == made.map(\.id))
        // Restored and deleted again: it is the latest deletion now.
        _ = try store.restoreTrashedNote(id: made[2].id, owner: .unclaimed)
        _ = try store.perform(.delete(id: made[2].id, ifVersion: nil))
        #expect(try store.trashedNotes(limit: 10, after: nil, owner: .unclaimed)?.map(\.note.id) == [made[2].id, made[0].id, made[1].id, made[3].id])
        // Its cursor is its new place, not the one it left when restored.
        #expect(try store.trashedNotes(limit: 10, after: made[2].id, owner: .unclaimed)?.map(\.note.id) == [made[0].id, made[1].id, made[3].id])
        // A cursor naming a note that left the trash goes on after its place; restored, then
        // purged, then swept; one that was never in the trash is nil.
        _ = try store.restoreTrashedNote(id: made[0].id, owner: .unclaimed)
        #expect(try store.trashedNotes(limit: 10, after: made[0].id, owner: .unclaimed)?.map(\.note.id) == [made[1].id, made[3].id])
        _ = try store.purgeTrashedNote(id: made[1].id, owner: .unclaimed)
        #expect(try store.trashedNotes(limit: 10, after: made[1].id, owner: .unclaimed)?.map(\.note.id) == [made[3].id])
        #expect(try store.emptyTrash(keep: 0, asOf: Int64(Date().timeIntervalSince1970) + 86_400) == 2)
        #expect(try store.trashedNotes(limit: 10, after: made[2].id, owner: .unclaimed)?.isEmpty == true)
        #expect(try store.trashedNotes(limit: 10, after: made[0].id, owner: .unclaimed)?.isEmpty == true)
        #expect(try store.trashedNotes(limit: 10, after: made[0].id, owner: Owner(id: 2)) == nil)
        #expect(try store.trashedNotes(limit: 10, after: made[0].id + 100, owner: .unclaimed) == nil)
    }

    /// A database from before schema 11 with notes already in the trash, deleted in the reverse
    /// of their making within a second: the migration gives them their deletions' order, from
    /// the feed's tombstones, or from the deletion's event when its tombstone was pruned.
    @Test func migrationKeepsTheOrderOfNotesAlreadyInTheTrash() throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        var store: any DataStore = try SQLiteStore(dataDirectory: directory.path)
        let made = try (0..<3).map { try #require(try store.perform(.create(body: "n\($0)")).note) }
        for note in made.reversed() { _ = try store.perform(.delete(id: note.id, ifVersion: nil)) }
        store.close()
        let db = try SQLiteConnection(path: directory.databasePath, flags: SQLiteConnection.readWrite)
        try db.execute(
            """
            DROP TABLE trash_places; DROP INDEX trashed_notes_by_owner; ALTER TABLE trashed_notes DROP COLUMN deleted_seq;
            CREATE INDEX trashed_notes_by_owner ON trashed_notes (owner, deleted_at);
            DELETE FROM note_changes WHERE note_id = \(made[1].id);
            ALTER TABLE partial_uploads DROP COLUMN tus_metadata; ALTER TABLE uploads DROP COLUMN tus_metadata;
            UPDATE schema_version SET version = 10;
            """)
        db.close()
        store = try SQLiteStore(dataDirectory: directory.path)
        defer { store.close() }
        #expect(try store.trashedNotes(limit: 10, after: nil, owner: .unclaimed)?.map(\.note.id) == made.map(\.id))
    }

    @Test(arguments: Backend.all) func theTrashIsPerOwnerAndPaged(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        var ids: [Int64] = []
        for index in 0..<5 {
            guard case .done(let note, _) = try store.perform(.create(body: "alice \(index)"), owner: alice) else { throw FixtureError("create") }
            _ = try store.perform(.delete(id: note.id, ifVersion: nil), owner: alice)
            ids.append(note.id)
        }
        guard case .done(let bobs, _) = try store.perform(.create(body: "bob's"), owner: bob) else { throw FixtureError("create") }
        _ = try store.perform(.delete(id: bobs.id, ifVersion: nil), owner: bob)

        // Newest deletion first, in pages by the last id.
        let all = try #require(try store.trashedNotes(limit: 10, after: nil, owner: alice))
        #expect(all.map(\.note.id) == ids.reversed())
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.deletedAt >= $1.deletedAt })
        let first = try #require(try store.trashedNotes(limit: 2, after: nil, owner: alice))
        let second = try #require(try store.trashedNotes(limit: 2, after: first.last!.note.id, owner: alice))
        let third = try #require(try store.trashedNotes(limit: 2, after: second.last!.note.id, owner: alice))
        #expect((first + second + third).map(\.note.id) == ids.reversed())
        // Another owner's trashed note is as absent as one never deleted.
        #expect(try store.trashedNotes(limit: 10, after: nil, owner: bob)?.map(\.note.id) == [bobs.id])
        #expect(try store.trashedNote(id: bobs.id, owner: alice) == nil)
        #expect(try store.restoreTrashedNote(id: bobs.id, owner: alice) == .notFound)
        #expect(try store.purgeTrashedNote(id: bobs.id, owner: alice) == nil)
        #expect(try store.trashedNotes(limit: 10, after: bobs.id, owner: alice) == nil)
        #expect(try store.trashedNote(id: bobs.id, owner: bob) != nil)
        // A restored note's place goes on for a week; older, its id names nothing, even before a
        // write prunes it.
        #expect(try store.restoreTrashedNote(id: ids[2], owner: alice) != .notFound)
        #expect(try store.trashedNotes(limit: 1, after: ids[2], owner: alice)?.map(\.note.id) == [ids[1]])
        try fixture.execute("UPDATE trash_places SET left_at = left_at - 8 * 86400")
        #expect(try store.trashedNotes(limit: 1, after: ids[2], owner: alice) == nil)
    }
}
