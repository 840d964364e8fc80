import Foundation
import Glibc
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// `GET /notes/events`: live changes as server-sent events, replay with `Last-Event-ID`.
@Suite("Note events", .tags(.timing), .serialized)
struct NoteEventsTests {
    struct Event: Equatable {
        var id: Int64
        var name: String
        var noteID: String?
        var body: String?
    }

    /// An open event stream: hands out events in order, across as many reads as it takes.
    final class EventReader {
        let connection: RawHTTP
        private var text = ""
        private var handedOut = 0

        init(_ connection: RawHTTP) { self.connection = connection }

        /// The next `count` events (heartbeat comments and the retry line are skipped).
        func next(_ count: Int) throws -> [Event] {
            while true {
                let events = NoteEventsTests.parse(text)
                if events.count >= handedOut + count {
                    defer { handedOut += count }
                    return Array(events[handedOut..<(handedOut + count)])
                }
                text += try connection.readStream(until: "\n\n")
            }
        }

        /// What has been read so far, raw.
        var received: String { text }

        /// Everything that has arrived so far, raw.
        func raw(until marker: String) throws -> String {
            text += try connection.readStream(until: marker)
            return text
        }
    }

    /// Opens an event stream and waits until the server has it subscribed.
    func subscribe(_ app: TestApp, lastEventID: String? = nil) throws -> EventReader {
        let connection = try RawHTTP(port: app.port)
        var request = "GET /notes/events HTTP/1.1\r\nHost: localhost\r\n"
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        try connection.send(request + "\r\n")
        let reader = EventReader(connection)
        let head = try reader.raw(until: "retry: 3000\n\n")
        #expect(head.contains("HTTP/1.1 200 OK"))
        #expect(head.contains("Content-Type: text/event-stream"))
        return reader
    }

    /// The complete events in `text` (the part after the last blank line may still be arriving).
    /// Lines are split on bytes: Swift counts "\r\n" of the chunk framing as one Character.
    static func parse(_ text: String) -> [Event] {
        text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n\n").dropLast().compactMap { block in
            var id: Int64?, name: String?, data: String?
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = Int64(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            guard let id, let name else { return nil }
            let note = data.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            return Event(id: id, name: name, noteID: note?["id"] as? String, body: note?["body"] as? String)
        }
    }

    func write(_ app: TestApp, _ method: String, _ target: String, _ form: String = "") throws -> String {
        let response = try app.request(method, target, body: form)
        try #require((200...201).contains(response.status), "\(response.text)")
        return try #require((try response.json()["note"] as? [String: Any])?["id"] as? String)
    }

    @Test("event streams per token and per user are capped: the next is 429 problem+json with Retry-After; closing one makes room")
    func streamsPerTokenAndUser() throws {
        try TestApp.with(configure: {
            $0.auth = .required; $0.eventStreamsPerToken = 2; $0.eventStreamsPerUser = 3
        }) { app in
            try app.addUser("ann")
            let first = try app.token("ann"), second = try app.token("ann")
            func open(_ token: String) throws -> RawHTTP {
                let connection = try RawHTTP(port: app.port, timeout: 5)
                try connection.send("GET /notes/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n")
                return connection
            }
            let a = try open(first), b = try open(first)
            _ = try a.readStream(until: "retry: 3000")
            _ = try b.readStream(until: "retry: 3000")
            let refused = try open(first).readResponse()
            #expect(refused.status == 429 && refused.header("Retry-After") != nil, "\(refused.text)")
            #expect(refused.header("Content-Type")?.hasPrefix("application/problem+json") == true)
            #expect(refused.text.contains("this token has 2 event streams open"))
            let c = try open(second)
            _ = try c.readStream(until: "retry: 3000")
            let overUser = try open(second).readResponse()
            #expect(overUser.status == 429 && overUser.text.contains("you have 3 event streams open"), "\(overUser.text)")
            a.reset()
            var reopened = 0
            for _ in 0..<100 where reopened == 0 {
                let again = try open(first)
                if let text = try? again.readStream(until: "\r\n\r\n"), text.hasPrefix("HTTP/1.1 200") { reopened = 1 } else { usleep(20_000) }
            }
            #expect(reopened == 1, "a closed stream makes room")
            _ = (b, c)
        }
    }

    @Test("two subscribers see the same create, update, delete events in order with growing ids")
    func twoSubscribers() throws {
        try TestApp.with { app in
            let first = try subscribe(app), second = try subscribe(app)
            let id = try write(app, "POST", "/notes", "body=hello")
            _ = try write(app, "PUT", "/notes/\(id)", "body=changed")
            _ = try write(app, "DELETE", "/notes/\(id)")
            let seen = try first.next(3)
            #expect(try second.next(3) == seen)
            #expect(seen.map(\.name) == ["note.created", "note.updated", "note.deleted"])
            #expect(seen.map(\.noteID) == [id, id, id])
            #expect(seen.map(\.body) == ["hello", "changed", "changed"])
            #expect(seen.map(\.id) == seen.map(\.id).sorted() && Set(seen.map(\.id)).count == 3)
        }
    }

    @Test("a reconnect with Last-Event-ID gets what it missed first, then live events, nothing twice")
    func replay() throws {
        try TestApp.with { app in
            let live = try subscribe(app)
            _ = try write(app, "POST", "/notes", "body=one")
            let firstEvent = try #require(try live.next(1).first)
            // Missed while away:
            _ = try write(app, "POST", "/notes", "body=two")
            _ = try write(app, "POST", "/notes", "body=three")
            let again = try subscribe(app, lastEventID: String(firstEvent.id))
            _ = try write(app, "POST", "/notes", "body=four")
            let replayed = try again.next(3)
            #expect(replayed.map(\.body) == ["two", "three", "four"])
            #expect(replayed.map(\.id) == [firstEvent.id + 1, firstEvent.id + 2, firstEvent.id + 3])
            // Up to date: nothing is replayed, the next live event comes.
            let current = try subscribe(app, lastEventID: String(firstEvent.id + 3))
            _ = try write(app, "POST", "/notes", "body=five")
            #expect(try current.next(1).map(\.body) == ["five"])
        }
    }

    /// The `data:` JSON of the first `note.deleted` event in `text`.
    static func deletion(in text: String) throws -> [String: Any] {
        let block = try #require(
            text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n\n")
                .first { $0.contains("event: note.deleted") })
        let data = try #require(block.split(separator: "\n").first { $0.hasPrefix("data: ") }).dropFirst(6)
        return try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
    }

    @Test("note.deleted carries deleted_at, when the note was deleted: live, and the same in a replay seconds later")
    func deletionTime() throws {
        try TestApp.with { app in
            let live = try subscribe(app)
            _ = try write(app, "POST", "/notes", "body=doomed")
            Thread.sleep(forTimeInterval: 1.1)
            _ = try write(app, "DELETE", "/notes/1", "")
            _ = try live.next(2)
            let seen = try Self.deletion(in: live.received)
            let deletedAt = try #require(seen["deleted_at"] as? String)
            #expect(deletedAt > (seen["updated_at"] as? String ?? ""), "deleted \(deletedAt), last updated \(seen["updated_at"] ?? "")")
            Thread.sleep(forTimeInterval: 1.1)
            let replay = try subscribe(app, lastEventID: "0")
            _ = try replay.next(2)
            let replayed = try Self.deletion(in: replay.received)
            #expect(replayed["deleted_at"] as? String == deletedAt)
        }
    }

    @Test("an id that can't be replayed gets one reload event", arguments: ["999999", "not-a-number", "-5"])
    func reload(_ lastEventID: String) throws {
        try TestApp.with { app in
            _ = try write(app, "POST", "/notes", "body=x")
            let stream = try subscribe(app, lastEventID: lastEventID)
            let event = try #require(try stream.next(1).first)
            #expect(event.name == "reload")
            // Then live events continue after it.
            _ = try write(app, "POST", "/notes", "body=y")
            let next = try #require(try stream.next(1).first)
            #expect(next.body == "y")
            #expect(next.id > event.id)
        }
    }

    @Test("an id older than the backlog gets reload")
    func backlog() throws {
        try TestApp.with(configure: { $0.eventBacklog = 2 }) { app in
            for n in 1...5 { _ = try write(app, "POST", "/notes", "body=\(n)") }
            let stream = try subscribe(app, lastEventID: "1")
            #expect(try stream.next(1).first?.name == "reload")
            let recent = try subscribe(app, lastEventID: "4")
            _ = try write(app, "POST", "/notes", "body=6")
            #expect(try recent.next(2).map(\.body) == ["5", "6"])
        }
    }

    @Test("event ids survive a restart and keep growing")
    func idsSurviveRestart() throws {
        let first = try TestApp()
        first.removesData = false
        _ = try write(first, "POST", "/notes", "body=before")
        let stream = try subscribe(first)
        _ = try write(first, "POST", "/notes", "body=before2")
        let lastBefore = try #require(try stream.next(1).first?.id)
        first.stop()

        let second = try TestApp(dataDirectory: first.dataDirectory)
        defer { second.stop() }
        let resumed = try subscribe(second, lastEventID: String(lastBefore - 1))
        _ = try write(second, "POST", "/notes", "body=after")
        let seen = try resumed.next(2)
        #expect(seen.map(\.body) == ["before2", "after"])
        #expect(seen[1].id > lastBefore)
    }

    @Test("heartbeat comments keep an idle stream alive")
    func heartbeat() throws {
        try TestApp.with(configure: { $0.eventHeartbeat = 0.2 }) { app in
            let stream = try subscribe(app)
            let start = Date()
            #expect(try stream.raw(until: ":\n\n").contains(":\n\n"))
            #expect(Date().timeIntervalSince(start) < 1.5)
        }
    }
}
