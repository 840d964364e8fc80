import Foundation
import Testing
import JotterClient
import JotterTestSupport

/// `jotter notes history` and `jotter notes restore` against a real server.
@Suite("jotter notes history and restore")
struct NotesHistoryCommandTests {
    let commands = ClientCommandTests()

    @Test func historyListsShowsAndRestores() async throws {
        try await withApp { app in
            let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!)
            let note = try await client.notes.create("first")
            _ = try await client.notes.update(note.id, body: "second, longer")

            let listed = await commands.jotter(["notes", "history", note.id], app: app)
            #expect(listed.status == 0, "\(listed.err)")
            let lines = listed.out.split(separator: "\n")
            #expect(lines.first?.hasPrefix("VERSION") == true)
            #expect(lines.dropFirst().map { $0.split(separator: " ").first.map(String.init) } == ["2", "1"])

            let shown = await commands.jotter(["notes", "history", note.id, "--version", "1"], app: app)
            #expect(shown.status == 0)
            #expect(shown.out.hasPrefix("note \(note.id) · version 1 · saved "))
            #expect(shown.out.hasSuffix("\n\nfirst\n"))

            let restored = await commands.jotter(["notes", "restore", note.id, "--version", "1"], app: app)
            #expect(restored.status == 0, "\(restored.err)")
            #expect(restored.out == "Restored note \(note.id) to version 1's text (now version 3).\n")
            #expect(try await client.notes.get(note.id).body == "first")

            let json = await commands.jotter(["notes", "history", note.id, "--json"], app: app)
            #expect(json.out.contains("\"version\": 3"))
            #expect(await commands.jotter(["notes", "restore", note.id, "--version", "9"], app: app).status != 0)
            #expect(await commands.jotter(["notes", "restore", note.id], app: app).status != 0)
        }
    }

    @Test func historyOfADeletedNoteIsReadInTheTrash() async throws {
        try await withApp { app in
            let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!)
            let note = try await client.notes.create("before")
            _ = try await client.notes.update(note.id, body: "after")
            _ = try await client.notes.delete(note.id)

            let missing = await commands.jotter(["notes", "history", note.id], app: app)
            #expect(missing.status != 0)
            #expect(missing.err.contains("/notes/trash/\(note.id)/revisions"), "\(missing.err)")
            let listed = await commands.jotter(["notes", "history", note.id, "--trash"], app: app)
            #expect(listed.status == 0, "\(listed.err)")
            #expect(listed.out.split(separator: "\n").dropFirst().map { $0.split(separator: " ").first.map(String.init) } == ["2", "1"])
            let shown = await commands.jotter(["notes", "history", note.id, "--trash", "--version", "1"], app: app)
            #expect(shown.out.hasSuffix("\n\nbefore\n"), "\(shown.out) \(shown.err)")
        }
    }
}
