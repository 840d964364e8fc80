import Foundation
import Testing
import JotterAPI
import JotterClient
@testable import JotterCLI
@testable import JotterCLICore
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// `jotter export` and `jotter import`: one tar archive, read back idempotently.
@Suite("jotter export and import")
struct ExportImportTests {
    let commands = ClientCommandTests()

    func client(_ app: TestApp) -> JotterClient { JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!) }

    /// Notes of every shape, attachments with awkward names, and an upload attached to none.
    func fill(_ app: TestApp, scratch: URL) async throws {
        let client = client(app)
        let bodies = ["Buy milk", "", "two\nlines\n", "Grüße, 日本語 \"quoted\" \\ back", "Buy milk", "# Heading\n\n- item"]
        for (index, body) in bodies.enumerated() {
            let note = try await client.notes.create(body)
            if index % 2 == 0 {
                for (part, name) in ["résumé.pdf", "a \"quoted\" name.txt"].enumerated() {
                    let file = scratch.appendingPathComponent("in-\(index)-\(part)")
                    try Data("ATTACHMENT-\(index)-\(part) ".utf8 + [UInt8](repeating: UInt8(index), count: 1000 * index)).write(to: file)
                    _ = try await client.uploads.upload(
                        fileAt: file, noteID: note.id, filename: name, contentType: part == 0 ? "application/pdf" : "text/plain")
                }
            }
        }
        let loose = scratch.appendingPathComponent("loose")
        try Data("LOOSE-UPLOAD".utf8).write(to: loose)
        _ = try await client.uploads.upload(fileAt: loose, filename: "loose.bin")
    }

    /// What must survive a round trip: bodies and attachments, in order; never ids or times.
    struct Shape: Equatable {
        var notes: [[String]]
        var uploads: [[String]]
    }

    func shape(_ archive: String, scratch: URL) throws -> Shape {
        let folder = scratch.appendingPathComponent("shape-\(UUID().uuidString)")
        let extracted = try ExtractedArchive(
            path: archive,
            into: try {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true); return folder.path
            }())
        let manifest = extracted.manifest
        return Shape(
            notes: try manifest.notes.map { entry in
                [try extracted.note(entry).body] + entry.attachments.flatMap { [$0.filename, $0.contentType, String($0.size), $0.sha256] }
            },
            uploads: manifest.uploads.map { [$0.filename, $0.contentType, String($0.size), $0.sha256] })
    }

    @Test("export takes every upload attached to no note, past one listing page of 1000, without a warning; .tar.gz and .tgz are gzip")
    func beyondOnePageAndGzip() async throws {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        try await withApp { app in
            for batch in [500, 500, 5] {
                var parts = MultipartBuilder()
                for index in 0..<batch { parts.file("file", filename: "f\(batch)-\(index).txt", body: Array("x\(batch)-\(index)".utf8)) }
                let stored = try RawHTTP(port: app.port, timeout: 120).request(
                    "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
                    body: parts.finished(), close: true)
                try #require(stored.status == 201, "\(stored.text)")
            }
            for name in ["all.tar", "all.tar.gz", "all.tgz"] {
                let path = scratch.appendingPathComponent(name).path
                let export = await commands.jotter(["export", path], app: app)
                #expect(export.status == 0, "\(export.err)")
                #expect(export.err.isEmpty, "\(export.err)")
                #expect(export.out.contains("1005 files"), "\(export.out)")
                let folder = scratch.appendingPathComponent("x-\(name)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                #expect(try ExtractedArchive(path: path, into: folder.path).manifest.uploads.count == 1005)
                if name != "all.tar" {
                    let magic = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)).prefix(2))
                    #expect(magic == [0x1f, 0x8b], "\(name) is not gzip")
                    _ = try BackupCommandTests.tool(["gzip", "-t", path])
                }
            }
        }
    }

    @Test("export → import into an empty server → export again gives the same notes and bytes; a second import creates nothing")
    func roundTrip() async throws {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let first = scratch.appendingPathComponent("first.tar").path
        let second = scratch.appendingPathComponent("second.tar.gz").path
        try await withApp { app in
            try await fill(app, scratch: scratch)
            let export = await commands.jotter(["export", first], app: app, terminal: true)
            try #require(export.status == 0, "\(export.err)")
            #expect(export.out == "exported 6 notes and 7 files (\(TextFormat.bytes(try manifestTotal(first, scratch: scratch)))) to \(first)\n")
            #expect(export.err.contains("\rexport  ["), "a progress bar on a terminal")
            let again = await commands.jotter(["export", first], app: app)
            #expect(again.status == 1)
            #expect(again.err == "error: \(first) already exists; pass --force to replace it\n")
        }
        // Another tool reads the archive: tar lists the manifest first, then the notes as JSON and Markdown.
        let listing = try BackupCommandTests.tool(["tar", "-tf", first]).split(separator: "\n").map(String.init)
        #expect(listing.first == "jotter-export/manifest.json")
        #expect(listing.contains("jotter-export/notes/1.json") && listing.contains("jotter-export/notes/1.md"))
        #expect(listing.contains { $0.hasPrefix("jotter-export/notes/1/") && $0.hasSuffix("-résumé.pdf") })
        #expect(listing.contains { $0.hasPrefix("jotter-export/uploads/") && $0.hasSuffix("-loose.bin") })
        let markdown = try BackupCommandTests.tool(["tar", "-xOf", first, "jotter-export/notes/3.md"])
        #expect(markdown.hasPrefix("---\nid: \"3\"\n"))
        #expect(markdown.hasSuffix("---\ntwo\nlines\n"))

        try await withApp { app in
            let imported = await commands.jotter(["import", first], app: app)
            try #require(imported.status == 0, "\(imported.err)")
            #expect(imported.out == "imported 6 notes and 7 files from \(first) (0 already there)\n")
            let export = await commands.jotter(["export", second], app: app)
            try #require(export.status == 0, "\(export.err)")

            let twice = await commands.jotter(["import", first], app: app)
            try #require(twice.status == 0, "\(twice.err)")
            #expect(twice.out == "imported 0 notes and 0 files from \(first) (7 already there)\n")
            var count = 0
            for try await _ in client(app).notes.all() { count += 1 }
            #expect(count == 6)
            #expect(try await client(app).uploads.list().count == 7)
        }
        #expect(try shape(first, scratch: scratch) == shape(second, scratch: scratch))
        #expect(try shape(first, scratch: scratch).notes.count == 6)
    }

    @Test("a note's history goes into the export and comes back with an import, oldest first")
    func historyRoundTrip() async throws {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let archive = scratch.appendingPathComponent("history.tar").path
        try await withApp { app in
            let client = client(app)
            let note = try await client.notes.create("draft")
            _ = try await client.notes.update(note.id, body: "second draft")
            _ = try await client.notes.update(note.id, body: "final")
            let export = await commands.jotter(["export", archive], app: app)
            try #require(export.status == 0, "\(export.err)")
        }
        let listing = try BackupCommandTests.tool(["tar", "-tf", archive])
        #expect(listing.contains("jotter-export/notes/1.revisions.json"))
        try await withApp { app in
            let imported = await commands.jotter(["import", archive], app: app)
            try #require(imported.status == 0, "\(imported.err)")
            let client = client(app)
            let note = try #require(try await client.notes.list().notes.first)
            #expect(note.body == "final")
            let history = try await client.notes.allRevisions(note.id)
            #expect(history.map(\.version) == [3, 2, 1])
            var bodies: [String] = []
            for info in history.reversed() { bodies.append(try await client.notes.revision(note.id, version: info.version).body) }
            #expect(bodies == ["draft", "second draft", "final"])
        }
    }

    @Test(
        "notes in the trash go into the export with deleted_at, history and attachments, and back into the trash on import; twice creates nothing",
        arguments: SharedBackend.available ? [false, true] : [false])
    func trashRoundTrip(postgres: Bool) async throws {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let first = scratch.appendingPathComponent("first.tar").path, second = scratch.appendingPathComponent("second.tar").path
        let backends = postgres ? [try SharedBackend(), try SharedBackend()] : []
        func server(_ index: Int, _ body: (TestApp) async throws -> Void) async throws {
            try await withApp(configure: { if postgres { backends[index].configure(&$0) } }, body)
        }
        let file = scratch.appendingPathComponent("photo")
        try Data("PHOTO-BYTES".utf8).write(to: file)
        try await server(0) { app in
            let client = client(app)
            _ = try await client.notes.create("kept")
            let binned = try await client.notes.create("draft B")
            _ = try await client.notes.update(binned.id, body: "binned B")
            _ = try await client.uploads.upload(fileAt: file, noteID: binned.id, filename: "photo.jpg", contentType: "image/jpeg")
            _ = try await client.notes.delete(binned.id)
            let gone = try await client.notes.create("gone C")
            _ = try await client.notes.delete(gone.id)
            let export = await commands.jotter(["export", first], app: app)
            try #require(export.status == 0, "\(export.err)")
            #expect(export.out.hasPrefix("exported 3 notes (2 in the trash) and 1 file ("), "\(export.out)")
            // The note file is the trash's entry: the note as it was, with deleted_at.
            let json = try BackupCommandTests.tool(["tar", "-xOf", first, "jotter-export/notes/\(binned.id).json"])
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            #expect(entry["body"] as? String == "binned B")
            #expect((entry["deleted_at"] as? String)?.count == 19)
            let markdown = try BackupCommandTests.tool(["tar", "-xOf", first, "jotter-export/notes/\(binned.id).md"])
            #expect(markdown.contains("\ndeleted_at: \"\(entry["deleted_at"] as? String ?? "?")\"\n"), "\(markdown)")
        }
        let folder = scratch.appendingPathComponent("manifest")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let manifest = try ExtractedArchive(path: first, into: folder.path).manifest
        #expect(manifest.formatVersion == 2)
        #expect(manifest.notes.map { $0.deletedAt != nil } == [false, true, true])

        try await server(1) { app in
            let client = client(app)
            let imported = await commands.jotter(["import", first], app: app)
            try #require(imported.status == 0, "\(imported.err)")
            #expect(imported.out == "imported 3 notes and 1 file from \(first), 2 put in the trash (0 already there)\n")
            #expect(try await client.notes.list().notes.map(\.body) == ["kept"])
            let trash = try await client.notes.allTrash()
            #expect(Set(trash.map(\.note.body)) == ["binned B", "gone C"])
            let binned = try #require(trash.first { $0.note.body == "binned B" })
            #expect(binned.note.attachments.map(\.filename) == ["photo.jpg"])
            let download = scratch.appendingPathComponent("downloaded")
            try await client.uploads.download(try #require(binned.note.attachments.first).id, to: download)
            #expect(try Data(contentsOf: download) == Data("PHOTO-BYTES".utf8))
            // Its history came with it, oldest first, and is read from the trash.
            let history = try await client.notes.allRevisions(binned.id, inTrash: true)
            let oldest = try #require(history.last)
            #expect(try await client.notes.revision(binned.id, version: oldest.version, inTrash: true).body == "draft B")
            // Restored, it is the note it was.
            #expect(try await client.notes.restore(binned.id).body == "binned B")
            _ = try await client.notes.delete(binned.id)

            let twice = await commands.jotter(["import", first], app: app)
            try #require(twice.status == 0, "\(twice.err)")
            #expect(twice.out == "imported 0 notes and 0 files from \(first) (3 already there)\n")
            #expect(try await client.notes.allTrash().count == 2)
            #expect(try await client.notes.list().notes.count == 1)
            let export = await commands.jotter(["export", second], app: app)
            try #require(export.status == 0, "\(export.err)")
        }
        #expect(
            try shape(first, scratch: scratch).notes.sorted { $0.lexicographicallyPrecedes($1) }
                == shape(second, scratch: scratch).notes.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test("a note created by an import cut short before it went to the trash goes there, with no second copy")
    func completesTrashedImport() async throws {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let archive = scratch.appendingPathComponent("a.tar").path
        try await withApp { app in
            let note = try await client(app).notes.create("binned")
            _ = try await client(app).notes.delete(note.id)
            #expect(await commands.jotter(["export", archive], app: app).status == 0)
        }
        try await withApp { app in
            // As if an import stopped after creating the note, before deleting it.
            _ = try await client(app).notes.create("binned")
            let imported = await commands.jotter(["import", archive], app: app)
            try #require(imported.status == 0, "\(imported.err)")
            #expect(imported.out == "imported 0 notes and 0 files from \(archive), completed 1, 1 put in the trash (0 already there)\n")
            #expect(try await client(app).notes.list().notes.isEmpty)
            #expect(try await client(app).notes.allTrash().map(\.note.body) == ["binned"])
        }
    }

    func manifestTotal(_ archive: String, scratch: URL) throws -> Int64 {
        let folder = scratch.appendingPathComponent("total-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try ExtractedArchive(path: archive, into: folder.path).manifest.files.reduce(0) { $0 + $1.size }
    }

    @Test("a note cut short by an earlier import gets the attachments it lacks, and no second copy")
    func completesPartialImport() async throws {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let archive = scratch.appendingPathComponent("a.tar").path
        try await withApp { app in
            try await fill(app, scratch: scratch)
            #expect(await commands.jotter(["export", archive], app: app).status == 0)
        }
        try await withApp { app in
            // As if an import stopped after the first note and its first attachment.
            let note = try await client(app).notes.create("Buy milk")
            let file = scratch.appendingPathComponent("in-0-0")
            _ = try await client(app).uploads.upload(fileAt: file, noteID: note.id, filename: "résumé.pdf", contentType: "application/pdf")
            let imported = await commands.jotter(["import", archive], app: app)
            try #require(imported.status == 0, "\(imported.err)")
            #expect(imported.out == "imported 5 notes and 6 files from \(archive), completed 1 (0 already there)\n")
            let first = try await client(app).notes.get(note.id)
            #expect(first.attachments.map(\.filename) == ["résumé.pdf", "a \"quoted\" name.txt"])
            #expect(try await client(app).uploads.list().count == 7)
        }
    }

    @Test("a damaged archive is refused before anything is written; so is a file that is no export")
    func damaged() async throws {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let archive = scratch.appendingPathComponent("a.tar")
        try await withApp { app in
            try await fill(app, scratch: scratch)
            #expect(await commands.jotter(["export", archive.path], app: app).status == 0)
        }
        var bytes = try Data(contentsOf: archive)
        let marker = Data("ATTACHMENT-2-1".utf8)
        let found = try #require(bytes.range(of: marker))
        bytes[found.lowerBound] = UInt8(ascii: "X")
        try bytes.write(to: archive)
        try await withApp { app in
            let imported = await commands.jotter(["import", archive.path], app: app)
            #expect(imported.status == 1)
            #expect(imported.err.hasPrefix("error: \(archive.path) is damaged: notes/3/"), "\(imported.err)")
            #expect(imported.err.hasSuffix(" does not have the size and SHA-256 of its manifest\n"))
            #expect(try await client(app).notes.list().notes.isEmpty)

            let text = scratch.appendingPathComponent("plain.txt")
            try Data("not an archive".utf8).write(to: text)
            let plain = await commands.jotter(["import", text.path], app: app)
            #expect(plain.status == 1)
            #expect(plain.err.hasPrefix("error: \(text.path) is not a readable archive"), "\(plain.err)")
            let missing = await commands.jotter(["import"], app: app)
            #expect(missing.status == 2)
            #expect(missing.err.hasPrefix("error: missing FILE"))
        }
    }
}
