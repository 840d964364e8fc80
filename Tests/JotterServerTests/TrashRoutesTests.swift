import Foundation
import JotterServerTestSupport
import JotterTestSupport
import Testing

/// The trash over HTTP on both databases: `DELETE /notes/{id}` into it, `GET /notes/trash`,
/// `POST /notes/{id}/restore` without a version, `DELETE /notes/trash/{id}`, and the `409` of
/// an edit made from a version of a deleted note.
@Suite("The trash over HTTP")
struct TrashRoutesTests {
    /// A note with one attachment (`bytes`); its id and the upload's.
    static func noteWithFile(_ app: TestApp, _ body: String, bytes: String, token: String? = nil) throws -> (note: String, upload: String) {
        let note = try RevisionRoutesTests.created(app, body, token: token)
        var parts = MultipartBuilder()
        parts.field("note_id", note)
        parts.file("file", filename: "a.txt", contentType: "text/plain", body: Array(bytes.utf8))
        var headers = [("Content-Type", parts.contentType)]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        let response = try RawHTTP(port: app.port).request("POST", "/uploads", headers: headers, body: parts.finished(), close: true)
        try #require(response.status == 201, "\(response.text)")
        let upload = try #require((try response.json()["uploads"] as? [[String: Any]])?.first?["id"] as? String)
        return (note, upload)
    }

    static func trash(_ app: TestApp, _ target: String = "/notes/trash", token: String? = nil) throws -> (notes: [[String: Any]], next: Any?) {
        let response = try app.request("GET", target, token: token)
        try #require(response.status == 200, "\(response.text)")
        return (try #require(try response.json()["notes"] as? [[String: Any]]), try response.json()["next"] ?? nil)
    }

    @Test(
        "delete: listed in the trash with deleted_at, gone from /notes and its path; restore brings back id, body, attachments",
        arguments: ServerDatabase.all)
    func deleteAndRestore(database: ServerDatabase) throws {
        try database.with { app in
            let (id, upload) = try Self.noteWithFile(app, "kept ✓", bytes: "file bytes")
            let other = try RevisionRoutesTests.created(app, "other")
            let deleted = try app.request("DELETE", "/notes/\(id)")
            #expect(deleted.status == 200, "\(deleted.text)")
            #expect(try deleted.json()["message"] as? String == "Note Deleted")

            #expect(try app.request("GET", "/notes/\(id)").status == 404)
            let listed = try #require(try app.request("GET", "/notes").json()["notes"] as? [[String: Any]])
            #expect(listed.compactMap { $0["id"] as? String } == [other])
            let (trash, next) = try Self.trash(app)
            #expect(next is NSNull)
            #expect(trash.count == 1)
            let entry = try #require(trash.first)
            #expect(entry["id"] as? String == id)
            #expect(entry["body"] as? String == "kept ✓")
            #expect(entry["version"] as? Int == 2)
            #expect((entry["deleted_at"] as? String)?.count == 19)
            #expect((entry["attachments"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [upload])
            // The attachment's bytes are still served while the note is in the trash.
            #expect(try app.request("GET", "/uploads/\(upload)/content").text == "file bytes")
            // Its history stays with it in the trash, under /notes/trash/{id}; at the note's own
            // path it is gone like the note, and the 404 says where it went.
            let firstPage = try app.request("GET", "/notes/trash/\(id)/revisions?limit=1")
            #expect(firstPage.status == 200, "\(firstPage.text)")
            #expect((try firstPage.json()["revisions"] as? [[String: Any]])?.map { $0["version"] as? Int } == [2])
            #expect(try firstPage.json()["next"] as? String == "/notes/trash/\(id)/revisions?limit=1&after=2")
            let older = try app.request("GET", "/notes/trash/\(id)/revisions?limit=1&after=2").json()["revisions"] as? [[String: Any]]
            #expect(older?.map { $0["version"] as? Int } == [1])
            let first = try app.request("GET", "/notes/trash/\(id)/revisions/1")
            #expect((try first.json()["revision"] as? [String: Any])?["body"] as? String == "kept ✓", "\(first.text)")
            for live in ["/notes/\(id)/revisions", "/notes/\(id)/revisions/1"] {
                let gone = try app.request("GET", live)
                #expect(gone.status == 404, "\(live): \(gone.text)")
                #expect(gone.text.contains("/notes/trash/\(id)/revisions"), "\(live): \(gone.text)")
            }
            #expect(try app.request("GET", "/notes/trash/\(other)/revisions").status == 404)  // live, not in the trash
            #expect(try app.request("GET", "/notes/trash/\(other)/revisions/1").status == 404)
            #expect(try app.request("GET", "/notes/trash/\(id)/revisions/9").status == 404)

            // A restore of a live note needs a version; of a note in the trash, none.
            let live = try app.request("POST", "/notes/\(other)/restore")
            #expect(live.status == 409)
            #expect(live.text.contains("not in the trash"))
            #expect(try app.request("POST", "/notes/999999/restore").status == 404)
            #expect(try app.request("POST", "/notes/\(id)/restore", body: "version=1").status == 404)
            let restored = try app.request("POST", "/notes/\(id)/restore")
            #expect(restored.status == 200, "\(restored.text)")
            #expect(try restored.json()["message"] as? String == "Note Restored")
            let note = try #require(try restored.json()["note"] as? [String: Any])
            #expect(note["id"] as? String == id)
            #expect(note["body"] as? String == "kept ✓")
            #expect(note["version"] as? Int == 3)
            #expect((note["attachments"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [upload])
            #expect(restored.header("ETag") == "\"3\"")
            #expect(try app.request("GET", "/notes/\(id)").status == 200)
            #expect(try app.request("GET", "/uploads/\(upload)/content").text == "file bytes")
            #expect(try Self.trash(app).notes.isEmpty)
            #expect(try app.request("POST", "/notes/\(id)/restore").status == 409)
            // Its history is whole, the restore its newest version.
            let revisions = try #require(try app.request("GET", "/notes/\(id)/revisions").json()["revisions"] as? [[String: Any]])
            #expect(revisions.map { $0["version"] as? Int } == [3, 2, 1])
            #expect(try app.request("GET", "/notes/trash/\(id)/revisions").status == 404)
        }
    }

    @Test(
        "the DELETE answer and the note.deleted event show the attachments the note keeps in the trash",
        arguments: ServerDatabase.all)
    func deletionShowsAttachments(database: ServerDatabase) throws {
        try database.with { app in
            let events = NoteEventsTests()
            let stream = try events.subscribe(app)
            let (id, upload) = try Self.noteWithFile(app, "with a file", bytes: "kept bytes")
            let bare = try RevisionRoutesTests.created(app, "no file")
            let deleted = try app.request("DELETE", "/notes/\(id)")
            try #require(deleted.status == 200, "\(deleted.text)")
            let note = try #require(try deleted.json()["note"] as? [String: Any])
            #expect(note["version"] as? Int == 2)
            #expect((note["attachments"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [upload])
            let withoutFile = try #require(try app.request("DELETE", "/notes/\(bare)").json()["note"] as? [String: Any])
            #expect((withoutFile["attachments"] as? [Any])?.isEmpty == true)

            // Created twice, updated by the upload, deleted twice.
            let seen = try stream.next(5)
            #expect(seen.map(\.name) == ["note.created", "note.updated", "note.created", "note.deleted", "note.deleted"])
            let event = try NoteEventsTests.deletion(in: stream.received)
            #expect(event["id"] as? String == id)
            #expect((event["attachments"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [upload])
            #expect((event["deleted_at"] as? String)?.count == 19)
            // A replay shows them too while the note is in the trash.
            let replay = try events.subscribe(app, lastEventID: "0")
            _ = try replay.next(5)
            let replayed = try NoteEventsTests.deletion(in: replay.received)
            #expect((replayed["attachments"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [upload])
        }
    }

    @Test(
        "an edit made from a version of a deleted note is 409 note-deleted; without Base-Version 404; nothing comes back",
        arguments: ServerDatabase.all)
    func editOfADeletedNote(database: ServerDatabase) throws {
        try database.with { app in
            let id = try RevisionRoutesTests.created(app, "draft")
            #expect(try app.request("DELETE", "/notes/\(id)").status == 200)

            let json = [("Content-Type", "application/json")]
            let edits: [(String, String, [(String, String)], String)] = [
                ("PUT", "/notes/\(id)", [("Base-Version", "1")], "body=offline+edit"),
                ("PATCH", "/notes/\(id)", json, #"{"body":"offline edit","base_version":1}"#),
                ("POST", "/notes/\(id)", [], "_method=PUT&body=offline+edit&base_version=1"),
            ]
            for (method, path, headers, body) in edits {
                let response = try app.request(method, path, headers: headers, body: body)
                #expect(response.status == 409, "\(method) \(body): \(response.text)")
                #expect(response.header("Content-Type") == "application/problem+json")
                let problem = try response.json()
                #expect(problem["type"] as? String == "/problems/note-deleted")
                // The note's version as deleted, as in every 409 of a write (the OpenAPI document says so).
                #expect(response.header("ETag") == "\"1\"")
                #expect((problem["detail"] as? String)?.contains("POST /notes/\(id)/restore") == true)
                #expect((problem["deleted_at"] as? String)?.count == 19)
                #expect((problem["note"] as? [String: Any])?["body"] as? String == "draft")
            }
            // The original clients: no base version, as before the trash.
            #expect(try app.request("PUT", "/notes/\(id)", body: "body=edit").status == 404)
            #expect(try app.request("POST", "/notes/\(id)", body: "_method=PUT&body=edit").status == 404)
            #expect(try app.request("DELETE", "/notes/\(id)").status == 404)
            #expect(try app.request("GET", "/notes/\(id)").status == 404)
            // Nothing was resurrected or changed.
            let (trash, _) = try Self.trash(app)
            #expect(trash.compactMap { $0["body"] as? String } == ["draft"])
            // A note that never was: 404 even with a base version.
            #expect(try app.request("PUT", "/notes/999999", headers: [("Base-Version", "1")], body: "body=x").status == 404)
        }
    }

    @Test("emptying: DELETE /notes/trash/{id} removes the note, its revisions and its attachment's bytes", arguments: ServerDatabase.all)
    func purge(database: ServerDatabase) throws {
        try database.with { app in
            let (id, upload) = try Self.noteWithFile(app, "gone", bytes: "bytes")
            #expect(try app.request("DELETE", "/notes/trash/\(id)").status == 404)  // not in the trash yet
            #expect(try app.request("DELETE", "/notes/\(id)").status == 200)
            #expect(try app.request("GET", "/uploads/\(upload)/content").text == "bytes")
            let purged = try app.request("DELETE", "/notes/trash/\(id)")
            #expect(purged.status == 204, "\(purged.text)")
            #expect(try app.request("GET", "/uploads/\(upload)").status == 404)
            #expect(try app.request("GET", "/uploads/\(upload)/content").status == 404)
            #expect(try Self.trash(app).notes.isEmpty)
            #expect(try app.request("POST", "/notes/\(id)/restore").status == 404)
            #expect(try app.request("GET", "/notes/trash/\(id)/revisions").status == 404)
            #expect(try app.request("GET", "/notes/trash/\(id)/revisions/1").status == 404)
            #expect(try app.request("DELETE", "/notes/trash/\(id)").status == 404)
            #expect(try app.request("DELETE", "/notes/trash/x").status == 404)
        }
    }

    @Test(
        "DELETE /notes/trash/{id} with If-Match removes only the version listed: one restored and deleted again since is 412 and stays",
        arguments: ServerDatabase.all)
    func conditionalPurge(database: ServerDatabase) throws {
        try database.with { app in
            let id = try RevisionRoutesTests.created(app, "one")
            #expect(try app.request("DELETE", "/notes/\(id)").status == 200)
            let listed = try #require(try Self.trash(app).notes.first { $0["id"] as? String == id })
            #expect(listed["version"] as? Int == 1)
            // Another device restores it (version 2) and deletes it again.
            #expect(try app.request("POST", "/notes/\(id)/restore").status == 200)
            #expect(try app.request("DELETE", "/notes/\(id)").status == 200)
            let stale = try app.request("DELETE", "/notes/trash/\(id)", headers: [("If-Match", "\"1\"")])
            #expect(stale.status == 412, "\(stale.text)")
            #expect(stale.header("ETag") == "\"2\"")
            #expect(stale.header("Content-Type") == "application/problem+json")
            #expect(try Self.trash(app).notes.contains { $0["id"] as? String == id && $0["version"] as? Int == 2 }, "it stays")
            #expect(try app.request("DELETE", "/notes/trash/\(id)", headers: [("If-Match", "2")]).status == 400)
            #expect(try app.request("DELETE", "/notes/trash/\(id)", headers: [("If-None-Match", "\"2\"")]).status == 412)
            #expect(try app.request("DELETE", "/notes/trash/\(id)", headers: [("If-Match", "\"2\"")]).status == 204)
            #expect(try Self.trash(app).notes.allSatisfy { $0["id"] as? String != id })
            #expect(try app.request("DELETE", "/notes/trash/\(id)", headers: [("If-Match", "\"2\"")]).status == 404)
            #expect(try app.request("DELETE", "/notes/trash/\(id)", headers: [("If-Match", "*")]).status == 404)
        }
    }

    @Test("the trash is paged, newest deletion first; a bad limit or after is 400")
    func paging() throws {
        try TestApp.with { app in
            var ids: [String] = []
            for index in 0..<5 {
                let id = try RevisionRoutesTests.created(app, "note\(index)")
                #expect(try app.request("DELETE", "/notes/\(id)").status == 200)
                ids.append(id)
            }
            var seen: [String] = []
            var target: String? = "/notes/trash?limit=2"
            while let next = target {
                let page = try Self.trash(app, next)
                #expect(page.notes.count <= 2)
                seen += page.notes.compactMap { $0["id"] as? String }
                target = page.next as? String
            }
            #expect(seen == ids.reversed())
            #expect(try app.request("GET", "/notes/trash?limit=0").status == 400)
            #expect(try app.request("GET", "/notes/trash?after=x").status == 400)
            let errors = try app.request("GET", "/notes/trash?after=x&limit=0&after=y").json()["errors"] as? [[String: String]]
            #expect(
                errors == [
                    ["field": "limit", "message": "must be a whole number of at least 1 (over 1000 acts as 1000)"],
                    ["field": "after", "message": "must be a note id"],
                ])
        }
    }

    @Test(
        "an attachment of a note in the trash stays with it: moving or deleting it is 409 note-deleted; after a restore both work",
        arguments: ServerDatabase.all)
    func attachmentsStayWithATrashedNote(database: ServerDatabase) throws {
        try database.with { app in
            let (id, upload) = try Self.noteWithFile(app, "with a file", bytes: "kept bytes")
            let other = try RevisionRoutesTests.created(app, "another note")
            #expect(try app.request("DELETE", "/notes/\(id)").status == 200)
            for (method, body) in [("PATCH", "note_id=\(other)"), ("PATCH", "note_id="), ("DELETE", "")] {
                let answer = try app.request(method, "/uploads/\(upload)", body: body)
                #expect(answer.status == 409, "\(method) \(body): \(answer.text)")
                #expect(try answer.json()["type"] as? String == "/problems/note-deleted")
                #expect((try answer.json()["detail"] as? String)?.contains("note \(id)") == true)
            }
            // Nothing changed: the trashed note keeps its attachment and version, the file its bytes.
            let trashed = try #require(try Self.trash(app).notes.first { $0["id"] as? String == id })
            #expect((trashed["attachments"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [upload])
            #expect(try app.request("GET", "/uploads/\(upload)/content").text == "kept bytes")
            #expect(try app.request("POST", "/notes/\(id)/restore").status == 200)
            #expect(try app.request("PATCH", "/uploads/\(upload)", body: "note_id=\(other)").status == 200)
            #expect(try app.request("DELETE", "/uploads/\(upload)").status == 200)
        }
    }

    @Test(
        "a page's cursor goes on after a note that left the trash (restored or removed for good); one never in it is 400",
        arguments: ServerDatabase.all)
    func cursorOfANoteThatLeft(database: ServerDatabase) throws {
        try database.with { app in
            var ids: [String] = []
            for index in 0..<5 {
                let id = try RevisionRoutesTests.created(app, "note\(index)")
                #expect(try app.request("DELETE", "/notes/\(id)").status == 200)
                ids.append(id)
            }
            let newestFirst = Array(ids.reversed())
            // A page ends on the note restored next, then on the one removed for good next.
            let first = try Self.trash(app, "/notes/trash?limit=1")
            #expect(first.notes.compactMap { $0["id"] as? String } == [newestFirst[0]])
            #expect(try app.request("POST", "/notes/\(newestFirst[0])/restore").status == 200)
            let second = try Self.trash(app, try #require(first.next as? String))
            #expect(second.notes.compactMap { $0["id"] as? String } == [newestFirst[1]])
            #expect(try app.request("DELETE", "/notes/trash/\(newestFirst[1])").status == 204)
            let rest = try Self.trash(app, try #require(second.next as? String).replacingOccurrences(of: "limit=1", with: "limit=10"))
            #expect(rest.notes.compactMap { $0["id"] as? String } == Array(newestFirst[2...]))
            // A live note's id, or one that never was, names no place in the trash.
            let live = try RevisionRoutesTests.created(app, "never deleted")
            for after in [live, "999999"] {
                let answer = try app.request("GET", "/notes/trash?after=\(after)")
                #expect(answer.status == 400)
                #expect((try answer.json()["errors"] as? [[String: String]])?.first?["field"] == "after")
            }
        }
    }

    @Test("another user's trash is invisible: listing, restore and purge are 404", arguments: ServerDatabase.all)
    func perOwner(database: ServerDatabase) throws {
        try database.with(configure: { $0.auth = .required }) { app in
            try app.addUser("ann")
            try app.addUser("bob")
            let ann = try app.token("ann"), bob = try app.token("bob")
            let (id, upload) = try Self.noteWithFile(app, "ann's", bytes: "ann's bytes", token: ann)
            #expect(try app.request("DELETE", "/notes/\(id)", token: ann).status == 200)

            #expect(try Self.trash(app, token: bob).notes.isEmpty)
            #expect(try app.request("POST", "/notes/\(id)/restore", token: bob).status == 404)
            #expect(try app.request("DELETE", "/notes/trash/\(id)", token: bob).status == 404)
            #expect(try app.request("PUT", "/notes/\(id)", token: bob, headers: [("Base-Version", "1")], body: "body=x").status == 404)
            #expect(try app.request("GET", "/uploads/\(upload)/content", token: bob).status == 404)
            #expect(try app.request("GET", "/notes/trash", token: nil).status == 401)

            #expect(try Self.trash(app, token: ann).notes.compactMap { $0["id"] as? String } == [id])
            #expect(try app.request("POST", "/notes/\(id)/restore", token: ann).status == 200)
            #expect(try app.request("GET", "/uploads/\(upload)/content", token: ann).text == "ann's bytes")
        }
    }
}
