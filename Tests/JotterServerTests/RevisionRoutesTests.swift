import Foundation
import JotterServer
import JotterServerTestSupport
import Testing

/// The database a server test runs on: SQLite in its data folder, or the PostgreSQL and bucket
/// of scripts/test-services when they are given.
enum ServerDatabase: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    static var all: [ServerDatabase] { SharedBackend.available ? [.sqlite, .postgres] : [.sqlite] }

    var testDescription: String { rawValue }

    /// Runs `body` with a server on this database (`configure` applied after it is chosen).
    func with(configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestApp) throws -> Void) throws {
        switch self {
        case .sqlite:
            try TestApp.with(configure: configure, body)
        case .postgres:
            let backend = try SharedBackend()
            try TestApp.with(
                configure: {
                    backend.configure(&$0); configure(&$0)
                }, body)
        }
    }
}

/// `GET /notes/{id}/revisions`, `GET /notes/{id}/revisions/{version}` and
/// `POST /notes/{id}/restore` with a version, through HTTP on both databases.
@Suite("Note revisions over HTTP")
struct RevisionRoutesTests {
    static func created(_ app: TestApp, _ body: String, token: String? = nil) throws -> String {
        let response = try app.request("POST", "/notes", token: token, body: "body=\(body)")
        try #require(response.status == 201, "\(response.text)")
        return try #require((try response.json()["note"] as? [String: Any])?["id"] as? String)
    }

    @Test("every change is listed newest first, paged, and each revision shows its body", arguments: ServerDatabase.all)
    func listAndShow(database: ServerDatabase) throws {
        try database.with { app in
            let id = try Self.created(app, "one")
            #expect(try app.request("PUT", "/notes/\(id)", body: "body=two").status == 200)
            #expect(
                try app.request("PATCH", "/notes/\(id)", headers: [("Content-Type", "application/json")], body: #"{"body":"three ✓"}"#).status == 200)

            let all = try app.request("GET", "/notes/\(id)/revisions")
            #expect(all.status == 200, "\(all.text)")
            let revisions = try #require(try all.json()["revisions"] as? [[String: Any]])
            #expect(revisions.map { $0["version"] as? Int } == [3, 2, 1])
            #expect(revisions.map { $0["size"] as? Int } == [9, 3, 3])
            #expect(revisions.allSatisfy { $0["merged"] as? Bool == false && ($0["created_at"] as? String)?.count == 19 && $0["body"] == nil })
            #expect(try all.json()["next"] is NSNull)

            let first = try app.request("GET", "/notes/\(id)/revisions?limit=2")
            #expect((try first.json()["revisions"] as? [[String: Any]])?.map { $0["version"] as? Int } == [3, 2])
            let next = try #require(try first.json()["next"] as? String)
            #expect(next == "/notes/\(id)/revisions?limit=2&after=2")
            let second = try app.request("GET", next)
            #expect((try second.json()["revisions"] as? [[String: Any]])?.map { $0["version"] as? Int } == [1])
            #expect(try second.json()["next"] is NSNull)

            let shown = try app.request("GET", "/notes/\(id)/revisions/3")
            #expect(shown.status == 200)
            let revision = try #require(try shown.json()["revision"] as? [String: Any])
            #expect(revision["body"] as? String == "three ✓")
            #expect(revision["version"] as? Int == 3)
            #expect(revision["merged"] as? Bool == false)
            for missing in ["4", "0", "03", "x"] {
                #expect(try app.request("GET", "/notes/\(id)/revisions/\(missing)").status == 404, "\(missing)")
            }
            #expect(try app.request("GET", "/notes/999999/revisions").status == 404)
            #expect(try app.request("GET", "/notes/\(id)/revisions?limit=0").status == 400)
            #expect(try app.request("GET", "/notes/\(id)/revisions?after=-1").status == 400)
            let errors = try app.request("GET", "/notes/\(id)/revisions?after=-1&limit=1001x").json()["errors"] as? [[String: String]]
            #expect(
                errors == [
                    ["field": "limit", "message": "must be a whole number of at least 1 (over 1000 acts as 1000)"],
                    ["field": "after", "message": "must be a version"],
                ])
        }
    }

    @Test("restore with a form or JSON version: a new version with that body; 404, 412 and 422 otherwise", arguments: ServerDatabase.all)
    func restore(database: ServerDatabase) throws {
        try database.with { app in
            let id = try Self.created(app, "first")
            #expect(try app.request("PUT", "/notes/\(id)", body: "body=second").status == 200)

            let restored = try app.request("POST", "/notes/\(id)/restore", body: "version=1")
            #expect(restored.status == 200, "\(restored.text)")
            #expect(try restored.json()["message"] as? String == "Note Restored")
            let note = try #require(try restored.json()["note"] as? [String: Any])
            #expect(note["body"] as? String == "first")
            #expect(note["version"] as? Int == 3)
            #expect(restored.header("ETag") == "\"3\"")

            let json = try app.request(
                "POST", "/notes/\(id)/restore", headers: [("Content-Type", "application/json"), ("If-Match", "\"3\"")],
                body: #"{"version":2}"#)
            #expect(json.status == 200, "\(json.text)")
            #expect((try json.json()["note"] as? [String: Any])?["body"] as? String == "second")
            #expect(try app.request("GET", "/notes/\(id)").json()["note"].flatMap { ($0 as? [String: Any])?["version"] as? Int } == 4)

            #expect(try app.request("POST", "/notes/\(id)/restore", headers: [("If-Match", "\"3\"")], body: "version=1").status == 412)
            #expect(try app.request("POST", "/notes/\(id)/restore", body: "version=9").status == 404)
            #expect(try app.request("POST", "/notes/999999/restore", body: "version=1").status == 404)
            for bad in ["version=0", "version=x", "version=-1"] {
                #expect(try app.request("POST", "/notes/\(id)/restore", body: bad).status == 422, "\(bad)")
            }
            #expect(
                try app.request(
                    "POST", "/notes/\(id)/restore", headers: [("Content-Type", "application/json")],
                    body: #"{"version":1.5}"#
                ).status == 422)
            #expect(try app.request("POST", "/notes/\(id)/restore", body: "").status == 409, "a live note: restore one of its revisions")
            // Nothing of the refusals changed the note.
            #expect(try app.request("GET", "/notes/\(id)/revisions").json()["revisions"].flatMap { ($0 as? [Any])?.count } == 4)
        }
    }

    @Test("another user's note's revisions are 404, as a note that never existed", arguments: ServerDatabase.all)
    func perOwner(database: ServerDatabase) throws {
        try database.with(configure: { $0.auth = .required }) { app in
            try app.addUser("ann")
            try app.addUser("bob")
            let ann = try app.token("ann"), bob = try app.token("bob")
            let id = try Self.created(app, "ann's", token: ann)
            #expect(try app.request("PUT", "/notes/\(id)", token: ann, body: "body=ann's, edited").status == 200)

            for (method, path, body) in [
                ("GET", "/notes/\(id)/revisions", ""), ("GET", "/notes/\(id)/revisions/1", ""),
                ("POST", "/notes/\(id)/restore", "version=1"),
            ] {
                let response = try app.request(method, path, token: bob, body: body)
                #expect(response.status == 404, "\(method) \(path): \(response.text)")
            }
            #expect(try app.request("GET", "/notes/\(id)/revisions/1", token: ann).status == 200)
            #expect((try app.request("GET", "/notes/\(id)", token: ann).json()["note"] as? [String: Any])?["body"] as? String == "ann's, edited")
        }
    }
}
