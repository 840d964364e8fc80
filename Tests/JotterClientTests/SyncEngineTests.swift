import Foundation
import Glibc
import Testing
import Synchronization
import JotterServerTestSupport
import JotterTestSupport
import JotterHTTP
@testable import JotterClient

/// `GET /notes/changes` as the contract of issue 32 allows it to answer every time: a reset walk
/// (`"reset": true`, one page) listing the complete current state, taken from `GET /notes`.
/// The reset-walk test uses it: a real feed resets only for a cursor older than it keeps.
final class ResetWalkFeed: Middleware {
    let port = Mutex(0)

    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        guard request.method == .get, request.path == "/notes/changes" else { return try next(request, context) }
        let list = try RawHTTP(port: port.withLock { $0 }).request("GET", "/notes?limit=1000&order=asc", headers: [], body: [], close: true)
        let object = try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any]
        let notes = try JSONSerialization.data(withJSONObject: object?["notes"] ?? [])
        let body = #"{"changes":"# + String(decoding: notes, as: UTF8.self) + #","cursor":1,"more":false,"reset":true}"#
        return .now(Response(status: .ok, contentType: "application/json", body: Array(body.utf8)))
    }
}

/// The sync engine against a real server, its replica in a real SQLite file.
///
/// `.timing`: its syncs run against the SDK's timeouts (30 s), and `killedMidSync` must kill its
/// app (requests 200 ms apart) before that app's sync gives up; run beside the parallel pass's
/// load, both were seen to fail (a sync timed out; the app ended by itself, SIGILL: its
/// top-level error).
@Suite("JotterClient: the notes sync engine", .tags(.timing))
struct SyncEngineTests {
    /// A server (with `ResetWalkFeed` when `standInFeed`), a client for it, and a scratch folder.
    static func withServer<T>(standInFeed: Bool = false, _ body: (JotterClient, TestApp, URL) async throws -> T) async throws -> T {
        let feed = ResetWalkFeed()
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await TestApp.with(configure: { if standInFeed { $0.middleware = [feed] } }) { app in
            feed.port.withLock { $0 = app.port }
            return try await body(JotterClient(baseURL: app.baseURL), app, folder)
        }
    }

    /// A client that can't reach any server, and does not retry.
    static func offlineClient() throws -> JotterClient {
        var configuration = JotterClient.Configuration()
        configuration.retry = .never
        return JotterClient(baseURL: URL(string: "http://127.0.0.1:\(try TestApp.unusedPort())")!, configuration: configuration)
    }

    static func serverNotes(_ client: JotterClient) async throws -> [Note] {
        var notes: [Note] = []
        for try await note in client.notes.all(order: .oldestFirst) { notes.append(note) }
        return notes
    }

    @Test("edits made offline survive closing the engine; the next sync sends them and the replica takes the server's ids")
    func offlineEditsThenSync() async throws {
        try await Self.withServer { client, _, folder in
            let file = folder.appendingPathComponent("notes.sqlite")
            var offline: NotesSyncEngine? = try NotesSyncEngine(client: try Self.offlineClient(), file: file)
            let milk = try await offline!.create("Buy milk")
            try await offline!.edit(milk.id, body: "Buy oat milk")
            let bread = try await offline!.create("Bread")
            #expect(milk.isLocalOnly && bread.isLocalOnly)
            #expect(try await offline!.notes().map(\.body).sorted() == ["Bread", "Buy oat milk"])
            #expect(try await offline!.state.pending == 2, "an unsent creation takes the later edit")
            await #expect(throws: JotterClientError.self) { try await offline!.sync() }
            let state = try await offline!.state
            #expect(state.isOffline && state.pending == 2 && state.lastSync == nil)
            offline = nil

            let engine = try NotesSyncEngine(client: client, file: file)
            let updates = engine.updates()
            #expect(try await engine.state.pending == 2)
            try await engine.sync()
            let state2 = try await engine.state
            #expect(state2.pending == 0 && state2.lastSync != nil && state2.lastError == nil)
            let server = try await Self.serverNotes(client)
            #expect(server.map(\.body) == ["Buy oat milk", "Bread"])
            let local = try await engine.notes()
            #expect(Set(local.map(\.id)) == Set(server.map(\.id)))
            #expect(local.allSatisfy { !$0.isLocalOnly && !$0.hasPendingEdits && $0.version == 1 })

            var assigned: [String: String] = [:]
            for await update in updates {
                if case .idAssigned(let from, let to) = update { assigned[from] = to }
                if assigned.count == 2 { break }
            }
            #expect(assigned[milk.id] == server[0].id && assigned[bread.id] == server[1].id)

            // An edit made later goes with the version it was made from.
            try await engine.edit(server[0].id, body: "Buy oat milk and eggs")
            #expect(try await engine.pendingEdits().map(\.baseVersion) == [1])
            try await engine.sync()
            #expect(try await client.notes.get(server[0].id).body == "Buy oat milk and eggs")

            // Emptied here, emptied there (an empty form field would be "no body sent").
            try await engine.edit(server[1].id, body: "")
            try await engine.sync()
            #expect(try await client.notes.get(server[1].id).body == "")
        }
    }

    @Test("an edit made from an older version is merged by the server with another client's edit: both are in the note and the replica")
    func mergedWithAnotherClient() async throws {
        try await Self.withServer { client, _, folder in
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            let created = try await engine.create("one\ntwo\nthree\n")
            try await engine.sync()
            let id = try #require(try await engine.notes().first?.id)
            #expect(id != created.id)

            _ = try await client.notes.update(id, body: "one\ntwo\nTHREE from the other client\n")  // version 2
            try await engine.edit(id, body: "ONE from the engine\ntwo\nthree\n")  // made from version 1
            try await engine.sync()

            let server = try await client.notes.get(id)
            #expect(server.body == "ONE from the engine\ntwo\nTHREE from the other client\n")
            #expect(try await engine.note(id)?.body == server.body)
            #expect(try await engine.note(id)?.version == server.version)
            let merge = try #require(try await engine.state.merges.first)
            #expect(merge.noteID == id && merge.report.base == 1 && merge.report.result == "clean" && !merge.isOverlap)

            // Both change the same line: both texts kept, the overlap reported for the app.
            _ = try await client.notes.update(id, body: "one\ntwo\nTHREE from the other client, again\n")
            try await engine.edit(id, body: "ONE from the engine\ntwo\nTHREE from the engine\n")
            try await engine.sync()
            let overlapped = try await client.notes.get(id).body
            #expect(overlapped.contains("THREE from the other client, again") && overlapped.contains("THREE from the engine"))
            #expect(try await engine.note(id)?.body == overlapped)
            let overlap = try #require(try await engine.state.merges.first { $0.noteID == id })
            #expect(overlap.isOverlap && !overlap.report.regions.isEmpty)
            try await engine.dismissMerge(noteID: id)
            #expect(try await engine.state.merges.isEmpty)
        }
    }

    @Test("a creation whose answer was lost, sent again from the outbox with its stored key, is not a duplicate; nor is an update")
    func lostAnswerIsNoDuplicate() async throws {
        try await Self.withServer { client, _, folder in
            let file = folder.appendingPathComponent("notes.sqlite")
            let offline = try NotesSyncEngine(client: try Self.offlineClient(), file: file)
            try await offline.create("Sent once, answer lost")
            let edit = try #require(try await offline.pendingEdits().first)
            #expect(edit.kind == .create && !edit.idempotencyKey.isEmpty)
            // The first send reached the server; its answer never came back.
            let first = try await client.notes.create("Sent once, answer lost", idempotencyKey: edit.idempotencyKey)

            let engine = try NotesSyncEngine(client: client, file: file)
            try await engine.sync()
            let server = try await Self.serverNotes(client)
            #expect(server.map(\.id) == [first.id], "one note, not two")
            #expect(try await engine.notes().map(\.id) == [first.id])

            // An update sent, its answer lost, then sent again from the outbox with the same base.
            try await engine.edit(first.id, body: "Sent once, answer lost\nand edited")
            let update = try #require(try await engine.pendingEdits().first)
            #expect(update.kind == .update && update.baseVersion == first.version)
            _ = try await client.notes.update(first.id, body: update.body!, baseVersion: update.baseVersion!)
            try await engine.sync()
            let body = try await client.notes.get(first.id).body
            #expect(body == "Sent once, answer lost\nand edited", "the text once, not twice")
            #expect(try await engine.note(first.id)?.body == body)
        }
    }

    @Test("an engine dropped mid-sync, reopened from its file, still has its outbox and pushes it once")
    func reopenedAfterDroppedMidSync() async throws {
        try await Self.withServer { client, app, folder in
            let file = folder.appendingPathComponent("notes.sqlite")
            // A client whose writes never leave: the sync is stuck mid-send until cancelled.
            var stuckConfiguration = JotterClient.Configuration()
            stuckConfiguration.adaptRequest = { request in
                if request.httpMethod == "POST" { try await Task.sleep(nanoseconds: 60_000_000_000) }
                return request
            }
            var stuck: NotesSyncEngine? = try NotesSyncEngine(
                client: JotterClient(baseURL: app.baseURL, configuration: stuckConfiguration), file: file)
            try await stuck!.create("Written before the kill")
            try await stuck!.create("Also written")
            let sync = Task { [stuck] in try await stuck!.sync() }
            var sending = false
            for _ in 0..<100 where !sending {
                try await Task.sleep(nanoseconds: 20_000_000)
                sending = try await stuck!.pendingEdits().first?.attempts == 1
            }
            #expect(sending, "the first creation is marked as sent before it goes")
            sync.cancel()
            await #expect(throws: (any Error).self) { try await sync.value }
            stuck = nil

            let engine = try NotesSyncEngine(client: client, file: file)
            let pending = try await engine.pendingEdits()
            #expect(pending.map(\.body) == ["Written before the kill", "Also written"])
            #expect(pending.map(\.attempts) == [1, 0])
            try await engine.sync()
            #expect(try await Self.serverNotes(client).map(\.body) == ["Written before the kill", "Also written"])
            #expect(try await engine.state.pending == 0)
        }
    }

    @Test("a reset walk drops the notes deleted on the server but keeps a note with a local edit, whose text then survives as a note")
    func resetWalkKeepsPendingEdits() async throws {
        try await Self.withServer(standInFeed: true) { client, _, folder in
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            for body in ["kept", "deleted remotely", "deleted remotely, edited here"] { try await engine.create(body) }
            try await engine.sync()
            let ids = try await Self.serverNotes(client).map(\.id)
            #expect(Set(try await engine.notes().map(\.id)) == Set(ids))

            _ = try await client.notes.delete(ids[1])
            _ = try await client.notes.delete(ids[2])
            try await engine.edit(ids[2], body: "deleted remotely, edited here, offline")
            let unsent = try await engine.create("made here, not sent")
            try await engine.pull()
            let afterPull = try await engine.notes()
            #expect(Set(afterPull.map(\.id)) == [ids[0], ids[2], unsent.id], "the walk drops only what has no local edit")

            // The edit's note is in the server's trash: the text is kept as a note of its own.
            try await engine.sync()
            let server = try await Self.serverNotes(client)
            #expect(Set(server.map(\.body)) == ["kept", "deleted remotely, edited here, offline", "made here, not sent"])
            #expect(Set(try await engine.notes().map(\.body)) == Set(server.map(\.body)))
            let conflict = try #require(try await engine.state.conflicts.first)
            #expect(conflict.noteID == ids[2] && conflict.reason == .noteDeleted, "in the server's trash")
            #expect(server.contains { $0.id == conflict.copyID }, "the copy's id is the server's once it is created")
        }
    }

    @Test("the replica reads and edits with no server at all; deleting a note the server never saw sends nothing")
    func localOnly() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = try NotesSyncEngine(client: try Self.offlineClient(), file: folder.appendingPathComponent("notes.sqlite"))
        let note = try await engine.create("draft")
        try await engine.edit(note.id, body: "draft 2")
        #expect(try await engine.note(note.id)?.body == "draft 2")
        #expect(try await engine.note(note.id)?.hasPendingEdits == true)
        try await engine.delete(note.id)
        #expect(try await engine.notes().isEmpty)
        #expect(try await engine.state.pending == 0)
        await #expect(throws: JotterClientError.self) { try await engine.edit(note.id, body: "gone") }
    }

    @Test("while following, another client's note arrives by itself and a local edit goes out by itself")
    func follows() async throws {
        try await Self.withServer { client, _, folder in
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            let following = Task { try await engine.follow() }
            defer { following.cancel() }
            /// Waits up to 10 s for `condition`.
            func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
                for _ in 0..<200 {
                    if try await condition() { return true }
                    try await Task.sleep(nanoseconds: 50_000_000)
                }
                return false
            }
            // The first sync done, and the event stream connected meanwhile.
            #expect(try await eventually { try await engine.state.lastSync != nil })
            try await Task.sleep(nanoseconds: 500_000_000)
            let remote = try await client.notes.create("from another device")
            #expect(try await eventually { try await engine.note(remote.id)?.body == "from another device" })
            try await engine.edit(remote.id, body: "from another device, edited here")
            #expect(try await eventually { try await client.notes.get(remote.id).body == "from another device, edited here" })
            #expect(try await eventually { try await engine.state.pending == 0 })
            #expect(await following.cancelAndEnds(within: 10), "a cancelled follow() returns")
        }
    }

    @Test("a sync cancelled at any moment, its answers arriving, ends at once; the edit goes once by a later sync")
    func cancelledMidRequest() async throws {
        try await Self.withServer { client, _, folder in
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            let note = try await engine.create("0")
            try await engine.sync()
            let id = try #require(try await engine.notes().first?.id)
            #expect(id != note.id)
            var late = 0
            for round in 1...150 where late == 0 {
                try await engine.edit(id, body: String(round))
                let sync = Task { try await engine.sync() }
                try await Task.sleep(nanoseconds: UInt64.random(in: 0...3_000_000))
                if await !sync.cancelAndEnds(within: 5) { late += 1 }
            }
            try #require(late == 0, "a cancelled sync did not end within 5 s")
            try await engine.sync()
            #expect(try await client.notes.get(id).body == "150")
            #expect(try await engine.state.pending == 0)
        }
    }

    @Test("signed out (401) and too large (413) stop the sync as needing a person; the edits stay queued and readable")
    func needsAPerson() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestApp.with(configure: { $0.auth = .required }) { app in
            let engine = try NotesSyncEngine(client: JotterClient(baseURL: app.baseURL), file: folder.appendingPathComponent("signed-out.sqlite"))
            try await engine.create("written while signed out")
            await #expect(throws: JotterClientError.self) { try await engine.sync() }
            let state = try await engine.state
            #expect(state.needsAttention?.isUnauthorized == true && state.lastError == nil && state.pending == 1)
            #expect(try await engine.notes().map(\.body) == ["written while signed out"])
        }
        try await TestApp.with(configure: { $0.maxBodySize = 1024 }) { app in
            let engine = try NotesSyncEngine(client: JotterClient(baseURL: app.baseURL), file: folder.appendingPathComponent("too-large.sqlite"))
            try await engine.create(String(repeating: "long ", count: 1000))
            await #expect(throws: JotterClientError.self) { try await engine.sync() }
            let state = try await engine.state
            #expect(state.needsAttention?.isTooLarge == true && state.pending == 1)
        }
    }

    /// An app, as its own process, that queues `count` notes in the replica at `file`, then
    /// syncs them through a server at `url` slowly (each request waits 200 ms before it goes)
    /// and never past its 10th request: however late the test, loaded, kills it, it is mid-sync.
    static let killedApp = """
        import Foundation
        import JotterClient
        import Synchronization

        let arguments = CommandLine.arguments
        let requests = Atomic(0)
        var configuration = JotterClient.Configuration()
        configuration.adaptRequest = { request in
            let count = requests.add(1, ordering: .relaxed).newValue
            try await Task.sleep(nanoseconds: count > 10 ? 600_000_000_000 : 200_000_000)
            return request
        }
        let client = JotterClient(baseURL: URL(string: arguments[1])!, configuration: configuration)
        let engine = try NotesSyncEngine(client: client, file: URL(fileURLWithPath: arguments[2]))
        for number in 0..<Int(arguments[3])! { try await engine.create("note \\(number)") }
        print("queued")
        try await engine.sync()
        print("synced")
        """

    @Test("an app killed with SIGKILL mid-sync, reopened from its file, sends every note once: none lost, none twice")
    func killedMidSync() async throws {
        try await Self.withServer { client, app, folder in
            let main = folder.appendingPathComponent("main.swift")
            try Data(Self.killedApp.utf8).write(to: main)
            let executable = folder.appendingPathComponent("killed-app")
            let built = try ReadmeExampleTests.buildApp(main, to: executable)
            try #require(built.status == 0, "\(built.output.prefix(3000))")

            let file = folder.appendingPathComponent("notes.sqlite")
            let count = 30
            let child = try ChildProgram([executable.path, app.baseURL.absoluteString, file.path, String(count)], output: .discard)
            defer { child.stop() }
            // Killed once some notes are on the server, while the rest are being sent.
            var sent = 0
            for _ in 0..<1000 where sent < 3 {
                try await Task.sleep(nanoseconds: 10_000_000)
                sent = try await Self.serverNotes(client).count
            }
            child.signal(SIGKILL)
            let ended = child.waitUntilExit()
            #expect(ended & 0x7f == SIGKILL, "killed, not finished (wait status \(ended))")
            let onServer = try await Self.serverNotes(client).count
            #expect(onServer >= 3 && onServer < count, "killed mid-sync: \(onServer) of \(count) sent")

            let engine = try NotesSyncEngine(client: client, file: file)
            #expect(try await engine.notes().count == count)
            try await engine.sync()
            let bodies = try await Self.serverNotes(client).map(\.body)
            #expect(bodies == (0..<count).map { "note \($0)" }, "every note once, in order")
            #expect(try await engine.state.pending == 0)
            #expect(Set(try await engine.notes().map(\.body)) == Set(bodies))
        }
    }

    @Test("an edit made offline to a note another device moved to the trash is kept as a new note; deleting here moves to the trash")
    func editedWhileTrashedElsewhere() async throws {
        try await Self.withServer { client, _, folder in
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            try await engine.create("shopping: milk")
            try await engine.sync()
            let id = try #require(try await engine.notes().first?.id)
            _ = try await client.notes.delete(id)  // another device, meanwhile
            try await engine.edit(id, body: "shopping: milk, eggs")  // offline here
            try await engine.sync()

            let server = try await Self.serverNotes(client)
            #expect(server.map(\.body) == ["shopping: milk, eggs"], "the edit is not lost")
            #expect(server.first?.id != id, "nor is the trashed note brought back")
            let conflict = try #require(try await engine.state.conflicts.first)
            #expect(conflict.reason == .noteDeleted && conflict.noteID == id && conflict.copyID == server.first?.id)
            #expect(try await client.notes.allTrash().map(\.id) == [id])
            #expect(try await engine.notes().map(\.body) == ["shopping: milk, eggs"])
            try await engine.dismissConflict(conflict.id)
            #expect(try await engine.state.conflicts.isEmpty)

            try await engine.delete(try #require(server.first?.id))
            try await engine.sync()
            #expect(try await Self.serverNotes(client).isEmpty)
            #expect(Set(try await client.notes.allTrash().map(\.id)) == [id, try #require(server.first?.id)])
            #expect(try await engine.notes().isEmpty)
        }
    }

    /// A client of `app` signed in as a new user `name`.
    static func signedIn(_ name: String, on app: TestApp) async throws -> JotterClient {
        try app.addUser(name, password: "\(name)'s password")
        let client = JotterClient(baseURL: app.baseURL)
        try await client.signIn(name: name, password: "\(name)'s password")
        return client
    }

    @Test("a sync that could not connect leaves its edit foldable: the later edit replaces it, and the superseded text never comes back")
    func refusedConnectionKeepsEditFoldable() async throws {
        try await Self.withServer { client, _, folder in
            let file = folder.appendingPathComponent("notes.sqlite")
            let note = try await client.notes.create("Todo\ncall mum\n")
            var engine: NotesSyncEngine? = try NotesSyncEngine(client: client, file: file)
            try await engine!.sync()
            engine = nil
            let offline = try NotesSyncEngine(client: try Self.offlineClient(), file: file)
            try await offline.edit(note.id, body: "Todo\ncall mum at\n")
            await #expect(throws: JotterClientError.self) { try await offline.sync() }
            try await offline.edit(note.id, body: "Todo\ncall mum at six pm sharp\n")
            await #expect(throws: JotterClientError.self) { try await offline.sync() }
            let pending = try await offline.pendingEdits()
            #expect(pending.map(\.body) == ["Todo\ncall mum at six pm sharp\n"], "folded: the first send never left")
            #expect(pending.map(\.attempts) == [0])

            _ = try await client.notes.update(note.id, body: "Todo\ncall dad\n")  // another replica, meanwhile
            let online = try NotesSyncEngine(client: client, file: file)
            try await online.sync()
            let body = try await client.notes.get(note.id).body
            #expect(body.contains("call dad") && body.contains("call mum at six pm sharp"))
            #expect(body.components(separatedBy: "call mum at").count == 2, "the superseded text once, inside the latest: \(body)")
            #expect(try await online.note(note.id)?.body == body)
        }
    }

    @Test("an edit queued behind one the server merged is rebased onto the merged text and sent from its version: nothing comes twice")
    func laterEditRebasedOntoMerge() async throws {
        try await Self.withServer { client, app, folder in
            let file = folder.appendingPathComponent("notes.sqlite")
            let note = try await client.notes.create("Todo\ncall mum\n")
            var engine: NotesSyncEngine? = try NotesSyncEngine(client: client, file: file)
            try await engine!.sync()
            engine = nil
            // The first edit is sent, its answer never comes (the sync is cancelled mid-send): it may be on the server.
            var stuckConfiguration = JotterClient.Configuration()
            stuckConfiguration.adaptRequest = { request in
                if request.httpMethod == "PUT" { try await Task.sleep(nanoseconds: 60_000_000_000) }
                return request
            }
            let stuck = try NotesSyncEngine(client: JotterClient(baseURL: app.baseURL, configuration: stuckConfiguration), file: file)
            try await stuck.edit(note.id, body: "Todo\ncall mum at\n")
            let sync = Task { try await stuck.sync() }
            var sending = false
            for _ in 0..<250 where !sending {
                try await Task.sleep(nanoseconds: 20_000_000)
                sending = try await stuck.pendingEdits().first?.attempts == 1
            }
            try #require(sending)
            sync.cancel()
            _ = await sync.result
            try await stuck.edit(note.id, body: "Todo\ncall mum at six pm sharp\n")
            #expect(try await stuck.pendingEdits().count == 2, "the first may be on the server: the second waits behind it")

            _ = try await client.notes.update(note.id, body: "Todo\ncall dad\n")  // another replica, meanwhile
            let online = try NotesSyncEngine(client: client, file: file)
            try await online.sync()
            let body = try await client.notes.get(note.id).body
            #expect(body.contains("call dad") && body.contains("call mum at six pm sharp"), "\(body)")
            #expect(body.components(separatedBy: "call mum at").count == 2, "the superseded text is not merged in twice: \(body)")
            #expect(try await online.note(note.id)?.body == body)
            #expect(try await online.state.pending == 0)
        }
    }

    @Test("a note the server refuses for good (413) waits in needsAttention, editable and deletable; the other notes sync meanwhile")
    func refusedForGoodDoesNotWedge() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestApp.with(configure: { $0.maxBodySize = 4096 }) { app in
            let client = JotterClient(baseURL: app.baseURL)
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            let huge = try await engine.create(String(repeating: "long ", count: 2000))
            let small = try await engine.create("small")
            let remote = try await client.notes.create("from another device")
            let error = await #expect(throws: JotterClientError.self) { try await engine.sync() }
            #expect(error?.isTooLarge == true)
            var state = try await engine.state
            #expect(state.needsAttention?.isTooLarge == true && state.pending == 1 && state.lastSync != nil)
            #expect(try await Self.serverNotes(client).map(\.body) == ["from another device", "small"], "the small note went")
            #expect(try await engine.note(remote.id)?.body == "from another device", "the pull went")
            let refused = try #require(try await engine.pendingEdits().first)
            #expect(refused.noteID == huge.id && refused.refusedStatus == 413 && refused.attempts == 0)
            #expect(try await engine.note(small.id) == nil, "the small note has the server's id")

            // Shortened, it goes.
            try await engine.edit(huge.id, body: "short now")
            #expect(try await engine.pendingEdits().map(\.refusedStatus) == [nil])
            try await engine.sync()
            state = try await engine.state
            #expect(state.needsAttention == nil && state.pending == 0)
            #expect(Set(try await Self.serverNotes(client).map(\.body)) == ["from another device", "small", "short now"])

            // An update refused for good, then deleted here: the deletion goes.
            let id = try #require(try await engine.notes().first { $0.body == "short now" }?.id)
            try await engine.edit(id, body: String(repeating: "longer ", count: 2000))
            await #expect(throws: JotterClientError.self) { try await engine.sync() }
            try await engine.delete(id)
            try await engine.sync()
            #expect(try await client.notes.allTrash().map(\.id) == [id])

            // A creation refused, then deleted here: nothing is left to send.
            let draft = try await engine.create(String(repeating: "draft ", count: 2000))
            await #expect(throws: JotterClientError.self) { try await engine.sync() }
            try await engine.delete(draft.id)
            #expect(try await engine.state.pending == 0)
            try await engine.sync()
            #expect(try await engine.state.needsAttention == nil)
        }
    }

    @Test("a deletion queued here of a note edited elsewhere meanwhile is refused (If-Match): the note stays with the edit, a conflict says so")
    func queuedDeleteKeepsConcurrentEdit() async throws {
        try await Self.withServer { client, _, folder in
            let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
            try await engine.create("shopping: milk")
            try await engine.create("other")
            try await engine.sync()
            let notes = try await Self.serverNotes(client)
            try await engine.delete(notes[0].id)  // offline here
            try await engine.delete(notes[1].id)
            #expect(try await engine.pendingEdits().map(\.baseVersion) == [1, 1])
            _ = try await client.notes.update(notes[0].id, body: "shopping: milk, eggs")  // another device
            try await engine.sync()

            #expect(try await client.notes.get(notes[0].id).body == "shopping: milk, eggs", "not deleted: the edit is not lost")
            #expect(try await client.notes.allTrash().map(\.id) == [notes[1].id], "the unchanged note was deleted")
            #expect(try await engine.note(notes[0].id)?.body == "shopping: milk, eggs")
            #expect(try await engine.note(notes[0].id)?.hasPendingEdits == false)
            let conflict = try #require(try await engine.state.conflicts.first)
            #expect(conflict.reason == .editedElsewhere && conflict.noteID == notes[0].id && conflict.copyID == notes[0].id)
            #expect(try await engine.state.pending == 0)
        }
    }

    @Test("a replica file is per user: opened by another user it is not synced, and the first user's edits stay queued for them")
    func replicaOfAnotherUser() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestApp.with(configure: { $0.auth = .required }) { app in
            let ann = try await Self.signedIn("ann", on: app)
            let bob = try await Self.signedIn("bob", on: app)
            let file = folder.appendingPathComponent("notes.sqlite")
            var annEngine: NotesSyncEngine? = try NotesSyncEngine(client: ann, file: file)
            try await annEngine!.create("ann's note")
            try await annEngine!.sync()
            try await annEngine!.create("ann's offline note")
            annEngine = nil

            let bobEngine = try NotesSyncEngine(client: bob, file: file)
            let error = await #expect(throws: JotterClientError.self) { try await bobEngine.sync() }
            #expect(error?.isReplicaOfAnotherUser == true)
            #expect(try await bobEngine.state.needsAttention?.isReplicaOfAnotherUser == true)
            #expect(try await Self.serverNotes(bob).isEmpty, "nothing of ann's went into bob's account")
            #expect(try await bobEngine.state.pending == 1)

            let signedOut = try NotesSyncEngine(client: JotterClient(baseURL: app.baseURL), file: file)
            let signedOutError = await #expect(throws: JotterClientError.self) { try await signedOut.sync() }
            #expect(signedOutError?.isUnauthorized == true, "no token: sign in, whoever it was")

            let again = try NotesSyncEngine(client: ann, file: file)
            try await again.sync()
            #expect(try await Self.serverNotes(ann).map(\.body) == ["ann's note", "ann's offline note"])
            #expect(try await again.state.needsAttention == nil)
        }
    }

}
