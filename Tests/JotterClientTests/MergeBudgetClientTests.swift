import Foundation
import JotterServerTestSupport
import JotterTestSupport
import Synchronization
import Testing
@testable import JotterClient
@testable import JotterServer

/// The sync engine when the server refuses a merge for the user's spent budget of merge work
/// (`429`, `/problems/merge-budget-spent`): the edit is kept and sent later.
@Suite("JotterClient: an edit refused for the merge budget")
struct MergeBudgetClientTests {
    @Test("an edit refused with 429 stays queued, its text in the replica; once the budget refills, a sync merges it")
    func keptAcrossRefusal() async throws {
        let clock = SteppedClock()
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestApp.with(configure: {
            // One step: any merge spends it (the budget goes into debt by what the merge cost).
            $0.mergeWorkBurst = 1; $0.mergeWorkPerSecond = 1_000_000
            $0.mergeBudgetClock = clock.read
        }) { app in
            var configuration = JotterClient.Configuration()
            configuration.retry = RetryPolicy(maximumAttempts: 2)
            let client = JotterClient(baseURL: app.baseURL, configuration: configuration)
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            _ = try await engine.create("one\ntwo\nthree\n")
            try await engine.sync()
            let id = try #require(try await engine.notes().first?.id)

            // Another device's edits: one plain, one merged (which spends the budget).
            _ = try await client.notes.update(id, body: "one\ntwo\nthree\nfour\n")  // version 2
            let spending = try await client.notes.update(id, body: "zero\none\ntwo\nthree\n", baseVersion: 1)  // version 3
            #expect(spending.merge != nil)

            try await engine.edit(id, body: "one\nTWO from the engine\nthree\n")  // made from version 1
            let refused = await #expect(throws: JotterClientError.self) { try await engine.sync() }
            #expect(refused?.status == 429)
            #expect(refused?.retryAfter ?? 0 >= 1)
            #expect(refused?.problem?.type == "/problems/merge-budget-spent")
            let state = try await engine.state
            #expect(state.pending == 1 && state.needsAttention == nil)
            #expect(try await engine.pendingEdits().map(\.body) == ["one\nTWO from the engine\nthree\n"])
            #expect(try await engine.note(id)?.body == "one\nTWO from the engine\nthree\n")
            #expect(try await client.notes.get(id).version == 3)

            // Later, the budget refilled: the same edit goes, merged with both others.
            clock.advance(60)
            try await engine.sync()
            #expect(try await engine.state.pending == 0)
            let server = try await client.notes.get(id)
            #expect(server.body == "zero\none\nTWO from the engine\nthree\nfour\n")
            #expect(try await engine.note(id)?.body == server.body)
        }
    }
}
