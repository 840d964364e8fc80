import Foundation
import Testing
@testable import JotterStore

/// Uploads in the store: files follow their rows, and start-up removes what a crash left.
@Suite("Upload store")
struct UploadStoreTests {
    func temporaryFile(_ directory: String, _ bytes: [UInt8]) throws -> String {
        let path = directory + "/tmp/t-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func newUpload(_ store: any DataStore, _ path: String, size: Int64) throws -> NewUpload {
        try store.stage(path, size: size)
    }

    @Test("adding moves the file in with its row; attaching bumps the note; the files go when the note leaves the trash", arguments: Backend.all)
    func lifecycle(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let directory = fixture.directory, store = fixture.store
        guard case .done(let note, _) = try store.perform(.create(body: "n")) else { Issue.record("no note"); return }
        let temporary = try temporaryFile(directory.path, [1, 2, 3])
        guard
            case .uploadsAdded(let records, let touched, let event) = try store.perform(
                .addUploads([try newUpload(store, temporary, size: 3)], noteID: note.id))
        else {
            Issue.record("not added"); return
        }
        #expect(!FileManager.default.fileExists(atPath: temporary))
        #expect(FileManager.default.contents(atPath: fixture.contentPath(of: records[0].id)) == Data([1, 2, 3]))
        #expect(touched?.version == 2)
        #expect(event?.kind == .updated)
        #expect(try store.attachments(of: [note.id])[note.id]?.map(\.id) == [records[0].id])
        // Deleted, the note is in the trash: its attachments stay, bytes and all.
        _ = try store.perform(.delete(id: note.id, ifVersion: nil))
        #expect(try store.upload(id: records[0].id)?.noteID == note.id)
        #expect(FileManager.default.contents(atPath: fixture.contentPath(of: records[0].id)) == Data([1, 2, 3]))
        // Out of the trash, they go with it.
        #expect(try store.purgeTrashedNote(id: note.id, owner: .unclaimed) != nil)
        #expect(try store.upload(id: records[0].id) == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.contentPath(of: records[0].id)))
    }

    @Test("an unknown note stores no row, and the staged bytes are deleted again", arguments: Backend.all)
    func unknownNote(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let directory = fixture.directory, store = fixture.store
        let temporary = try temporaryFile(directory.path, [9])
        #expect(try store.perform(.addUploads([try newUpload(store, temporary, size: 1)], noteID: 42)) == .notFound)
        #expect(try store.uploads(UploadQuery(limit: 10)) == [])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/uploads").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: temporary))
    }

    func add(_ store: any DataStore, _ directory: TemporaryDirectory, noteID: Int64?) throws -> UploadRecord {
        let temporary = try temporaryFile(directory.path, [7])
        guard case .uploadsAdded(let records, _, _) = try store.perform(.addUploads([try newUpload(store, temporary, size: 1)], noteID: noteID))
        else {
            throw FixtureError("not added")
        }
        return records[0]
    }

    /// A page's attachments are read for the span of its ids: a note of another owner, or one
    /// left out of the page, inside that span keeps its attachments to itself.
    @Test("a page of notes holds each note's attachments, oldest first, and no one else's", arguments: Backend.all)
    func pageAttachments(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store, ann = Owner(id: 7)
        guard case .done(let first, _) = try store.perform(.create(body: "first"), owner: ann),
            case .done(let other, _) = try store.perform(.create(body: "not ann's")),
            case .done(let second, _) = try store.perform(.create(body: "second"), owner: ann),
            case .done(let third, _) = try store.perform(.create(body: "third"), owner: ann)
        else { Issue.record("no notes"); return }
        func attach(_ note: Int64, _ owner: Owner) throws -> String {
            let temporary = try temporaryFile(fixture.directory.path, [7])
            guard
                case .uploadsAdded(let records, _, _) = try store.perform(
                    .addUploads([try newUpload(store, temporary, size: 1)], noteID: note),
                    owner: owner)
            else { throw FixtureError("not added") }
            return records[0].id
        }
        let a = try attach(first.id, ann), b = try attach(first.id, ann), c = try attach(third.id, ann)
        _ = try attach(other.id, .unclaimed)
        let page = try store.notesWithAttachments(NoteQuery(limit: 10, order: .oldestFirst), owner: ann)
        #expect(page.records.map(\.body) == ["first", "second", "third"])
        #expect(page.indices.map { page.attachments(at: $0).map(\.id) } == [[a, b], [], [c]])
        // A page that leaves the third note out does not carry its attachment.
        let cut = try store.notesWithAttachments(NoteQuery(limit: 2, order: .oldestFirst), owner: ann)
        #expect(cut.attachmentsByNote.keys.sorted() == [first.id])
        #expect(second.id > other.id)
    }

    @Test("pages newest first after a cursor, filtered by note or by none; an unknown cursor is nil", arguments: Backend.all)
    func paging(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let directory = fixture.directory, store = fixture.store
        guard case .done(let note, _) = try store.perform(.create(body: "n")) else { Issue.record("no note"); return }
        let uploads = try (0..<7).map { try add(store, directory, noteID: $0 % 3 == 0 ? note.id : nil) }.map(\.id)
        let newest = Array(uploads.reversed())
        let first = try #require(try store.uploads(UploadQuery(limit: 3)))
        #expect(first.map(\.id) == Array(newest.prefix(3)))
        let second = try #require(try store.uploads(UploadQuery(limit: 3, after: first.last!.id)))
        #expect(second.map(\.id) == Array(newest.dropFirst(3).prefix(3)))
        #expect(try store.uploads(UploadQuery(limit: 10, attachment: .note(note.id)))?.map(\.id) == [uploads[6], uploads[3], uploads[0]])
        #expect(try store.uploads(UploadQuery(limit: 10, attachment: .unattached))?.map(\.id) == [uploads[5], uploads[4], uploads[2], uploads[1]])
        #expect(try store.uploads(UploadQuery(limit: 1, after: uploads[4], attachment: .unattached))?.map(\.id) == [uploads[2]])
        #expect(try store.uploads(UploadQuery(limit: 10, attachment: .note(note.id + 1))) == [])
        #expect(try store.uploads(UploadQuery(after: "0123456789abcdef01234567")) == nil)
    }

    @Test("a cursor naming a deleted upload goes on after its place: deleted alone, or with its note out of the trash", arguments: Backend.all)
    func cursorAfterDeletion(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let directory = fixture.directory, store = fixture.store
        guard case .done(let note, _) = try store.perform(.create(body: "n")) else { Issue.record("no note"); return }
        let uploads = try (0..<6).map { try add(store, directory, noteID: $0 == 3 ? note.id : nil) }.map(\.id)
        // Newest first: 5 4 3 2 1 0. A client had a page ending at 4, then 4 was deleted.
        _ = try store.perform(.deleteUpload(id: uploads[4]))
        #expect(try store.uploads(UploadQuery(limit: 2, after: uploads[4]))?.map(\.id) == [uploads[3], uploads[2]])
        // 3 goes with its note, when the note leaves the trash.
        _ = try store.perform(.delete(id: note.id, ifVersion: nil))
        #expect(try store.upload(id: uploads[3]) != nil)
        _ = try store.purgeTrashedNote(id: note.id, owner: .unclaimed)
        #expect(try store.uploads(UploadQuery(limit: 2, after: uploads[3]))?.map(\.id) == [uploads[2], uploads[1]])
        #expect(
            try store.uploads(UploadQuery(limit: 10, after: uploads[3], attachment: .unattached))?.map(\.id) == [uploads[2], uploads[1], uploads[0]])
        // A new upload is newer than every place: never in a page after one.
        let later = try add(store, directory, noteID: nil).id
        #expect(try store.uploads(UploadQuery(limit: 10, after: uploads[4]))?.map(\.id) == [uploads[2], uploads[1], uploads[0]])
        #expect(try store.uploads(UploadQuery(limit: 1))?.map(\.id) == [later])
        // An id that never was still names nothing.
        #expect(try store.uploads(UploadQuery(after: "0123456789abcdef01234567")) == nil)
        // A place is kept a week: older, the cursor names nothing, even before a write prunes it.
        try fixture.execute("UPDATE removed_uploads SET removed_at = removed_at - 8 * 86400")
        #expect(try store.uploads(UploadQuery(limit: 2, after: uploads[4])) == nil)
        #expect(try store.uploads(UploadQuery(limit: 2, after: uploads[3])) == nil)
    }

    @Test("attaching moves an upload between notes, changing the version of each with an event", arguments: Backend.all)
    func attach(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let directory = fixture.directory, store = fixture.store
        guard case .done(let first, _) = try store.perform(.create(body: "first")),
            case .done(let second, _) = try store.perform(.create(body: "second"))
        else { Issue.record("no notes"); return }
        let upload = try add(store, directory, noteID: nil)
        guard case .uploadAttached(let attached, let events) = try store.perform(.attachUpload(id: upload.id, noteID: first.id)) else {
            Issue.record("not attached"); return
        }
        #expect(attached.noteID == first.id)
        #expect(events.map(\.note.id) == [first.id])
        #expect(try store.note(id: first.id)?.version == 2)
        guard case .uploadAttached(let moved, let movedEvents) = try store.perform(.attachUpload(id: upload.id, noteID: second.id)) else {
            Issue.record("not moved"); return
        }
        #expect(moved.noteID == second.id)
        #expect(movedEvents.map(\.note.id) == [first.id, second.id])
        #expect(try store.attachments(of: [first.id, second.id]).mapValues { $0.map(\.id) } == [second.id: [upload.id]])
        #expect(try store.perform(.attachUpload(id: upload.id, noteID: second.id)) == .uploadAttached(moved, events: []))
        guard case .uploadAttached(let detached, let detachEvents) = try store.perform(.attachUpload(id: upload.id, noteID: nil)) else {
            Issue.record("not detached"); return
        }
        #expect(detached.noteID == nil)
        #expect(detachEvents.map(\.note.version) == [3])
        #expect(try store.perform(.attachUpload(id: upload.id, noteID: 99)) == .notFound)
        #expect(try store.perform(.attachUpload(id: "0123456789abcdef01234567", noteID: first.id)) == .notFound)
        #expect(try store.upload(id: upload.id)?.noteID == nil)
        #expect(FileManager.default.fileExists(atPath: fixture.contentPath(of: upload.id)))
    }

    @Test("start-up empties tmp/ and keeps every upload file: an orphan goes only once the sweep finds it old")
    func orphans() throws {
        let directory = try TemporaryDirectory()
        var kept = ""
        do {
            let store = try SQLiteStore(dataDirectory: directory.path)
            let temporary = try temporaryFile(directory.path, [5])
            guard case .uploadsAdded(let records, _, _) = try store.perform(.addUploads([try newUpload(store, temporary, size: 1)], noteID: nil))
            else {
                Issue.record("not added"); return
            }
            kept = records[0].id
            store.close()
        }
        // What a crash between rename and commit, or during a request, leaves behind:
        let orphan = "0123456789abcdef01234567"
        try Data([1]).write(to: URL(fileURLWithPath: directory.path + "/uploads/" + orphan))
        try Data([2]).write(to: URL(fileURLWithPath: directory.path + "/tmp/upload-left.part"))
        let reopened = try SQLiteStore(dataDirectory: directory.path)
        defer { reopened.close() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/uploads").sorted() == [kept, orphan].sorted())
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/tmp").isEmpty)
        #expect(try reopened.upload(id: kept) != nil)
        // Young: spared. An hour old: swept; the upload with a row stays.
        #expect(try reopened.uploadSweep.run(now: Int64(Date().timeIntervalSince1970)).isEmpty)
        let removed = try reopened.uploadSweep.run(now: Int64(Date().timeIntervalSince1970) + 3600)
        #expect(removed == [UploadRecord.blobKey(orphan)])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/uploads") == [kept])
    }

    /// Issue 31 item 2: a process opening the folder deleted, at once, every file no row named
    /// in its view at that moment — so the file of an upload whose row was committing (its
    /// bytes in place, its transaction not yet visible to the opener) went, and the row then
    /// committed without its bytes. Here the commit comes from a store still open on the folder
    /// (two processes on one data folder share its lock); the same race is what a kill -9
    /// between rename and a commit that the next start does not see leaves. Before the fix the
    /// second opening unlinked the file and the row was left without bytes.
    @Test("opening the folder while an upload's row commits never takes its bytes")
    func openingRacesNoCommit() throws {
        let directory = try TemporaryDirectory()
        let first = try SQLiteStore(dataDirectory: directory.path)
        defer { first.close() }
        // The bytes are in place; the row is about to commit.
        let staged = try newUpload(first, try temporaryFile(directory.path, [7, 7, 7]), size: 3)
        var options = SQLiteStore.Options()
        options.removesOrphans = true
        let second = try SQLiteStore(dataDirectory: directory.path, options: options)
        // The second one's sweep, as soon as it may run, spares young bytes too.
        _ = try second.uploadSweep.run(now: Int64(Date().timeIntervalSince1970))
        guard case .uploadsAdded(let records, _, _) = try first.perform(.addUploads([staged], noteID: nil)) else {
            Issue.record("not added"); second.close(); return
        }
        second.close()
        #expect(records.map(\.id) == [staged.id])
        #expect(
            FileManager.default.fileExists(atPath: first.contentPath(of: staged.id)),
            "the row of upload \(staged.id) committed, and its file is gone")
    }
}
