import Foundation
import Testing
import JotterAPI
import JotterServerTestSupport
import JotterTestSupport

/// The Notes contract of API.md, row by row, with form and JSON bodies.
@Suite("Notes")
struct NotesTests {
    /// Sends a request on a new connection and returns the response.
    func send(
        _ app: TestApp, _ method: String, _ target: String, json: String? = nil, form: String? = nil,
        headers: [(String, String)] = []
    ) throws -> WireResponse {
        var headers = headers
        if json != nil { headers.append(("Content-Type", "application/json")) }
        if form != nil { headers.append(("Content-Type", "application/x-www-form-urlencoded")) }
        return try app.request(method, target, headers: headers, body: json ?? form ?? "")
    }

    func note(_ response: WireResponse) throws -> [String: Any] {
        try #require(try response.json()["note"] as? [String: Any])
    }

    func create(_ app: TestApp, _ body: String) throws -> String {
        let response = try send(app, "POST", "/notes", form: "body=\(body)")
        try #require(response.status == 201, "\(response.text)")
        return try #require(try note(response)["id"] as? String)
    }

    // MARK: - The original iPhone client, byte for byte

    @Test("the original iPhone client's requests work unchanged and it reads what it expects")
    func originalClient() throws {
        try TestApp.with { app in
            let connection = try RawHTTP(port: app.port)
            func exchange(_ method: String, _ path: String, body: String?) throws -> [String: Any] {
                var text =
                    "\(method) /\(path) HTTP/1.1\r\nHost: localhost:8888\r\nAccept: */*\r\nAccept-Language: en-us\r\n"
                    + "Accept-Encoding: gzip, deflate\r\nUser-Agent: noteApp/1.0 CFNetwork/672.0.8 Darwin/14.0.0\r\nConnection: keep-alive\r\n"
                if let body { text += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n" }
                try connection.send(text + "\r\n" + (body ?? ""))
                let response = try connection.readResponse()
                // NSJSONSerialization JSONObjectWithData: a dictionary, or the client does nothing.
                return try response.json()
            }
            // The app's model: the list it shows, newest at the top.
            var shown: [[String: Any]] = []
            _ = try exchange("POST", "notes", body: "body=first note&")
            shown = try #require(try exchange("GET", "notes", body: nil)["notes"] as? [[String: Any]])
            #expect(shown.count == 1)
            // Created: the client inserts data["note"] at index 0.
            let created = try #require(try exchange("POST", "notes", body: "body=my new note&")["note"] as? [String: Any])
            shown.insert(created, at: 0)
            // Updated and deleted: found by comparing id strings.
            let firstID = try #require(shown[1]["id"] as? String)
            let updated = try #require(try exchange("POST", "notes/\(firstID)", body: "body=changed&_method=PUT&")["note"] as? [String: Any])
            let index = try #require(shown.firstIndex { ($0["id"] as? String) == (updated["id"] as? String) })
            shown[index] = updated
            let newID = try #require(created["id"] as? String)
            let deleted = try #require(try exchange("POST", "notes/\(newID)", body: "_method=DELETE&")["note"] as? [String: Any])
            shown.removeAll { ($0["id"] as? String) == (deleted["id"] as? String) }
            // Keys in any order.
            let reordered = try #require(try exchange("POST", "notes/\(firstID)", body: "_method=PUT&body=again&")["note"] as? [String: Any])
            shown[shown.firstIndex { ($0["id"] as? String) == firstID }!] = reordered

            // What the client shows equals what the server lists, and it can parse every date.
            let listed = try #require(try exchange("GET", "notes", body: nil)["notes"] as? [[String: Any]])
            #expect(listed.map { $0["id"] as? String } == shown.map { $0["id"] as? String })
            #expect(listed.map { $0["body"] as? String } == ["again"])
            for note in listed {
                let createdAt = try #require(note["created_at"] as? String)
                #expect(Timestamp.parse(createdAt) != nil, "created_at '\(createdAt)' must parse as yyyy-MM-dd H:mm:ss")
                #expect(note["id"] is String)
            }
        }
    }

    // MARK: - Create

    @Test("create with a form or a JSON body: 201, Location, ETag, Note Created", arguments: ["form", "json"])
    func create(_ kind: String) throws {
        try TestApp.with { app in
            let response =
                kind == "form"
                ? try send(app, "POST", "/notes", form: "body=Buy+milk%21&id=99&version=7&created_at=x")
                : try send(app, "POST", "/notes", json: #"{"body":"Buy milk!","id":"99","version":7,"updated_at":"x"}"#)
            #expect(response.status == 201)
            let note = try note(response)
            let id = try #require(note["id"] as? String)
            #expect(id != "99")
            #expect(response.header("Location") == "/notes/\(id)")
            #expect(response.header("ETag") == "\"1\"")
            #expect(try response.json()["message"] as? String == "Note Created")
            #expect(note["body"] as? String == "Buy milk!")
            #expect(note["version"] as? Int == 1)
            #expect((note["attachments"] as? [Any])?.isEmpty == true)
            let created = try #require(note["created_at"] as? String)
            #expect(created.wholeMatch(of: /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/) != nil)
            #expect(note["updated_at"] as? String == created)
        }
    }

    @Test("an empty body is a valid note; a missing or non-string body is 422")
    func createValidation() throws {
        try TestApp.with { app in
            #expect(try send(app, "POST", "/notes", form: "body=").status == 201)
            for (json, form) in [(nil, "other=1"), (#"{}"#, nil), (#"{"body":5}"#, nil), (#"{"body":null}"#, nil), ("", nil)] {
                let response = try send(app, "POST", "/notes", json: json, form: form)
                #expect(response.status == 422, "\(String(describing: json)) \(String(describing: form))")
                let errors = try #require(try response.json()["errors"] as? [[String: String]])
                #expect(errors.first?["field"] == "body")
            }
            #expect(try send(app, "POST", "/notes", json: "[1]").status == 400)
            #expect(try send(app, "POST", "/notes", json: "{").status == 400)
            #expect(try send(app, "POST", "/notes", form: "body=%E2%28").status == 400)
            #expect(try app.request("POST", "/notes", headers: [("Content-Type", "text/plain")], body: "body=x").status == 415)
            // Nothing half-stored by any of those.
            let list = try send(app, "GET", "/notes").json()["notes"] as? [Any]
            #expect(list?.count == 1)
        }
    }

    @Test("a body over --max-body-size is 413 and nothing is stored")
    func tooLarge() throws {
        try TestApp.with(configure: { $0.maxBodySize = 1000 }) { app in
            let response = try send(app, "POST", "/notes", form: "body=" + String(repeating: "a", count: 1000))
            #expect(response.status == 413)
            #expect((try send(app, "GET", "/notes").json()["notes"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("the body limit is on the note: one just under it is taken form-urlencoded and multipart, one over it neither")
    func limitAtTheBoundary() throws {
        let limit = 1 << 20
        try TestApp.with(configure: { $0.maxBodySize = limit }) { app in
            func multipart(_ body: String) throws -> WireResponse {
                let boundary = "jotter-note-boundary"
                let text = "--\(boundary)\r\nContent-Disposition: form-data; name=\"body\"\r\n\r\n\(body)\r\n--\(boundary)--\r\n"
                return try app.request(
                    "POST", "/notes", headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: text)
            }
            // Just under the limit as the form counts it ("body=" and the value).
            let under = String(repeating: "a", count: limit - "body=".utf8.count)
            let form = try send(app, "POST", "/notes", form: "body=" + under)
            #expect(form.status == 201, "\(form.text.prefix(300))")
            let parts = try multipart(under)
            #expect(parts.status == 201, "\(parts.text.prefix(300))")
            #expect((try? note(parts)["body"] as? String)?.utf8.count == under.utf8.count)
            // Over it, in both encodings: 413, nothing stored.
            let over = String(repeating: "b", count: limit + 1)
            #expect(try send(app, "POST", "/notes", form: "body=" + over).status == 413)
            #expect(try multipart(over).status == 413)
            #expect((try send(app, "GET", "/notes").json()["notes"] as? [Any])?.count == 2)
        }
    }

    // MARK: - Show

    @Test("show: ETag, If-None-Match 304, unknown or non-numeric ids 404")
    func show() throws {
        try TestApp.with { app in
            let id = try create(app, "hello")
            let response = try send(app, "GET", "/notes/\(id)")
            #expect(response.status == 200)
            #expect(response.header("ETag") == "\"1\"")
            #expect(try note(response)["body"] as? String == "hello")
            let cached = try send(app, "GET", "/notes/\(id)", headers: [("If-None-Match", #"W/"1""#)])
            #expect(cached.status == 304)
            #expect(cached.body.isEmpty)
            #expect(cached.header("ETag") == "\"1\"")
            #expect(try send(app, "GET", "/notes/\(id)", headers: [("If-None-Match", #""7""#)]).status == 200)
            #expect(try send(app, "HEAD", "/notes/\(id)").header("ETag") == "\"1\"")
            for path in ["/notes/999", "/notes/abc", "/notes/-1", "/notes/+1", "/notes/1.0", "/notes/99999999999999999999"] {
                let missing = try send(app, "GET", path)
                #expect(missing.status == 404, "\(path)")
                #expect(missing.header("Content-Type") == "application/problem+json")
            }
        }
    }

    // MARK: - Update

    static let updateStyles: [(String, String?, String?, [(String, String)])] = [
        ("PUT", "body=changed", nil, []),
        ("PATCH", nil, #"{"body":"changed"}"#, []),
        ("POST", "body=changed&_method=PUT", nil, []),
        ("POST", "_method=patch&body=changed", nil, []),
        ("POST", nil, #"{"_method":"PUT","body":"changed"}"#, []),
        ("POST", "body=changed", nil, [("X-HTTP-Method-Override", "PATCH")]),
    ]

    @Test("update with PUT, PATCH, _method and the override header, form or JSON", arguments: updateStyles)
    func update(_ method: String, _ form: String?, _ json: String?, _ headers: [(String, String)]) throws {
        try TestApp.with { app in
            let id = try create(app, "original")
            let response = try send(app, method, "/notes/\(id)", json: json, form: form, headers: headers)
            #expect(response.status == 200, "\(response.text)")
            #expect(try response.json()["message"] as? String == "Note Updated")
            let note = try note(response)
            #expect(note["body"] as? String == "changed")
            #expect(note["version"] as? Int == 2)
            #expect(response.header("ETag") == "\"2\"")
            #expect(try self.note(send(app, "GET", "/notes/\(id)"))["body"] as? String == "changed")
        }
    }

    @Test("update without a body field: No Body Sent, unchanged")
    func updateWithoutBody() throws {
        try TestApp.with { app in
            let id = try create(app, "keep")
            let response = try send(app, "PUT", "/notes/\(id)", form: "version=9&id=3")
            #expect(response.status == 200)
            #expect(try response.json()["message"] as? String == "No Body Sent")
            #expect(try note(response)["version"] as? Int == 1)
            #expect(try send(app, "PUT", "/notes/\(id)", json: #"{"body":["x"]}"#).status == 422)
        }
    }

    @Test("If-Match: current version writes, stale is 412 with nothing changed, checked first")
    func ifMatch() throws {
        try TestApp.with { app in
            let id = try create(app, "v1")
            #expect(try send(app, "PUT", "/notes/\(id)", form: "body=v2", headers: [("If-Match", #""1""#)]).status == 200)
            let stale = try send(app, "PUT", "/notes/\(id)", form: "body=lost", headers: [("If-Match", #""1""#)])
            #expect(stale.status == 412)
            #expect(stale.header("ETag") == "\"2\"")
            // Checked before the body: a stale precondition with an invalid body is still 412.
            #expect(try send(app, "PUT", "/notes/\(id)", json: #"{"body":5}"#, headers: [("If-Match", #""1""#)]).status == 412)
            #expect(try send(app, "PUT", "/notes/\(id)", form: "body=x", headers: [("If-Match", #"W/"2""#)]).status == 412)
            #expect(try send(app, "PUT", "/notes/\(id)", form: "body=v3", headers: [("If-Match", #""5", "2""#)]).status == 200)
            #expect(try send(app, "PUT", "/notes/\(id)", form: "body=v4", headers: [("If-Match", "*")]).status == 200)
            let current = try note(send(app, "GET", "/notes/\(id)"))
            #expect(current["body"] as? String == "v4")
            #expect(current["version"] as? Int == 4)
            // A missing note is 404 whatever the preconditions.
            #expect(try send(app, "PUT", "/notes/999", form: "body=x", headers: [("If-Match", #""1""#)]).status == 404)
            #expect(try send(app, "DELETE", "/notes/999", headers: [("If-Match", "*")]).status == 404)
        }
    }

    // MARK: - Delete

    @Test("delete answers the note as it was; stale If-Match keeps it", arguments: ["DELETE", "_method", "header"])
    func delete(_ style: String) throws {
        try TestApp.with { app in
            let id = try create(app, "doomed")
            #expect(try send(app, "DELETE", "/notes/\(id)", headers: [("If-Match", #""9""#)]).status == 412)
            let response =
                switch style {
                case "DELETE": try send(app, "DELETE", "/notes/\(id)", headers: [("If-Match", #""1""#)])
                case "_method": try send(app, "POST", "/notes/\(id)", form: "_method=DELETE&")
                default: try send(app, "POST", "/notes/\(id)", headers: [("X-HTTP-Method-Override", "DELETE")])
                }
            #expect(response.status == 200)
            #expect(try response.json()["message"] as? String == "Note Deleted")
            #expect(try note(response)["body"] as? String == "doomed")
            #expect(try send(app, "GET", "/notes/\(id)").status == 404)
            #expect(try send(app, "DELETE", "/notes/\(id)").status == 404)
        }
    }

    // MARK: - List

    @Test("list newest first, asc, limit, after, next until null")
    func listPaging() throws {
        try TestApp.with { app in
            let ids = try (1...5).map { try create(app, "note\($0)") }
            let all = try #require(try send(app, "GET", "/notes").json()["notes"] as? [[String: Any]])
            #expect(all.map { $0["id"] as? String } == ids.reversed())
            #expect(try send(app, "GET", "/notes").json()["next"] is NSNull)

            var seen: [String] = []
            var target: String? = "/notes?limit=2"
            var pages = 0
            while let path = target {
                let page = try send(app, "GET", path).json()
                seen += (page["notes"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                target = page["next"] as? String
                if let target { #expect(target.hasPrefix("/notes?limit=2")) }
                pages += 1
            }
            #expect(seen == ids.reversed())
            #expect(pages == 3)

            let ascending = try send(app, "GET", "/notes?order=asc&limit=3").json()
            #expect((ascending["notes"] as? [[String: Any]])?.map { $0["id"] as? String } == Array(ids.prefix(3)))
            #expect(ascending["next"] as? String == "/notes?limit=3&order=asc&after=\(ids[2])")
            let after = try send(app, "GET", "/notes?after=\(ids[2])").json()["notes"] as? [[String: Any]]
            #expect(after?.map { $0["id"] as? String } == [ids[1], ids[0]])
            #expect(try send(app, "GET", "/notes?limit=5000").status == 200)
        }
    }

    @Test(
        "bad query parameters are 400 listing each",
        arguments: [
            ("limit=-3", ["limit"]), ("limit=0", ["limit"]), ("limit=ten", ["limit"]), ("after=x", ["after"]),
            ("order=sideways", ["order"]), ("limit=-1&after=-1&order=up", ["limit", "after", "order"]),
        ])
    func badQuery(_ query: String, _ fields: [String]) throws {
        try TestApp.with { app in
            let response = try send(app, "GET", "/notes?\(query)")
            #expect(response.status == 400)
            let errors = try #require(try response.json()["errors"] as? [[String: String]])
            #expect(errors.compactMap { $0["field"] } == fields)
        }
    }

    @Test("q searches the text, next repeats q, hostile queries are safe")
    func search() throws {
        try TestApp.with { app in
            for body in ["buy milk", "buy bread", "call mom", "milk and honey"] { _ = try create(app, body.replacingOccurrences(of: " ", with: "+")) }
            let milk = try #require(try send(app, "GET", "/notes?q=milk").json()["notes"] as? [[String: Any]])
            #expect(Set(milk.compactMap { $0["body"] as? String }) == ["buy milk", "milk and honey"])
            let page = try send(app, "GET", "/notes?q=buy&limit=1").json()
            #expect((page["next"] as? String)?.contains("q=buy") == true)
            for hostile in ["%22", "*", "AND", "NEAR(", "milk%22+OR+%22call", "%27%3B+DROP+TABLE+notes%3B--", "%C3%A9t%C3%A9"] {
                #expect(try send(app, "GET", "/notes?q=\(hostile)").status == 200, "\(hostile)")
            }
            #expect((try send(app, "GET", "/notes").json()["notes"] as? [Any])?.count == 4)
        }
    }
}
