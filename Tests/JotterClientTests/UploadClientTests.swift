import Foundation
import Synchronization
import Testing
import JotterTestSupport
import JotterAPI
import JotterClient
import JotterHTTP
import JotterSystem

/// Writes `bytes` to a new file named `name` in `folder`.
func makeFile(_ folder: URL, _ name: String, _ bytes: [UInt8]) throws -> URL {
    let url = folder.appendingPathComponent(name)
    try Data(bytes).write(to: url)
    return url
}

/// Bytes that differ from one position to the next, so a misplaced range shows.
func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
}

func sha256(_ bytes: [UInt8]) -> String {
    var hash = SHA256()
    bytes.withUnsafeBytes { hash.update($0) }
    return hash.finish()
}

@Suite("JotterClient: uploads and downloads")
struct UploadClientTests {
    @Test("upload attaches to a note; list, get, delete; the note's version follows")
    func lifecycle() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = pattern(300_000)
        let file = try makeFile(folder, "photo.png", bytes)
        try await withClient { client, _ in
            let note = try await client.notes.create("with a photo")
            let reports = Mutex<[TransferProgress]>([])
            let upload = try await client.uploads.upload(fileAt: file, noteID: note.id) { progress in reports.withLock { $0.append(progress) } }
            #expect(upload.filename == "photo.png")
            #expect(upload.contentType == "image/png")
            #expect(upload.size == Int64(bytes.count))
            #expect(upload.sha256 == sha256(bytes))
            #expect(upload.noteID == note.id)
            let last = try #require(reports.withLock { $0.last })
            #expect(last.completed == last.total && last.fraction == 1)
            #expect(try await client.notes.get(note.id).attachments == [upload])
            #expect(try await client.notes.get(note.id).version == 2)

            #expect(try await client.uploads.list() == [upload])
            #expect(try await client.uploads.get(upload.id) == upload)
            #expect(try await client.uploads.delete(upload.id) == upload)
            let gone = await #expect(throws: JotterClientError.self) { try await client.uploads.get(upload.id) }
            #expect(gone?.isNotFound == true)
            #expect(try await client.uploads.list().isEmpty)
        }
    }

    @Test("hostile filenames arrive exactly; names come from filename*")
    func filenames() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try makeFile(folder, "plain.txt", Array("hello".utf8))
        try await withClient { client, _ in
            for name in ["quote\"d; name=x.txt", "100%22 sure.txt", "émoji 😀 日本.txt", "back\\slash.txt", "a  b.txt"] {
                let upload = try await client.uploads.upload(fileAt: file, filename: name)
                let expected = name.split(separator: "\\").last.map(String.init)!
                #expect(upload.filename == expected)
            }
        }
    }

    @Test("errors: unknown note (404), over the limit (413), no such local file")
    func errors() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let big = try makeFile(folder, "big.bin", pattern(256 << 10))
        try await withClient(configure: { $0.maxUploadSize = 64 << 10 }) { client, _ in
            let unknown = await #expect(throws: JotterClientError.self) {
                try await client.uploads.upload(fileAt: try makeFile(folder, "a.txt", [1]), noteID: "999")
            }
            #expect(unknown?.isNotFound == true)
            let tooLarge = await #expect(throws: JotterClientError.self) { try await client.uploads.upload(fileAt: big) }
            #expect(tooLarge?.isTooLarge == true, "\(String(describing: tooLarge))")
            let missing = await #expect(throws: JotterClientError.self) {
                try await client.uploads.upload(fileAt: folder.appendingPathComponent("nope"))
            }
            #expect(missing?.kind == .localFile)
            let empty = await #expect(throws: JotterClientError.self) { try await client.uploads.upload(MultipartFormData()) }
            #expect(empty?.isValidation == true)
            #expect(empty?.fieldErrors.first?.field == "file")
            let stored = try await client.uploads.list()
            #expect(stored.isEmpty)
        }
    }

    @Test("download: whole; an interrupted one resumed with If-Range; a complete file left alone; another file never touched")
    func download() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = pattern(1_000_000)
        let file = try makeFile(folder, "data.bin", bytes)
        try await withClient { client, _ in
            let upload = try await client.uploads.upload(fileAt: file)
            let target = folder.appendingPathComponent("copy.bin")
            let partial = folder.appendingPathComponent("copy.bin.jotter-part-" + upload.sha256.prefix(16))

            let fresh = try await client.uploads.download(upload.id, to: target)
            #expect(fresh == DownloadResult(url: target, size: 1_000_000, resumedFrom: 0))
            #expect(try Data(contentsOf: target) == Data(bytes))
            #expect(!FileManager.default.fileExists(atPath: partial.path))

            // Already there, the same bytes: nothing fetched, nothing written.
            let complete = try await client.uploads.download(upload.id, to: target)
            #expect(complete.alreadyComplete && complete.resumedFrom == 1_000_000)

            // An interrupted download of this upload is continued.
            try FileManager.default.removeItem(at: target)
            try Data(bytes[..<123_457]).write(to: partial)
            let reports = Mutex<[TransferProgress]>([])
            let resumed = try await client.uploads.download(upload.id, to: target) { progress in reports.withLock { $0.append(progress) } }
            #expect(resumed.resumedFrom == 123_457)
            #expect(try Data(contentsOf: target) == Data(bytes))
            #expect(reports.withLock { $0.first?.completed } == 123_457)  // where it starts again
            #expect(reports.withLock { $0.dropFirst().first?.completed ?? 0 } > 123_457)
            #expect(reports.withLock { $0.last } == TransferProgress(completed: 1_000_000, total: 1_000_000))
            #expect(!FileManager.default.fileExists(atPath: partial.path))

            // An unrelated file at the target, shorter or longer, is never appended to or replaced…
            for unrelated in [Array("hello\n".utf8), bytes + [1, 2, 3]] {
                try Data(unrelated).write(to: target)
                let refused = await #expect(throws: JotterClientError.self) { try await client.uploads.download(upload.id, to: target) }
                #expect(refused?.kind == .destinationExists)
                #expect(try Data(contentsOf: target) == Data(unrelated))
            }
            // …unless asked to.
            let replaced = try await client.uploads.download(upload.id, to: target, replacing: true)
            #expect(replaced.resumedFrom == 0)
            #expect(try Data(contentsOf: target) == Data(bytes))

            // A partial file whose bytes are not the upload's is caught by the SHA-256 and removed.
            try FileManager.default.removeItem(at: target)
            try Data(repeating: 0x55, count: 1000).write(to: partial)
            let corrupt = await #expect(throws: JotterClientError.self) { try await client.uploads.download(upload.id, to: target) }
            #expect(corrupt?.kind == .invalidResponse)
            #expect(!FileManager.default.fileExists(atPath: target.path) && !FileManager.default.fileExists(atPath: partial.path))

            // To a stream, checked too.
            let streamed = Mutex(Data())
            _ = try await client.uploads.download(upload.id) { chunk in streamed.withLock { $0.append(chunk) } }
            #expect(streamed.withLock { $0 } == Data(bytes))

            let missing = await #expect(throws: JotterClientError.self) {
                try await client.uploads.download("nope", to: folder.appendingPathComponent("nope"))
            }
            #expect(missing?.isNotFound == true)
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("nope").path))
        }
    }
}
