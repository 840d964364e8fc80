import Foundation
import Testing
import JotterServerTestSupport
import JotterAPI
import JotterClient

/// A write whose answer was lost on the way back: the server committed it, the client retries.
/// The retry must come back as the success the write was, never as a failure of its own doing
/// (`412`, `404`) and never as a second write.
@Suite("JotterClient: a write retried after its answer was lost")
struct LostAnswerTests {
    /// A server behind a `FaultProxy`, a client through the proxy, and one straight to the server.
    static func withProxy(_ body: (JotterClient, JotterClient, FaultProxy) async throws -> Void) async throws {
        try await TestApp.with { app in
            let proxy = try FaultProxy(upstream: app.port)
            defer { proxy.stop() }
            let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!)
            try await body(client, JotterClient(baseURL: app.baseURL), proxy)
        }
    }

    @Test("update(ifMatch:) and delete(ifMatch:) whose answer was lost, retried, return the note they wrote: no 412, no 404")
    func conditionalWrites() async throws {
        try await Self.withProxy { client, direct, proxy in
            let note = try await client.notes.create("first")
            proxy.arm(FaultProxy.Fault(at: .answered) {})
            let updated = try await client.notes.update(note.id, body: "my edit", ifMatch: note.etag)
            #expect(proxy.disarm() != nil, "the fault struck")
            #expect(updated.body == "my edit" && updated.version == 2)
            #expect(try await direct.notes.get(note.id).version == 2, "written once")

            proxy.arm(FaultProxy.Fault(at: .answered) {})
            let emptied = try await client.notes.update(note.id, body: "", ifMatch: updated.etag)
            #expect(proxy.disarm() != nil)
            #expect(emptied.body == "" && emptied.version == 3)

            proxy.arm(FaultProxy.Fault(at: .answered) {})
            let deleted = try await client.notes.delete(note.id, ifMatch: emptied.etag)
            #expect(proxy.disarm() != nil)
            #expect(deleted.id == note.id && deleted.version == 3)
            #expect(try await direct.notes.allTrash().map(\.id) == [note.id])

            // A 412 that is not the client's own doing is still a conflict.
            let other = try await client.notes.create("other")
            _ = try await direct.notes.update(other.id, body: "changed elsewhere")
            let conflict = await #expect(throws: JotterClientError.self) {
                try await client.notes.update(other.id, body: "mine", ifMatch: other.etag)
            }
            #expect(conflict?.isConflict == true)
        }
    }

    @Test("delete(ifMatch:) whose deletion was done finds the note in the trash however many were deleted since: not only the first 100")
    func deletedUnderAFullTrash() async throws {
        try await withClient { client, app in
            let note = try await client.notes.create("mine")
            // The first attempt's deletion went through (its answer lost); 120 notes are deleted
            // after it (another device emptying its list) before the retry is answered.
            #expect(try app.request("DELETE", "/notes/\(note.id)").status == 200)
            for number in 0..<120 {
                let other = try await client.notes.create("other \(number)")
                #expect(try app.request("DELETE", "/notes/\(other.id)").status == 200)
            }
            #expect(try await client.notes.trash(limit: 100).notes.contains { $0.id == note.id } == false, "past the first 100")
            let deleted = try await client.notes.delete(note.id, ifMatch: note.etag)
            #expect(deleted.id == note.id && deleted.version == note.version && deleted.body == "mine")
            // Not at that version (restored and deleted again since): the failure stands.
            _ = try await client.notes.restore(note.id)
            #expect(try app.request("DELETE", "/notes/\(note.id)").status == 200)
            let stale = await #expect(throws: JotterClientError.self) { try await client.notes.delete(note.id, ifMatch: note.etag) }
            #expect(stale?.isNotFound == true)
        }
    }

    @Test("deleteFromTrash(_:ifMatch:) removes the note only at the version listed: one restored and deleted again since is 412, and stays")
    func conditionalDeleteFromTrash() async throws {
        try await withClient { client, _ in
            let note = try await client.notes.create("listed")
            _ = try await client.notes.delete(note.id)
            let listed = try #require(try await client.notes.trash().notes.first { $0.id == note.id })
            _ = try await client.notes.restore(note.id)
            _ = try await client.notes.delete(note.id)
            let stale = await #expect(throws: JotterClientError.self) {
                try await client.notes.deleteFromTrash(note.id, ifMatch: listed.note.etag)
            }
            #expect(stale?.isConflict == true)
            let current = try #require(try await client.notes.trash().notes.first { $0.id == note.id }, "it stays")
            try await client.notes.deleteFromTrash(note.id, ifMatch: current.note.etag)
            #expect(try await client.notes.allTrash().contains { $0.id == note.id } == false)
        }
    }

    @Test("update(baseVersion:) without a key, its answer lost, is answered once: the retry is not merged a second time")
    func mergedEditOnce() async throws {
        try await Self.withProxy { client, direct, proxy in
            let note = try await client.notes.create("one\ntwo\n")
            _ = try await direct.notes.update(note.id, body: "one\ntwo\nthree from elsewhere\n")
            proxy.arm(FaultProxy.Fault(at: .answered) {})
            let answer = try await client.notes.update(note.id, body: "ONE\ntwo\n", baseVersion: 1)
            #expect(proxy.disarm() != nil)
            #expect(answer.note.body == "ONE\ntwo\nthree from elsewhere\n" && answer.note.version == 3)
            #expect(answer.merge?.result == "clean")
            #expect(try await direct.notes.get(note.id).version == 3, "merged once")
        }
    }

    @Test("the merge's 409s (unknown base, note deleted) are isMergeConflict, not isConflict; a 412 is the other way round")
    func mergeConflictCheck() async throws {
        try await withClient { client, _ in
            let note = try await client.notes.create("text")
            let unknown = await #expect(throws: JotterClientError.self) {
                try await client.notes.update(note.id, body: "new", baseVersion: 99)
            }
            #expect(unknown?.isMergeConflict == true && unknown?.isConflict == false)
            _ = try await client.notes.delete(note.id)
            let deleted = await #expect(throws: JotterClientError.self) {
                try await client.notes.update(note.id, body: "new", baseVersion: 1)
            }
            #expect(deleted?.isMergeConflict == true && deleted?.status == 409)
            let other = try await client.notes.create("x")
            _ = try await client.notes.update(other.id, body: "y")
            let stale = await #expect(throws: JotterClientError.self) {
                try await client.notes.update(other.id, body: "z", ifMatch: other.etag)
            }
            #expect(stale?.isConflict == true && stale?.isMergeConflict == false)
        }
    }
}
