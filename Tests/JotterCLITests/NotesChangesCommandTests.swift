import Foundation
import Testing
import JotterClient
import JotterTestSupport

/// `jotter notes changes`, `jotter notes list --order updated` and the SDK's `changes(since:limit:)`
/// against a real server.
@Suite("jotter notes changes and --order updated")
struct NotesChangesCommandTests {
    let commands = ClientCommandTests()

    @Test func changesFollowTheCursorAndListsSortByLastChange() async throws {
        try await withApp { app in
            let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!)
            let a = try await client.notes.create("first")
            let b = try await client.notes.create("second")
            let everything = try await client.notes.changes()
            #expect(everything.changes.map(\.id) == [a.id, b.id] && everything.reset && !everything.more)
            _ = try await client.notes.update(a.id, body: "first, edited")
            _ = try await client.notes.delete(b.id)
            let after = try await client.notes.changes(since: everything.cursor, limit: 1)
            #expect(after.changes == [.note(try await client.notes.get(a.id))] && after.more && !after.reset)
            let rest = try await client.notes.changes(since: after.cursor)
            #expect(rest.changes == [.deleted(id: b.id, version: 1)] && !rest.more)

            let run = await commands.jotter(["notes", "changes", "--since", String(everything.cursor)], app: app)
            #expect(run.status == 0, "\(run.err)")
            let rows = run.out.split(separator: "\n").dropFirst().map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
            #expect(rows.map { Array($0.prefix(3)) } == [[a.id, "2", "changed"], [b.id, "1", "deleted"]])
            #expect(run.err == "Cursor: \(rest.cursor) (jotter notes changes --since \(rest.cursor))\n")

            let c = try await client.notes.create("third")
            let listed = await commands.jotter(["notes", "list", "--order", "updated", "--all"], app: app)
            #expect(listed.status == 0, "\(listed.err)")
            #expect(listed.out.split(separator: "\n").dropFirst().map { String($0.split(separator: " ")[0]) } == [c.id, a.id])
            let page = try await client.notes.list(limit: 1, order: .recentlyUpdated)
            #expect(page.notes.map(\.id) == [c.id])
            #expect(try await client.notes.nextPage(after: page)?.notes.map(\.id) == [a.id])
        }
    }
}
