import Foundation
import JotterServer
import JotterServerTestSupport
import JotterTestSupport
import Testing

/// `GET /notes/changes`, the event stream's first message and `order=updated`, over HTTP on
/// both databases.
@Suite("The change feed over HTTP")
struct FeedRoutesTests {
    static func changes(_ app: TestApp, _ query: String = "") throws -> [String: Any] {
        let response = try app.request("GET", "/notes/changes" + query)
        try #require(response.status == 200, "\(response.text)")
        return try response.json()
    }

    static func ids(_ page: [String: Any]) -> [String] {
        (page["changes"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    static func cursor(_ page: [String: Any]) -> Int64 { (page["cursor"] as? NSNumber)?.int64Value ?? .min }

    @Test("every changed note once, paged by cursor; a walk without since; bad cursors are 400", arguments: ServerDatabase.all)
    func pages(database: ServerDatabase) throws {
        try database.with { app in
            let a = try RevisionRoutesTests.created(app, "a")
            let b = try RevisionRoutesTests.created(app, "b")
            let start = Self.cursor(try Self.changes(app))
            #expect(try app.request("PUT", "/notes/\(a)", body: "body=a2").status == 200)
            #expect(try app.request("DELETE", "/notes/\(b)").status == 200)
            let c = try RevisionRoutesTests.created(app, "c")

            let all = try Self.changes(app)
            #expect(Self.ids(all) == [a, b, c] && all["reset"] as? Bool == true && all["more"] as? Bool == false)
            let entries = try #require(all["changes"] as? [[String: Any]])
            #expect(entries[0]["body"] as? String == "a2" && entries[0]["version"] as? Int == 2 && entries[0]["attachments"] != nil)
            #expect(entries[1]["id"] as? String == b && entries[1]["version"] as? Int == 1 && entries[1]["deleted"] as? Bool == true)
            #expect(entries[1].count == 3)

            var seen: [String] = [], cursor = start, more = true
            while more {
                let page = try Self.changes(app, "?since=\(cursor)&limit=1")
                #expect(page["reset"] as? Bool == false)
                seen += Self.ids(page)
                more = page["more"] as? Bool == true
                #expect(Self.cursor(page) > cursor)
                cursor = Self.cursor(page)
            }
            #expect(seen == [a, b, c] && cursor == Self.cursor(all))

            // A walk a page at a time: negative cursors until its last page.
            let first = try Self.changes(app, "?limit=2")
            #expect(Self.ids(first) == [a, b] && Self.cursor(first) < 0 && first["reset"] as? Bool == true)
            let last = try Self.changes(app, "?limit=2&since=\(Self.cursor(first))")
            #expect(Self.ids(last) == [c] && Self.cursor(last) == Self.cursor(all) && last["reset"] as? Bool == true)
            // A bogus walk cursor restarts the walk — the smallest, which has no negation, too.
            for bogus in ["-9223372036854775808", "-9223372036854775807"] {
                let restarted = try Self.changes(app, "?limit=2&since=\(bogus)")
                #expect(Self.ids(restarted) == [a, b] && restarted["reset"] as? Bool == true, "\(bogus)")
            }

            for bad in ["since=x", "since=1.5", "since=", "limit=0", "limit=-1", "since=99999999999999999999"] {
                let response = try app.request("GET", "/notes/changes?\(bad)")
                #expect(response.status == 400, "\(bad)")
                #expect(response.header("Content-Type")?.contains("application/problem+json") == true, "\(bad)")
            }
            // Every bad parameter in one answer, in the order the route reads them.
            let errors = try app.request("GET", "/notes/changes?since=x&limit=0").json()["errors"] as? [[String: String]]
            #expect(errors?.map { $0["field"] } == ["limit", "since"])
            #expect(errors?.last?["message"] == "must be a cursor: an event id or the cursor of an earlier answer")
        }
    }

    @Test(
        "the stream's first message carries the cursor; a pull then a subscribe from its cursor sees each change once",
        arguments: ServerDatabase.all)
    func pullThenPush(database: ServerDatabase) throws {
        try database.with { app in
            let a = try RevisionRoutesTests.created(app, "before")
            let pulled = try Self.changes(app)
            #expect(Self.ids(pulled) == [a])
            let cursor = Self.cursor(pulled)

            // A fresh stream's first message: the current cursor as its id, before any event.
            let connection = try RawHTTP(port: app.port)
            try connection.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let head = try connection.readStream(until: "retry: 3000\n\n")
            #expect(head.contains("id: \(cursor)\nretry: 3000\n\n"), "\(head)")

            // Changes after the pull: a subscriber from the pull's cursor gets exactly them.
            let b = try RevisionRoutesTests.created(app, "after")
            #expect(try app.request("PUT", "/notes/\(a)", body: "body=edited").status == 200)
            let stream = try EventStreamConnection(port: app.port, lastEventID: cursor)
            let replayed = try stream.next(2, within: 10)
            #expect(replayed.map(\.noteID) == [b, a] && replayed.allSatisfy { $0.id > cursor })
            // … and a pull from that cursor the same notes, its cursor the last event's id.
            let again = try Self.changes(app, "?since=\(cursor)")
            #expect(Self.ids(again) == [b, a] && Self.cursor(again) == replayed[1].id)
            #expect(Self.ids(try Self.changes(app, "?since=\(replayed[1].id)")).isEmpty)
            // A resumed stream's first message carries the cursor it resumes from.
            let resumed = try RawHTTP(port: app.port)
            try resumed.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\nLast-Event-ID: \(replayed[1].id)\r\n\r\n")
            #expect(try resumed.readStream(until: "retry: 3000\n\n").contains("id: \(replayed[1].id)\nretry: 3000\n\n"))
        }
    }

    @Test("a merged write's event carries its base", arguments: ServerDatabase.all)
    func mergedEventCarriesBase(database: ServerDatabase) throws {
        try database.with { app in
            let id = try RevisionRoutesTests.created(app, "a%0Ab%0Ac%0A")
            let connection = try RawHTTP(port: app.port)
            try connection.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
            _ = try connection.readStream(until: "retry: 3000\n\n")
            #expect(try app.request("PUT", "/notes/\(id)", body: "body=A%0Ab%0Ac%0A").status == 200)
            #expect(try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "1")], body: "body=a%0Ab%0AC%0A").status == 200)
            let text = try connection.readStream(until: "\"version\":3}\n\n")
            #expect(text.contains("\"attachments\":[],\"base\":1,\"body\":\"A\\nb\\nC\\n\""), "\(text)")
            #expect(!text.contains("\"base\":1,\"body\":\"A\\nb\\nc\\n\""))
        }
    }

    @Test("order=updated lists the last changed first, paged by its next links", arguments: ServerDatabase.all)
    func orderUpdated(database: ServerDatabase) throws {
        try database.with { app in
            let ids = try (0..<4).map { try RevisionRoutesTests.created(app, "note\($0)") }
            #expect(try app.request("PUT", "/notes/\(ids[1])", body: "body=edited").status == 200)
            var seen: [String] = []
            var next: String? = "/notes?order=updated&limit=3"
            while let target = next {
                let page = try app.request("GET", target)
                #expect(page.status == 200, "\(page.text)")
                seen += (try page.json()["notes"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                next = try page.json()["next"] as? String
                if let next { #expect(next.hasPrefix("/notes?limit=3&order=updated&after=")) }
            }
            #expect(seen == [ids[1], ids[3], ids[2], ids[0]])
            #expect(try app.request("GET", "/notes?order=sideways").status == 400)
        }
    }
}
