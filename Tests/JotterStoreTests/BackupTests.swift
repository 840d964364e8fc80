import Foundation
import Synchronization
import Testing
@testable import JotterStore

/// Online backups of a data folder and their restore.
@Suite("Backup and restore")
struct BackupTests {
    /// A stored upload whose bytes are `bytes`, attached to `noteID`.
    @discardableResult
    func addUpload(_ store: SQLiteStore, _ bytes: [UInt8], noteID: Int64?) throws -> UploadRecord {
        let path = store.temporaryDirectory + "/t-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let upload = try store.stage(
            path, size: Int64(bytes.count), filename: "f-\(bytes.first ?? 0).bin",
            sha256: "bytes-\(bytes.count)-\(bytes.first ?? 0)")
        guard case .uploadsAdded(let records, _, _) = try store.perform(.addUploads([upload], noteID: noteID)) else {
            throw FixtureError("upload not added")
        }
        return records[0]
    }

    @Test("a backup taken while writers create, update and delete holds every note acknowledged before it, and every upload it names")
    func backupDuringWrites() throws {
        let fixture = try StoreFixture()
        let store = fixture.sqlite!
        var before: [NoteRecord] = []
        for index in 0..<200 { before.append(try fixture.create("before \(index)")) }
        for index in 0..<20 { try addUpload(store, [UInt8](repeating: UInt8(index), count: 1000 + index), noteID: before[index].id) }
        before = try before.map { try #require(try store.note(id: $0.id)) }  // as acknowledged: attaching changed versions

        let stop = Atomic<Bool>(false)
        let written = Atomic<Int>(0)
        let destination = try TemporaryDirectory()
        let backupFolder = destination.path + "/backup"
        let outcome = Mutex<Result<BackupContents, StoreError>?>(nil)
        onThreads(3) { thread in
            if thread == 0 {
                while written.load(ordering: .relaxed) < 50 { usleep(1000) }
                outcome.withLock { $0 = Result { () throws(StoreError) in try store.backup(into: backupFolder) } }
                stop.store(true, ordering: .relaxed)
                return
            }
            var index = 0
            while !stop.load(ordering: .relaxed) {
                index += 1
                // Creates, uploads and deletions, so files vanish while the backup runs.
                _ = try? store.perform(.create(body: "during \(thread)-\(index)"))
                if let upload = try? addUpload(store, [UInt8](repeating: UInt8(100 + thread), count: 500), noteID: nil) {
                    _ = try? store.perform(.deleteUpload(id: upload.id))
                }
                written.add(1, ordering: .relaxed)
            }
        }
        let contents = try #require(try outcome.withLock { $0 }?.get())
        #expect(try StoreFixture.integrityCheck(path: backupFolder + "/jotter.sqlite") == "ok")
        let checked = try DataFolderBackup.contents(ofBackup: backupFolder)
        #expect(checked == contents)
        #expect(contents.notes >= 250)
        for upload in contents.uploads {
            // Stored bytes are `size` times the byte in the file name (the original may be gone by now).
            let bytes = try Data(contentsOf: URL(fileURLWithPath: backupFolder + "/uploads/" + upload.id))
            #expect(bytes == Self.expectedBytes(upload), "upload \(upload.id)")
        }
        #expect(contents.uploads.count >= 20)

        let restored = try TemporaryDirectory()
        _ = try DataFolderBackup.restore(from: backupFolder, into: restored.path + "/data", replacing: false)
        let reopened = try SQLiteStore(dataDirectory: restored.path + "/data")
        defer { reopened.close() }
        for note in before { #expect(try reopened.note(id: note.id) == note) }
        #expect(try reopened.uploads(UploadQuery(limit: 1000))?.count == contents.uploads.count)
        for upload in contents.uploads {
            #expect(FileManager.default.contents(atPath: reopened.contentPath(of: upload.id)) == Self.expectedBytes(upload))
        }
        #expect(try StoreFixture.integrityCheck(path: restored.path + "/data/jotter.sqlite") == "ok")
    }

    @Test("a backup carries the trash: a deleted note with deleted_at, its revisions and its attachment's bytes, restorable from it")
    func backupKeepsTheTrash() throws {
        let fixture = try StoreFixture()
        let store = fixture.sqlite!
        let note = try fixture.create("first draft")
        _ = try store.perform(.update(id: note.id, body: "binned", ifVersion: nil))
        let upload = try addUpload(store, [9, 9, 9], noteID: note.id)
        _ = try store.perform(.delete(id: note.id, ifVersion: nil))
        let trashed = try #require(try store.trashedNote(id: note.id, owner: .unclaimed))

        let folder = try TemporaryDirectory()
        let contents = try store.backup(into: folder.path + "/b")
        #expect(contents.uploads.map(\.id) == [upload.id])
        _ = try DataFolderBackup.restore(from: folder.path + "/b", into: folder.path + "/data", replacing: false)
        let reopened = try SQLiteStore(dataDirectory: folder.path + "/data")
        defer { reopened.close() }
        #expect(try reopened.trashedNote(id: note.id, owner: .unclaimed) == trashed)
        #expect(try reopened.revisions(noteID: note.id, before: nil, limit: 10, owner: .unclaimed, inTrash: true)?.map(\.version) == [3, 2, 1])
        #expect(try reopened.revision(noteID: note.id, version: 1, owner: .unclaimed, inTrash: true)?.body == "first draft")
        #expect(try reopened.attachments(of: [note.id], owner: .unclaimed)[note.id]?.map(\.id) == [upload.id])
        #expect(FileManager.default.contents(atPath: reopened.contentPath(of: upload.id)) == Data([9, 9, 9]))
        let change = try #require(try reopened.restoreTrashedNote(id: note.id, owner: .unclaimed).change)
        #expect(change.note.body == "binned")
    }

    static func expectedBytes(_ upload: UploadRecord) -> Data {
        let byte = UInt8(upload.filename.dropFirst(2).dropLast(4)) ?? 0
        return Data(repeating: byte, count: Int(upload.size))
    }

    @Test("an upload deleted while a backup holds removals keeps its file until the backup lets go")
    func removalsHeldBack() throws {
        let fixture = try StoreFixture()
        let upload = try addUpload(fixture.sqlite!, [1, 2, 3], noteID: nil)
        fixture.sqlite!.holdRemovals()
        _ = try fixture.sqlite!.perform(.deleteUpload(id: upload.id))
        #expect(FileManager.default.fileExists(atPath: fixture.sqlite!.contentPath(of: upload.id)))
        fixture.sqlite!.releaseRemovals()
        #expect(!FileManager.default.fileExists(atPath: fixture.sqlite!.contentPath(of: upload.id)))
    }

    @Test("a restore refuses a non-empty folder unless replacing, and a folder a store has open")
    func restoreRefusals() throws {
        let fixture = try StoreFixture()
        try fixture.create("kept")
        let folder = try TemporaryDirectory()
        _ = try fixture.sqlite!.backup(into: folder.path + "/b")
        #expect(throws: StoreError.notEmpty) { try DataFolderBackup.snapshot(dataDirectory: fixture.directory.path, into: folder.path + "/b") }

        let target = try TemporaryDirectory()
        try Data("x".utf8).write(to: URL(fileURLWithPath: target.path + "/something"))
        #expect(throws: StoreError.notEmpty) { try DataFolderBackup.restore(from: folder.path + "/b", into: target.path, replacing: false) }
        #expect(FileManager.default.fileExists(atPath: target.path + "/something"))

        let running = try SQLiteStore(dataDirectory: target.path)
        #expect(throws: StoreError.inUse) { try DataFolderBackup.restore(from: folder.path + "/b", into: target.path, replacing: true) }
        running.close()

        _ = try DataFolderBackup.restore(from: folder.path + "/b", into: target.path, replacing: true)
        let reopened = try SQLiteStore(dataDirectory: target.path)
        defer { reopened.close() }
        #expect(try reopened.notes(NoteQuery()).map(\.body) == ["kept"])
        // While it is open, nothing can restore over it.
        #expect(throws: StoreError.inUse) { try DataFolderBackup.restore(from: folder.path + "/b", into: target.path, replacing: true) }
    }

    /// A restore from an older backup takes back what was made after it. Clients that synced
    /// meanwhile hold cursors and note ids of that lost history: the restored server must walk
    /// them through its state once, and never give a lost note's id to a new note.
    @Test("a restore starts a new history: old cursors walk, old streams reload, no note or event id comes back")
    func restoreStartsNewHistory() throws {
        let fixture = try StoreFixture()
        let store = fixture.sqlite!
        let kept = try fixture.create("in the backup")
        let folder = try TemporaryDirectory()
        _ = try store.backup(into: folder.path + "/b")
        let lost = try fixture.create("made after the backup")
        _ = try store.perform(.update(id: lost.id, body: "changed after the backup", ifVersion: nil))
        let oldCursor = try store.changes(NoteFeedQuery(since: 0), owner: .unclaimed).cursor(count: 2, more: false)
        store.close()

        _ = try DataFolderBackup.restore(from: folder.path + "/b", into: fixture.directory.path, replacing: true)
        let restored = try SQLiteStore(dataDirectory: fixture.directory.path)
        defer { restored.close() }
        // New notes and events past the lost ones, however many: the lost note's id stays unknown.
        let made = try #require(try restored.perform(.create(body: "made after the restore")).note)
        #expect(made.id > lost.id)
        #expect(try restored.note(id: lost.id, owner: .unclaimed) == nil)
        // The lost history's cursor walks the complete state (what it does not name is gone)…
        let walk = try restored.changes(NoteFeedQuery(since: oldCursor), owner: .unclaimed)
        #expect(walk.walk)
        #expect(walk.entries.map(\.noteID) == [kept.id, made.id])
        // …and the walk's cursor then reads on as usual.
        #expect(try restored.changes(NoteFeedQuery(since: walk.cursor(count: 2, more: false)), owner: .unclaimed).walk == false)
        // A stream resumed from the lost history is told to reload.
        #expect(try restored.events(after: oldCursor, limit: 10, owner: .unclaimed) == nil)
    }

    @Test("a released folder lock is free at once, though a copy of its descriptor lives on (as in a child forked before its exec)")
    func releasedLockWithACopy() throws {
        let folder = try TemporaryDirectory()
        let restore = try DataFolderLock(folder.path, exclusive: true)
        let copy = dup(restore.fd)  // what a process forked by another thread holds until it execs
        defer { close(copy) }
        #expect(throws: StoreError.inUse) { try DataFolderLock(folder.path, exclusive: false) }
        restore.unlock()
        let server = try DataFolderLock(folder.path, exclusive: false)
        server.unlock()
    }

    @Test("a damaged backup is refused: a missing upload file, a database from a newer jotter")
    func damagedBackups() throws {
        let fixture = try StoreFixture()
        let note = try fixture.create("n")
        let upload = try addUpload(fixture.sqlite!, [7, 7], noteID: note.id)
        let folder = try TemporaryDirectory()
        _ = try fixture.sqlite!.backup(into: folder.path + "/b")
        try FileManager.default.removeItem(atPath: folder.path + "/b/uploads/" + upload.id)
        #expect(throws: StoreError.corrupt) { try DataFolderBackup.restore(from: folder.path + "/b", into: folder.path + "/t", replacing: false) }
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/t/jotter.sqlite"))

        _ = try fixture.sqlite!.backup(into: folder.path + "/c")
        let db = try SQLiteConnection(path: folder.path + "/c/jotter.sqlite", flags: SQLiteConnection.readWrite)
        try db.run("UPDATE schema_version SET version = 99")
        db.close()
        #expect(throws: StoreError.newerSchema) { try DataFolderBackup.restore(from: folder.path + "/c", into: folder.path + "/u", replacing: false) }
    }

    @Test("storage statistics count notes and uploads and their bytes")
    func statistics() throws {
        let fixture = try StoreFixture()
        let note = try fixture.create("n")
        try fixture.create("m")
        try addUpload(fixture.sqlite!, [UInt8](repeating: 1, count: 300), noteID: note.id)
        try addUpload(fixture.sqlite!, [UInt8](repeating: 2, count: 200), noteID: nil)
        let statistics = try fixture.sqlite!.storageStatistics()
        #expect(statistics.notes == 2)
        #expect(statistics.uploads == 2)
        #expect(statistics.uploadBytes == 500)
        #expect(statistics.databaseBytes > 0)
    }
}
