import Foundation
import Testing
import JotterServerTestSupport
import JotterAPI
import JotterClient
import JotterHTTP
import Synchronization

/// Counts the `/healthz` requests the server's handlers see.
final class HealthRequests: Middleware {
    let count = Atomic<Int>(0)

    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        if request.path == "/healthz" { count.add(1, ordering: .relaxed) }
        return try next(request, context)
    }
}

/// Every `client.notes` call against the real server.
@Suite("JotterClient: notes")
struct NotesClientTests {
    @Test func hello() async throws {
        try await withClient { client, _ in
            let greeting = try await client.hello(name: "Bob Smith")
            #expect(greeting == "Hello Bob Smith!")
            let empty = try await client.hello(name: "")
            #expect(empty == "Hello !")
            let healthy = try await client.isHealthy()
            #expect(healthy)
            #expect(try await client.health().checks?["database"] == "ok")
        }
    }

    @Test("isHealthy is false, at once, on a server that is not ready; health() throws its 503 with the failed check")
    func notReady() async throws {
        let counter = HealthRequests()
        try await withClient(configure: {
            $0.minimumFreeSpace = .max; $0.middleware = [counter]
        }) { client, _ in
            let healthy = try await client.isHealthy()
            #expect(!healthy)
            #expect(counter.count.load(ordering: .relaxed) == 1, "asked once, not retried")
            await #expect { _ = try await client.health() } throws: { error in
                (error as? JotterClientError)?.status == 503 && (error as? JotterClientError)?.detail?.contains("free_space") == true
            }
        }
    }

    @Test("create, get, update, delete; ETags follow the version")
    func lifecycle() async throws {
        try await withClient { client, _ in
            let created = try await client.notes.create("Buy milk")
            #expect(created.body == "Buy milk")
            #expect(created.version == 1)
            let fetched = try await client.notes.get(created.id)
            #expect(fetched == created)
            #expect(fetched.etag == "\"1\"")
            #expect(try await client.notes.get(created.id, ifNoneMatch: fetched.etag) == nil)

            let updated = try await client.notes.update(created.id, body: "Buy oat milk", ifMatch: fetched.etag)
            #expect(updated.body == "Buy oat milk")
            #expect(updated.version == 2)
            #expect(try await client.notes.get(created.id, ifNoneMatch: fetched.etag) == updated)

            let deleted = try await client.notes.delete(created.id, ifMatch: updated.etag)
            #expect(deleted == updated)
            let error = await #expect(throws: JotterClientError.self) { try await client.notes.get(created.id) }
            #expect(error?.isNotFound == true)
            #expect(error?.detail == "note \(created.id) does not exist")
        }
    }

    @Test("a stale If-Match is a conflict (412) and changes nothing")
    func conflict() async throws {
        try await withClient { client, _ in
            let note = try await client.notes.create("v1")
            _ = try await client.notes.update(note.id, body: "v2 by someone else")
            let error = await #expect(throws: JotterClientError.self) {
                try await client.notes.update(note.id, body: "v2 by me", ifMatch: note.etag)
            }
            #expect(error?.isConflict == true)
            #expect(error?.status == 412)
            #expect(error?.title == "Precondition Failed")
            let stale = await #expect(throws: JotterClientError.self) { try await client.notes.delete(note.id, ifMatch: note.etag) }
            #expect(stale?.isConflict == true)
            #expect(try await client.notes.get(note.id).body == "v2 by someone else")
        }
    }

    @Test("pages follow next; all() walks every page lazily; search and order")
    func listing() async throws {
        try await withClient { client, _ in
            for number in 1...7 { _ = try await client.notes.create("note \(number)\(number % 2 == 0 ? " even" : "")") }
            let first = try await client.notes.list(limit: 3)
            #expect(first.notes.map(\.body) == ["note 7", "note 6 even", "note 5"])
            let second = try #require(try await client.notes.nextPage(after: first))
            #expect(second.notes.map(\.body) == ["note 4 even", "note 3", "note 2 even"])
            var bodies: [String] = []
            for try await note in client.notes.all(pageSize: 2, order: .oldestFirst) { bodies.append(note.body) }
            #expect(bodies == (1...7).map { "note \($0)\($0 % 2 == 0 ? " even" : "")" })
            var found: [String] = []
            for try await note in client.notes.all(query: "even", pageSize: 1) { found.append(note.body) }
            #expect(found == ["note 6 even", "note 4 even", "note 2 even"])
            let after = try await client.notes.list(limit: 2, after: first.notes[2].id)
            #expect(after.notes.map(\.body) == ["note 4 even", "note 3"])
        }
    }

    @Test("a bad query parameter is 400 with the field named")
    func badQuery() async throws {
        try await withClient { client, _ in
            let error = await #expect(throws: JotterClientError.self) { try await client.notes.list(limit: -3) }
            #expect(error?.status == 400)
            #expect(error?.fieldErrors.map(\.field) == ["limit"])
            #expect(error?.problem?.requestID != nil)
        }
    }

    @Test("hostile strings round-trip through form bodies and queries")
    func percentEncoding() async throws {
        let hostile = [
            "a&b=c", "1+1=2", "100% sure", "  spaced  ", "line\nbreak\r\nthere", "tab\there", "😀 émoji 日本",
            "%41%", "?#/;:@$,[]'\"<>\\^`{|}", "\u{1}\u{1F}\u{7F}", "+", "=", "&", "",
        ]
        try await withClient { client, _ in
            for text in hostile {
                let note = try await client.notes.create(text)
                #expect(note.body == text)
                #expect(try await client.notes.update(note.id, body: text + "!").body == text + "!")
                #expect(try await client.hello(name: text) == "Hello \(text)!")
            }
            for word in ["a&b", "1+1", "100%"] {
                _ = try await client.notes.list(query: word)
            }
        }
    }

    @Test("a server that is down is a transport error, at once")
    func serverDown() async throws {
        var configuration = JotterClient.Configuration()
        configuration.retry = .never
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(try TestApp.unusedPort())")!, configuration: configuration)
        let error = await #expect(throws: JotterClientError.self) { try await client.notes.list() }
        #expect(error?.isTransport == true)
        #expect(error?.status == nil)
        #expect(error?.message.contains("cannot connect to 127.0.0.1") == true)
    }
}
