import Foundation
import Testing
import JotterClient
import JotterTestSupport

/// `jotter notes trash` and `jotter notes restore ID` (from the trash) against a real server.
@Suite("jotter notes trash and restore from the trash")
struct NotesTrashCommandTests {
    let commands = ClientCommandTests()

    @Test func trashListsRestoresAndEmpties() async throws {
        try await withApp { app in
            let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!)
            let kept = try await client.notes.create("kept for later")
            let gone = try await client.notes.create("gone for good")
            let third = try await client.notes.create("third")
            #expect(await commands.jotter(["notes", "trash"], app: app).out == "The trash is empty.\n")
            let removed = await commands.jotter(["notes", "rm", kept.id, gone.id, third.id], app: app)
            #expect(removed.status == 0, "\(removed.err)")

            let listed = await commands.jotter(["notes", "trash"], app: app)
            #expect(listed.status == 0, "\(listed.err)")
            let lines = listed.out.split(separator: "\n")
            #expect(lines.first?.hasPrefix("ID") == true && lines.first?.contains("DELETED") == true)
            #expect(lines.dropFirst().map { $0.split(separator: " ").first.map(String.init) } == [third.id, gone.id, kept.id])
            #expect(listed.out.contains("kept for later"))
            let limited = await commands.jotter(["notes", "trash", "--limit", "1"], app: app)
            #expect(limited.out.split(separator: "\n").count == 2)
            #expect(limited.err.contains("jotter notes trash --after \(third.id)"))
            let json = await commands.jotter(["notes", "trash", "--json"], app: app)
            #expect(json.out.contains("\"deleted_at\""))

            let restored = await commands.jotter(["notes", "restore", kept.id], app: app)
            #expect(restored.status == 0, "\(restored.err)")
            #expect(restored.out == "Restored note \(kept.id) from the trash (now version 2).\n")
            #expect(try await client.notes.get(kept.id).body == "kept for later")

            let purged = await commands.jotter(["notes", "trash", "--purge", gone.id], app: app)
            #expect(purged.status == 0, "\(purged.err)")
            #expect(purged.out == "Removed note \(gone.id) from the trash for good.\n")
            #expect(await commands.jotter(["notes", "restore", gone.id], app: app).status != 0)
            #expect(await commands.jotter(["notes", "trash", "--purge", gone.id], app: app).status != 0)

            let emptied = await commands.jotter(["notes", "trash", "--empty"], app: app)
            #expect(emptied.status == 0, "\(emptied.err)")
            #expect(emptied.out == "Removed 1 note from the trash for good.\n")
            #expect(try await client.notes.allTrash().isEmpty)
            #expect(await commands.jotter(["notes", "trash", "--empty"], app: app).out == "The trash was already empty.\n")
        }
    }

    @Test func usageErrorsAndHelp() async throws {
        for arguments in [
            ["notes", "trash", "--purge"], ["notes", "trash", "--empty", "3"], ["notes", "trash", "--purge", "3", "--empty"],
            ["notes", "trash", "3"], ["notes", "trash", "--all", "--limit", "2"], ["notes", "trash", "--purge", "3", "--all"],
        ] {
            let result = await commands.jotter(arguments, app: nil)
            #expect(result.status == 2, "\(arguments): \(result.err)")
        }
        let help = await commands.jotter(["notes", "trash", "--help"], app: nil)
        #expect(help.status == 0)
        #expect(help.out.contains("--purge") && help.out.contains("--empty") && help.out.contains("--trash-days"))
        let notes = await commands.jotter(["notes", "--help"], app: nil)
        #expect(notes.out.contains("trash"))
    }
}
