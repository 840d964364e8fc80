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
}
