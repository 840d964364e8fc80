import Foundation
import Testing
import JotterServerTestSupport
import JotterTestSupport
import JotterAPI
@testable import JotterClient

/// Every SDK path that writes a note stores exactly the text given: a NUL, an empty text, a
/// note near the size limit. (The app-developer trial's findings 1 to 3: each lost an edit.)
@Suite("JotterClient: every write stores exactly the text given")
struct WriteFidelityTests {
    static let withNUL = "before\u{0}after NUL \u{0}\u{0} and 日本\u{0}"

    @Test("the replica keeps a NUL: text is bound and read by its byte count, not up to the first NUL")
    func replicaKeepsNUL() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = try ReplicaDatabase(path: folder.appendingPathComponent("nul.sqlite").path)
        try database.execute("CREATE TABLE t(value TEXT)")
        for text in [Self.withNUL, "\u{0}", "", "plain", "\u{0}\u{0}x"] {
            try database.rows("DELETE FROM t")
            try database.rows("INSERT INTO t(value) VALUES (?)", [.text(text)])
            #expect(try database.scalar("SELECT value FROM t")?.text == text)
            #expect(try database.scalar("SELECT length(CAST(value AS BLOB)) FROM t")?.integer == Int64(text.utf8.count))
            #expect(try database.scalar("SELECT count(*) FROM t WHERE value = ?", [.text(text)])?.integer == 1)
        }
    }

    @Test("a note with a NUL is pulled, edited and pushed by the engine whole; one created by the engine goes whole")
    func engineKeepsNUL() async throws {
        try await SyncEngineTests.withServer { client, _, folder in
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            let remote = try await client.notes.create(Self.withNUL, idempotencyKey: UUID().uuidString)
            #expect(remote.body == Self.withNUL)
            try await engine.sync()
            #expect(try await engine.note(remote.id)?.body == Self.withNUL)
            try await engine.edit(remote.id, body: Self.withNUL + " + appended")
            try await engine.sync()
            #expect(try await client.notes.get(remote.id).body == Self.withNUL + " + appended")

            let local = try await engine.create("made here\u{0}with a NUL")
            #expect(local.body == "made here\u{0}with a NUL")
            try await engine.sync()
            let server = try await SyncEngineTests.serverNotes(client)
            #expect(server.map(\.body).contains("made here\u{0}with a NUL"))
            #expect(try await engine.notes().map(\.body).sorted() == server.map(\.body).sorted())
        }
    }

    @Test("create, update, update(ifMatch:) and update(baseVersion:) store exactly the text: empty, NUL, form-hostile")
    func everyWriteStoresTheText() async throws {
        try await withClient { client, _ in
            for text in ["", Self.withNUL, "a&b=c+d%20", "body=x", "😀 日本 /slash\\"] {
                let created = try await client.notes.create(text)
                #expect(created.body == text)
                #expect(try await client.notes.get(created.id).body == text)
                let filled = try await client.notes.update(created.id, body: "filled")
                #expect(filled.body == "filled")
                let updated = try await client.notes.update(created.id, body: text, ifMatch: filled.etag)
                #expect(updated.body == text && updated.version == filled.version + 1, "update(ifMatch:) to \(text.debugDescription)")
                #expect(try await client.notes.get(created.id).body == text)
                _ = try await client.notes.update(created.id, body: "filled again")
                #expect(try await client.notes.update(created.id, body: text).body == text, "update to \(text.debugDescription)")
                let merged = try await client.notes.update(created.id, body: "x" + text, baseVersion: updated.version + 2)
                #expect(merged.note.body == "x" + text)
            }
        }
    }

    /// Texts of 30 lines, about 9,000 bytes, under a limit of 10,000: CJK (each character 3
    /// bytes, 9 on the wire in a form) and slashes (2 bytes each where JSON escapes them as `\/`).
    static let limit = 10_000
    static let nearTheLimit = [
        String(repeating: String(repeating: "漢", count: 99) + "\n", count: 30),
        String(repeating: String(repeating: "/", count: 297) + "\n", count: 30),
    ]

    /// `text` with its first line (or its last) replaced.
    static func replacing(first: Bool, of text: String, with line: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[first ? 0 : lines.count - 2] = line
        return lines.joined(separator: "\n")
    }

    @Test("a note under the server's body limit is taken through every SDK path: create, updates, the engine's push and merge")
    func underTheLimitIsTaken() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withClient(configure: { $0.maxBodySize = Self.limit }) { client, _ in
            for (index, text) in Self.nearTheLimit.enumerated() {
                let created = try await client.notes.create(text)
                #expect(created.body == text)
                #expect(try await client.notes.create(text, idempotencyKey: UUID().uuidString).body == text)
                let emptied = try await client.notes.update(created.id, body: "")
                #expect(try await client.notes.update(created.id, body: text, ifMatch: emptied.etag).body == text)
                #expect(try await client.notes.update(created.id, body: text).body == text)
                let shorter = Self.replacing(first: false, of: text, with: "")
                #expect(try await client.notes.update(created.id, body: shorter, baseVersion: 1).note.body == shorter)

                let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes-\(index).sqlite"))
                let local = try await engine.create(text)
                try await engine.sync()
                let id = try #require(try await engine.notes().first { $0.body == text && $0.id != local.id }?.id)
                _ = try await client.notes.update(id, body: Self.replacing(first: true, of: text, with: "elsewhere"))
                try await engine.edit(id, body: Self.replacing(first: false, of: text, with: "here"))
                try await engine.sync()
                #expect(
                    try await client.notes.get(id).body
                        == Self.replacing(first: true, of: Self.replacing(first: false, of: text, with: "here"), with: "elsewhere"))
                let state = try await engine.state
                #expect(state.needsAttention == nil && state.pending == 0, "\(String(describing: state.needsAttention))")
                #expect(try await engine.note(id)?.body == client.notes.get(id).body)
            }
        }
    }

    @Test("a note really over the limit waits in needsAttention with a detail the app can show: the limit and its size")
    func overTheLimitSaysWhy() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withClient(configure: { $0.maxBodySize = Self.limit }) { client, _ in
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            let text = String(repeating: "long ", count: 3000)
            try await engine.create(text)
            let error = await #expect(throws: JotterClientError.self) { try await engine.sync() }
            #expect(error?.isTooLarge == true && error?.detail?.contains("\(Self.limit)") == true, "\(String(describing: error))")
            let attention = try #require(try await engine.state.needsAttention)
            #expect(attention.isTooLarge && attention.title == error?.title)
            let detail = try #require(attention.detail)
            #expect(detail.contains("\(Self.limit) bytes") && detail.contains("\(text.utf8.count) bytes"), "\(detail)")
            // Reopened from its file, the engine still says why.
            let reopened = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            await #expect(throws: JotterClientError.self) { try await reopened.sync() }
            #expect(try await reopened.state.needsAttention?.detail == detail)
        }
    }
}
