import Foundation
import Synchronization
import Testing
import JotterAPI
@testable import JotterClient
import JotterServerTestSupport
import JotterTestSupport

/// Consumes an event stream on its own task, so tests can wait with a deadline.
final class EventCollector: Sendable {
    final class State: Sendable {
        let events = Mutex<[NoteEvent]>([])
        let failure = Mutex<JotterClientError?>(nil)
    }

    let state = State()
    let task: Task<Void, Never>

    init(_ stream: NoteEvents) {
        let state = self.state
        task = Task {
            do throws(JotterClientError) {
                for try await event in stream { state.events.withLock { $0.append(event) } }
            } catch {
                state.failure.withLock { $0 = error }
            }
        }
    }

    /// The stream's error: typed, a `JotterClientError` without a cast.
    var failure: JotterClientError? { state.failure.withLock { $0 } }

    /// The events once there are `count` of them (or whatever came within `timeout` seconds).
    func wait(for count: Int, timeout: Double = 10) async -> [NoteEvent] {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while state.events.withLock({ $0.count }) < count, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        return state.events.withLock { $0 }
    }

    deinit { task.cancel() }
}

/// Timing-bound (waits of 10 s of wall clock, a reconnect after the server's `retry: 3000`):
/// in the parallel pass, tests that block Swift's cooperative pool (2 threads here) starved the
/// collector's task past its deadline, so this suite runs in the serial pass.
@Suite("JotterClient: note events", .tags(.timing), .serialized)
struct ClientEventTests {
    @Test("created, updated, deleted arrive live, in order, with growing ids")
    func live() async throws {
        try await withClient { client, _ in
            let collector = EventCollector(client.notes.events(lastEventID: 0))
            let note = try await client.notes.create("one")
            let updated = try await client.notes.update(note.id, body: "two")
            let deleted = try await client.notes.delete(note.id)
            let events = await collector.wait(for: 3)
            #expect(events.map(\.change) == [.created(note), .updated(updated), .deleted(deleted)])
            #expect(events.map(\.id) == [1, 2, 3])
        }
    }

    @Test("lastEventID replays what was missed; an id the server can't replay gives .reload")
    func replayAndReload() async throws {
        try await withClient { client, _ in
            for text in ["a", "b", "c"] { _ = try await client.notes.create(text) }
            let replayed = await EventCollector(client.notes.events(lastEventID: 1)).wait(for: 2)
            #expect(replayed.map(\.note?.body) == ["b", "c"])
            let reload = await EventCollector(client.notes.events(lastEventID: 999)).wait(for: 1)
            #expect(reload.map(\.change) == [.reload])
        }
    }

    @Test("after the server restarts, the stream reconnects with Last-Event-ID and misses nothing")
    func reconnect() async throws {
        let first = try TestApp()
        first.removesData = false
        let port = first.port
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        let collector = EventCollector(client.notes.events(lastEventID: 0))
        _ = try await client.notes.create("before")
        #expect(await collector.wait(for: 1).count == 1)
        first.stop()
        // The client waits the server's `retry: 3000` before reconnecting: this note is made meanwhile.
        let second = try TestApp(dataDirectory: first.dataDirectory) { $0.port = port }
        defer { second.stop() }
        _ = try await client.notes.create("while away")
        let events = await collector.wait(for: 2, timeout: 15)
        #expect(events.map(\.note?.body) == ["before", "while away"])
        #expect(events.map(\.id) == [1, 2])
        #expect(collector.failure == nil)
    }

    @Test("a server that is down ends the stream with a transport error")
    func down() async throws {
        var configuration = JotterClient.Configuration()
        configuration.retry = .never
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(try TestApp.unusedPort())")!, configuration: configuration)
        // Typed: the `catch` has a `JotterClientError` without a cast (this does not compile
        // against a stream of `any Error`).
        var failure: JotterClientError?
        do throws(JotterClientError) {
            for try await _ in client.notes.events() {}
        } catch {
            failure = error
        }
        #expect(failure?.isTransport == true)
    }

    @Test("stopping the iteration ends the request")
    func cancel() async throws {
        try await withClient { client, app in
            let task = Task { for try await _ in client.notes.events() {} }
            for _ in 0..<1000 where client.tasks.running + client.sockets.value == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(client.tasks.running + client.sockets.value == 1)
            task.cancel()
            // Cancelled, the iteration ends without an error.
            await #expect(throws: Never.self) { try await task.value }
            for _ in 0..<200 where client.tasks.running + client.sockets.value > 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(client.tasks.running == 0)
            #expect(client.sockets.value == 0)
        }
    }

    @Test("the parser: line endings, chunk splits, comments, multi-line data, retry, BOM")
    func parser() {
        var parser = EventStreamParser()
        let text =
            "\u{FEFF}: heartbeat\r\nretry: 2500\r\n\r\nid: 7\revent: note.created\rdata: {\"a\":\r\ndata:1}\n\nid: 8\ndata:x\n\ndata: no id\n\n"
        var events: [EventStreamParser.Event] = []
        for byte in Array(text.utf8) { events += parser.feed([byte]) }  // one byte at a time
        #expect(
            events == [
                .init(id: "7", type: "note.created", data: "{\"a\":\n1}"),
                .init(id: "8", type: "message", data: "x"),
                .init(id: "8", type: "message", data: "no id"),
            ])
        #expect(parser.retry == 2500)
        #expect(parser.feed(Array("data: unfinished\n".utf8)).isEmpty)
    }
}
