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

    func newUpload(_ path: String, size: Int64) -> NewUpload {
        NewUpload(temporaryPath: path, filename: "f.bin", contentType: "application/octet-stream", size: size, sha256: String(repeating: "0", count: 64))
    }

    @Test("adding moves the file in with its row; attaching bumps the note; deleting the note deletes the files")
    func lifecycle() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteNoteStore(dataDirectory: directory.path)
        guard case .done(let note, _) = try store.perform(.create(body: "n")) else { Issue.record("no note"); return }
        let temporary = try temporaryFile(directory.path, [1, 2, 3])
        guard case .uploadsAdded(let records, let touched, let event) = try store.perform(.addUploads([newUpload(temporary, size: 3)], noteID: note.id)) else {
            Issue.record("not added"); return
        }
        #expect(!FileManager.default.fileExists(atPath: temporary))
        #expect(FileManager.default.contents(atPath: store.contentPath(of: records[0].id)) == Data([1, 2, 3]))
        #expect(touched?.version == 2)
        #expect(event?.kind == .updated)
        #expect(try store.attachments(of: [note.id])[note.id]?.map(\.id) == [records[0].id])
        _ = try store.perform(.delete(id: note.id, ifVersion: nil))
        #expect(try store.upload(id: records[0].id) == nil)
        #expect(!FileManager.default.fileExists(atPath: store.contentPath(of: records[0].id)))
    }

    @Test("an unknown note stores nothing and leaves the temporary file to its request")
    func unknownNote() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteNoteStore(dataDirectory: directory.path)
        let temporary = try temporaryFile(directory.path, [9])
        #expect(try store.perform(.addUploads([newUpload(temporary, size: 1)], noteID: 42)) == .notFound)
        #expect(try store.uploads(limit: 10).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/uploads").isEmpty)
        #expect(FileManager.default.fileExists(atPath: temporary))
    }

    @Test("start-up removes files without a row and empties tmp/, keeping stored uploads")
    func orphans() throws {
        let directory = try TemporaryDirectory()
        var kept = ""
        do {
            let store = try SQLiteNoteStore(dataDirectory: directory.path)
            let temporary = try temporaryFile(directory.path, [5])
            guard case .uploadsAdded(let records, _, _) = try store.perform(.addUploads([newUpload(temporary, size: 1)], noteID: nil)) else {
                Issue.record("not added"); return
            }
            kept = records[0].id
            store.close()
        }
        // What a crash between rename and commit, or during a request, leaves behind:
        try Data([1]).write(to: URL(fileURLWithPath: directory.path + "/uploads/0123456789abcdef01234567"))
        try Data([2]).write(to: URL(fileURLWithPath: directory.path + "/tmp/upload-left.part"))
        let reopened = try SQLiteNoteStore(dataDirectory: directory.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/uploads") == [kept])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/tmp").isEmpty)
        #expect(try reopened.upload(id: kept) != nil)
    }
}
