import Foundation
import Testing
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// Two users on one server: for every route of the table that takes an id, and for lists,
/// search, counts, events and replay, user B never sees, changes or learns of user A's data.
@Suite("Cross-user isolation, driven by the route table")
struct CrossUserTests {
    /// Two users with tokens; A has a note (with an attachment, searchable by `word`), a loose
    /// upload and a token.
    struct World {
        let app: TestApp
        let a: String, b: String
        let note: String, attachment: String, upload: String, tokenID: String
        static let word = "zanzibarwordofann"

        init(_ app: TestApp) throws {
            self.app = app
            try app.addUser("ann")
            try app.addUser("bob")
            a = try app.token("ann")
            b = try app.token("bob")
            note = try #require(
                (try app.request("POST", "/notes", token: a, body: "body=\(Self.word)").json()["note"] as? [String: Any])?["id"] as? String)
            attachment = try Self.upload(app, token: a, note: note)
            upload = try Self.upload(app, token: a, note: nil)
            tokenID = try #require((try app.request("GET", "/auth/tokens", token: a).json()["tokens"] as? [[String: Any]])?.first?["id"] as? String)
        }

        static func upload(_ app: TestApp, token: String, note: String?) throws -> String {
            var parts = MultipartBuilder()
            if let note { parts.field("note_id", note) }
            parts.file("file", filename: "ann.txt", contentType: "text/plain", body: Array("ann's file".utf8))
            let response = try app.request(
                "POST", "/uploads", token: token, headers: [("Content-Type", parts.contentType)],
                body: String(decoding: parts.finished(), as: UTF8.self))
            try #require(response.status == 201, "\(response.text)")
            return try #require((try response.json()["uploads"] as? [[String: Any]])?.first?["id"] as? String)
        }

        /// What A sees of their own data, to compare before and after B's attempts.
        func snapshot() throws -> String {
            try app.request("GET", "/notes", token: a).text + app.request("GET", "/uploads", token: a).text
                + app.request("GET", "/uploads/\(upload)/content", token: a).text
        }
    }

    /// The id of A's that a route's `:id` takes, by the route's path; nil for public routes
    /// whose parameter is not A's data. A new route with a parameter fails here until the
    /// suite knows what to put in it.
    static func idFor(_ path: String, _ world: World) -> String?? {
        if path.hasPrefix("/notes/") { return world.note }
        if path.hasPrefix("/uploads/") { return world.upload }
        if path.hasPrefix("/auth/tokens/") { return world.tokenID }
        if path == "/assets/:name" { return .some(nil) }
        if path.hasPrefix("/admin/") || path.hasPrefix("/users/") { return .some(nil) }  // administrators only: see adminOnly()
        return nil
    }

    @Test("every route with an id: B gets exactly what a never-used id gets (404), and A's data is unchanged")
    func everyRouteWithAnID() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            let world = try World(app)
            let before = try world.snapshot()
            var tried = 0
            for route in app.app.routes where route.path.contains(":") {
                guard let id = Self.idFor(route.path, world) else {
                    Issue.record("the suite does not know what \(route.method) \(route.path) takes"); continue
                }
                guard let id else { continue }
                let owned = route.path.replacingOccurrences(of: ":id", with: id)
                let neverID = route.path.hasPrefix("/uploads/") ? String(repeating: "0", count: 24) : "999999"
                let never = route.path.replacingOccurrences(of: ":id", with: neverID)
                let body = ["PUT", "PATCH", "POST"].contains(route.method) ? "body=bob%20was%20here" : ""
                let onA = try app.request(route.method, owned, token: world.b, body: body)
                let onNothing = try app.request(route.method, never, token: world.b, body: body)
                #expect(onA.status == 404, "\(route.method) \(owned): \(onA.status) \(onA.text)")
                #expect(onA.status == onNothing.status, "\(route.method) \(route.path)")
                // The same words as for an id that never existed (the id itself aside).
                let detail = { (response: WireResponse, id: String) in
                    ((try? response.json()["detail"] as? String) ?? "").replacingOccurrences(of: id, with: "ID")
                }
                #expect(detail(onA, id) == detail(onNothing, neverID), "\(route.method) \(route.path)")
                tried += 1
            }
            #expect(tried >= 8)
            // The method override, in a header and in a body field, reaches the same 404.
            #expect(try app.request("POST", "/notes/\(world.note)", token: world.b, headers: [("X-HTTP-Method-Override", "DELETE")]).status == 404)
            #expect(try app.request("POST", "/notes/\(world.note)", token: world.b, body: "_method=PUT&body=bob").status == 404)
            // Attaching to A's note.
            var parts = MultipartBuilder()
            parts.field("note_id", world.note)
            parts.file("file", filename: "bob.txt", contentType: "text/plain", body: Array("bob".utf8))
            let attach = try app.request(
                "POST", "/uploads", token: world.b, headers: [("Content-Type", parts.contentType)],
                body: String(decoding: parts.finished(), as: UTF8.self))
            #expect(attach.status == 404)
            #expect(try world.snapshot() == before)
            #expect(try app.request("GET", "/notes/\(world.note)", token: world.a).status == 200)
            #expect(try app.request("GET", "/auth/me", token: world.a).status == 200)  // A's token was not revoked by B
        }
    }

    @Test("administrators only: /admin/backups is 403 for another user, 401 without credentials")
    func adminOnly() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            let world = try World(app)
            #expect(try app.request("POST", "/admin/backups", token: world.b).status == 403)
            #expect(try app.request("DELETE", "/admin/backups/\(String(repeating: "0", count: 24))", token: world.b).status == 403)
            #expect(try app.request("POST", "/admin/backups").status == 401)
            for (method, target) in [("GET", "/users"), ("POST", "/users"), ("PUT", "/users/ann/password"), ("DELETE", "/users/ann")] {
                #expect(
                    try app.request(method, target, token: world.b, body: method == "GET" || method == "DELETE" ? "" : "password=xxxxxxxxxx").status
                        == 403,
                    "\(method) \(target)")
            }
            #expect(try app.request("GET", "/auth/me", token: world.a).status == 200)  // ann is still there
        }
    }

    @Test("lists, search, uploads and tokens: B's answers name nothing of A's")
    func lists() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            let world = try World(app)
            _ = try app.request("POST", "/notes", token: world.b, body: "body=bob%20note")
            for target in [
                "/notes", "/notes?limit=1000", "/notes?order=asc", "/notes?q=\(World.word)", "/notes?q=bob", "/uploads", "/auth/tokens",
                "/notes?after=\(Int(world.note)! + 1)",
            ] {
                let response = try app.request("GET", target, token: world.b)
                #expect(response.status == 200, "\(target)")
                for secret in [World.word, world.attachment, world.upload, "ann"] {
                    #expect(!response.text.contains(secret), "\(target) shows \(secret)")
                }
            }
            #expect((try app.request("GET", "/notes?q=\(World.word)", token: world.b).json()["notes"] as? [Any])?.isEmpty == true)
            #expect((try app.request("GET", "/notes?q=\(World.word)", token: world.a).json()["notes"] as? [Any])?.count == 1)
        }
    }

    @Test("events: B's live stream and B's replay from 0 carry none of A's changes")
    func events() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            let world = try World(app)
            func open(_ token: String, lastEventID: String? = nil) throws -> RawHTTP {
                let connection = try RawHTTP(port: app.port, timeout: 5)
                try connection.send(
                    "GET /notes/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n"
                        + (lastEventID.map { "Last-Event-ID: \($0)\r\n" } ?? "") + "\r\n")
                return connection
            }
            // Replay from 0: A's three events (create, two attachments' touches) are not B's.
            let replayB = try open(world.b, lastEventID: "0")
            let replayA = try open(world.a, lastEventID: "0")
            let replayedA = try replayA.readStream(until: "note.updated")
            #expect(replayedA.contains(World.word))
            let live = try open(world.b)
            _ = try live.readStream(until: "retry: 3000\n\n")
            _ = try app.request("PUT", "/notes/\(world.note)", token: world.a, body: "body=\(World.word)%20again")
            _ = try app.request("DELETE", "/notes/\(world.note)", token: world.a)
            // B's own change arrives on B's streams; A's never do.
            _ = try app.request("POST", "/notes", token: world.b, body: "body=bob%20marker")
            let seenLive = try live.readStream(until: "bob marker")
            let seenReplay = try replayB.readStream(until: "bob marker")
            for text in [seenLive, seenReplay] {
                #expect(!text.contains(World.word))
                #expect(!text.contains("\"id\":\"\(world.note)\""))
                #expect(text.components(separatedBy: "event: note.").count == 2, "\(text)")  // only B's one event
            }
        }
    }
}
