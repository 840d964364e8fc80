import Foundation
import Testing
import JotterAPI
import JotterClient
@testable import JotterCLI
@testable import JotterCLICore
import JotterTestSupport

/// `jotter uploads list|show|rm`, and the SDK's upload pages and attach underneath.
@Suite("jotter uploads")
struct UploadsCommandTests {
    let commands = ClientCommandTests()

    /// Uploads `count` small files (`file0.txt`…), attached to `note` when given; their ids, oldest first.
    func uploadFiles(_ client: JotterClient, _ folder: URL, count: Int, note: String? = nil) async throws -> [String] {
        var ids: [String] = []
        for n in 0..<count {
            let file = folder.appendingPathComponent("file\(n).txt")
            try Data("content \(n)".utf8).write(to: file)
            ids.append(try await client.uploads.upload(fileAt: file, noteID: note).id)
        }
        return ids
    }

    @Test("list: a table newest first, --note and --unattached filter, --limit says more follow, --all lists every one")
    func list() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withApp { app in
            let client = JotterClient(baseURL: app.baseURL)
            let note = try await client.notes.create("with files")
            let loose = try await uploadFiles(client, folder, count: 3)
            let attached = try await uploadFiles(client, folder, count: 2, note: note.id)

            let table = await commands.jotter(["uploads", "list"], app: app)
            try #require(table.status == 0, "\(table.err)")
            let lines = table.out.split(separator: "\n")
            #expect(lines.first?.hasPrefix("ID") == true && lines.first?.hasSuffix("NAME") == true)
            #expect(lines.dropFirst().map { String($0.prefix(24)) } == (loose + attached).reversed())
            #expect(table.err.isEmpty)

            let onlyNote = await commands.jotter(["uploads", "list", "--note", note.id, "--json"], app: app)
            let notePage = try JSONDecoder().decode(UploadPage.self, from: Data(onlyNote.out.utf8))
            #expect(notePage.uploads.map(\.id) == attached.reversed())
            let unattached = await commands.jotter(["uploads", "list", "--unattached", "--json"], app: app)
            #expect(try JSONDecoder().decode(UploadPage.self, from: Data(unattached.out.utf8)).uploads.map(\.id) == loose.reversed())

            let limited = await commands.jotter(["uploads", "list", "--limit", "2"], app: app)
            #expect(limited.out.split(separator: "\n").count == 3)
            #expect(limited.err == "More uploads follow: jotter uploads list --after \(attached[0]) (or --all)\n", "\(limited.err)")
            let limitedJSON = await commands.jotter(["uploads", "list", "--limit", "2", "--json"], app: app)
            #expect(try JSONDecoder().decode(UploadPage.self, from: Data(limitedJSON.out.utf8)).next == "/uploads?limit=2&after=\(attached[0])")
            let second = await commands.jotter(["uploads", "list", "--limit", "2", "--after", attached[0], "--json"], app: app)
            #expect(try JSONDecoder().decode(UploadPage.self, from: Data(second.out.utf8)).uploads.map(\.id) == [loose[2], loose[1]])

            let every = await commands.jotter(["uploads", "list", "--all", "--json"], app: app)
            let all = try JSONDecoder().decode(UploadPage.self, from: Data(every.out.utf8))
            #expect(all.uploads.count == 5 && all.next == nil)

            #expect(await commands.jotter(["uploads", "list", "--note", "1", "--unattached"], app: app).status == 2)
            #expect(await commands.jotter(["uploads", "list", "--all", "--limit", "3"], app: app).status == 2)
            #expect(await commands.jotter(["uploads", "list", "--limit", "0"], app: app).status == 2)
        }
    }

    @Test("attach moves an upload to a note (by a prefix of its id), detach to none; a note in the trash is not found and keeps its own")
    func attachAndDetach() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withApp { app in
            let client = JotterClient(baseURL: app.baseURL)
            let first = try await client.notes.create("first")
            let second = try await client.notes.create("second")
            let id = try #require(try await uploadFiles(client, folder, count: 1, note: first.id).first)

            let versions = (try await client.notes.get(first.id).version, try await client.notes.get(second.id).version)

            let moved = await commands.jotter(["uploads", "attach", String(id.prefix(6)), second.id], app: app)
            #expect(moved.out == "Upload \(id) (file0.txt) is note \(second.id).\n", "\(moved.err)")
            #expect(try await client.uploads.get(id).noteID == second.id)
            #expect(try await client.notes.get(first.id).version == versions.0 + 1, "the note it left changed")
            #expect(try await client.notes.get(second.id).version == versions.1 + 1, "the note it joined changed")

            let detached = await commands.jotter(["uploads", "detach", id, "--json"], app: app)
            let upload = try JSONDecoder().decode(UploadEnvelope.self, from: Data(detached.out.utf8)).upload
            #expect(upload.id == id && upload.noteID == nil)

            // A note in the trash is not found, and keeps the uploads it had.
            _ = try await client.notes.delete(first.id)
            #expect(await commands.jotter(["uploads", "attach", id, first.id], app: app).status == ExitCode.notFound)
            #expect(await commands.jotter(["uploads", "attach", id, second.id], app: app).status == 0)
            _ = try await client.notes.delete(second.id)
            let kept = await commands.jotter(["uploads", "detach", id], app: app)
            #expect(kept.status == ExitCode.conflict, "\(kept.err)")
            #expect(try await client.uploads.get(id).noteID == second.id, "nothing moved")

            #expect(await commands.jotter(["uploads", "attach", id], app: app).err.hasPrefix("error: missing NOTE\n"))
            #expect(await commands.jotter(["uploads", "attach", id, "1", "2"], app: app).status == ExitCode.usage)
        }
    }

    @Test("--all follows the pages past the server's page size")
    func allPages() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withApp { app in
            let client = JotterClient(baseURL: app.baseURL)
            let ids = try await uploadFiles(client, folder, count: 7)
            #expect(try await client.uploads.all(pageSize: 2).map(\.id) == ids.reversed())
            #expect(try await client.uploads.list().map(\.id) == ids.reversed())
            let first = try await client.uploads.page(limit: 3)
            #expect(first.uploads.count == 3 && first.next != nil)
        }
    }

    @Test("show prints the details; rm deletes several; unknown ids exit 3")
    func showAndRemove() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withApp { app in
            let client = JotterClient(baseURL: app.baseURL)
            let ids = try await uploadFiles(client, folder, count: 3)
            let shown = await commands.jotter(["uploads", "show", ids[0]], app: app)
            try #require(shown.status == 0, "\(shown.err)")
            #expect(shown.out.contains("name     file0.txt\n"))
            #expect(shown.out.contains("type     text/plain; charset=utf-8\n"))
            #expect(shown.out.contains("note     no note\n"))
            let json = await commands.jotter(["uploads", "show", ids[0], "--json"], app: app)
            #expect(try JSONDecoder().decode(UploadEnvelope.self, from: Data(json.out.utf8)).upload.id == ids[0])

            let removed = await commands.jotter(["uploads", "rm", ids[0], ids[1]], app: app)
            #expect(removed.status == 0, "\(removed.err)")
            #expect(removed.out == "Deleted upload \(ids[0]) (file0.txt, no note).\nDeleted upload \(ids[1]) (file1.txt, no note).\n")
            #expect(try await client.uploads.list().map(\.id) == [ids[2]])
            let missing = await commands.jotter(["uploads", "rm", ids[0]], app: app)
            #expect(missing.status == 3)
            #expect(await commands.jotter(["uploads", "show", "0123456789abcdef01234567"], app: app).status == 3)
            #expect(await commands.jotter(["uploads", "rm"], app: app).status == 2)
        }
    }

    @Test("the SDK attaches an upload to a note and back to none")
    func attach() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withApp { app in
            let client = JotterClient(baseURL: app.baseURL)
            let note = try await client.notes.create("target")
            let id = try #require(try await uploadFiles(client, folder, count: 1).first)
            #expect(try await client.uploads.attach(id, toNote: note.id).noteID == note.id)
            #expect(try await client.notes.get(note.id).attachments.map(\.id) == [id])
            #expect(try await client.uploads.page(attachment: .unattached).uploads.isEmpty)
            #expect(try await client.uploads.attach(id, toNote: nil).noteID == nil)
            #expect(try await client.uploads.page(attachment: .unattached).uploads.map(\.id) == [id])
            let error = await #expect(throws: JotterClientError.self) { try await client.uploads.attach(id, toNote: "999") }
            #expect(error?.isNotFound == true)
        }
    }
}

/// Upload ids written short, as git takes commits.
@Suite("jotter: upload id prefixes")
struct UploadIDPrefixTests {
    let commands = ClientCommandTests()

    func upload(_ id: String, _ name: String) -> Upload {
        Upload(
            id: id, filename: name, contentType: "text/plain", size: 1, sha256: String(repeating: "0", count: 64),
            createdAt: Timestamp.date("2026-01-01 00:00:00")!, noteID: nil, url: "/uploads/\(id)/content")
    }

    @Test("a unique prefix names its upload; none is not found; several are listed; fewer than 4 characters is a usage error")
    func matching() throws {
        let uploads = [
            upload("7c1a00000000000000000001", "a.txt"), upload("7c1b00000000000000000002", "b.txt"),
            upload("7c1b00000000000000000003", "c.txt"),
        ]
        #expect(try UploadID.match("7c1a", among: uploads) == "7c1a00000000000000000001")
        #expect(UploadID.trimmed("7C1A…") == "7c1a")
        #expect(throws: CommandFailure.self) { try UploadID.match("ffff", among: uploads) }
        do {
            _ = try UploadID.match("7c1b", among: uploads)
            Issue.record("an ambiguous prefix was taken")
        } catch let failure as CommandFailure {
            #expect(failure.status == ExitCode.usage)
            #expect(failure.message.contains("7c1b00000000000000000002") && failure.message.contains("7c1b00000000000000000003"))
        }
        #expect(throws: UsageError.self) { try UploadID.match("7c1", among: uploads) }
    }

    @Test("uploads show, download and rm take a unique prefix, also written with …")
    func commandsTakePrefixes() async throws {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        try await withApp { app in
            let file = scratch.appendingPathComponent("hello.txt")
            try Data("hello".utf8).write(to: file)
            let stored = try await JotterClient(baseURL: app.baseURL).uploads.upload(fileAt: file)
            let short = String(stored.id.prefix(6))
            let shown = await commands.jotter(["uploads", "show", short + "…"], app: app)
            #expect(shown.status == 0, "\(shown.err)")
            #expect(shown.out.contains(stored.id))
            let copy = scratch.appendingPathComponent("copy.txt").path
            let fetched = await commands.jotter(["download", short, "-o", copy], app: app)
            #expect(fetched.status == 0, "\(fetched.err)")
            #expect(try String(contentsOfFile: copy, encoding: .utf8) == "hello")
            let removed = await commands.jotter(["uploads", "rm", short], app: app)
            #expect(removed.status == 0, "\(removed.err)")
            #expect(try await JotterClient(baseURL: app.baseURL).uploads.all().isEmpty)
        }
    }
}
