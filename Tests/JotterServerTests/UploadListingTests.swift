import Foundation
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// `GET /uploads` pages like `/notes` and filters by note; `PATCH /uploads/{id}` attaches an
/// upload to a note; text is served with its charset.
@Suite("Uploads: paging, filter, attach, charset")
struct UploadListingTests {
    func upload(
        _ app: TestApp, note: String? = nil, name: String = "f.bin", type: String = "application/octet-stream",
        body: [UInt8] = [1, 2, 3]
    ) throws -> [String: Any] {
        var parts = MultipartBuilder()
        if let note { parts.field("note_id", note) }
        parts.file("file", filename: name, contentType: type, body: body)
        let response = try RawHTTP(port: app.port).request(
            "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
            body: parts.finished(), close: true)
        try #require(response.status == 201, "\(response.text)")
        return try #require((try response.json()["uploads"] as? [[String: Any]])?.first)
    }

    func page(_ app: TestApp, _ target: String) throws -> (ids: [String], next: String?) {
        let response = try app.request("GET", target)
        try #require(response.status == 200, "\(target): \(response.text)")
        let json = try response.json()
        let ids = (json["uploads"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
        #expect(json.keys.contains("next"), "next is always there, null on the last page")
        return (ids, json["next"] as? String)
    }

    @Test("limit, after and next walk every upload newest first, past 1000")
    func paging() throws {
        try TestApp.with { app in
            var created: [String] = []
            for _ in 0..<5 { created.append(try #require(try upload(app)["id"] as? String)) }
            var seen: [String] = []
            var target: String? = "/uploads?limit=2"
            var pages = 0
            while let next = target {
                let (ids, following) = try page(app, next)
                seen += ids
                target = following
                pages += 1
                if let following { #expect(following.hasPrefix("/uploads?limit=2&after=")) }
            }
            #expect(pages == 3)
            #expect(seen == created.reversed())
            #expect(try page(app, "/uploads").next == nil)
            #expect(try page(app, "/uploads").ids.count == 5)
        }
    }

    @Test("more than 1000 uploads: the first page says where the rest are")
    func overAThousand() throws {
        try TestApp.with { app in
            // One request with 1001 file parts is over the part limit; 1001 small ones in 3 requests.
            for batch in [400, 400, 201] {
                var parts = MultipartBuilder()
                for n in 0..<batch { parts.file("f\(n)", filename: "\(n).bin", body: [UInt8(n & 0xFF)]) }
                // 400 files, each made durable before the answer: far from instant on a busy
                // machine, and this test is about the listing, not the upload's speed.
                let response = try RawHTTP(port: app.port, timeout: 120).request(
                    "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
                    body: parts.finished(), close: true)
                try #require(response.status == 201, "\(response.text)")
            }
            let first = try page(app, "/uploads?limit=5000")
            #expect(first.ids.count == 1000)
            let next = try #require(first.next)
            let rest = try page(app, next)
            #expect(rest.ids.count == 1)
            #expect(rest.next == nil)
            #expect(Set(first.ids + rest.ids).count == 1001)
        }
    }

    @Test("note_id filters: a note's attachments, or (empty) uploads attached to none; next keeps the filter")
    func filter() throws {
        try TestApp.with { app in
            _ = try app.request("POST", "/notes", body: "body=a")
            _ = try app.request("POST", "/notes", body: "body=b")
            let a1 = try #require(try upload(app, note: "1")["id"] as? String)
            let loose1 = try #require(try upload(app)["id"] as? String)
            let b1 = try #require(try upload(app, note: "2")["id"] as? String)
            let loose2 = try #require(try upload(app)["id"] as? String)
            let a2 = try #require(try upload(app, note: "1")["id"] as? String)
            #expect(try page(app, "/uploads?note_id=1").ids == [a2, a1])
            #expect(try page(app, "/uploads?note_id=2").ids == [b1])
            #expect(try page(app, "/uploads?note_id=").ids == [loose2, loose1])
            #expect(try page(app, "/uploads?note_id=3").ids == [])
            let firstLoose = try page(app, "/uploads?note_id=&limit=1")
            #expect(firstLoose.ids == [loose2])
            #expect(firstLoose.next == "/uploads?limit=1&note_id=&after=\(loose2)")
            #expect(try page(app, try #require(firstLoose.next)).ids == [loose1])
            #expect(try page(app, "/uploads?note_id=1&limit=1&after=\(a2)").ids == [a1])
        }
    }

    @Test("a next link whose upload was deleted meanwhile still works: the listing goes on after its place (and /notes after a deleted note)")
    func cursorDeleted() throws {
        try TestApp.with { app in
            var created: [String] = []
            for _ in 0..<5 { created.append(try #require(try upload(app)["id"] as? String)) }
            let (first, next) = try page(app, "/uploads?limit=2")
            #expect(first == [created[4], created[3]])
            #expect([200, 204].contains(try app.request("DELETE", "/uploads/\(created[3])").status))
            let rest = try page(app, try #require(next))
            #expect(rest.ids == [created[2], created[1]])
            for body in ["a", "b", "c", "d"] { _ = try app.request("POST", "/notes", body: "body=\(body)") }
            #expect([200, 204].contains(try app.request("DELETE", "/notes/3").status))
            let notes = try app.request("GET", "/notes?limit=10&after=3").json()["notes"] as? [[String: Any]]
            #expect(notes?.compactMap { $0["id"] as? String } == ["2", "1"])
        }
    }

    @Test(
        "bad limit, after or note_id is 400 listing each",
        arguments: [
            ("limit=0", ["limit"]), ("limit=x", ["limit"]), ("after=nope", ["after"]), ("note_id=abc", ["note_id"]),
            ("note_id=01", ["note_id"]), ("limit=-1&note_id=x&after=1", ["limit", "after", "note_id"]),
            ("after=0123456789abcdef01234567", ["after"]),
        ])
    func badQueries(_ query: String, _ fields: [String]) throws {
        try TestApp.with { app in
            let response = try app.request("GET", "/uploads?\(query)")
            #expect(response.status == 400)
            let errors = try #require(try response.json()["errors"] as? [[String: String]])
            #expect(errors.compactMap { $0["field"] } == fields)
        }
    }

    @Test("PATCH note_id attaches an upload, moves it, detaches it; each note changes version")
    func attach() throws {
        try TestApp.with { app in
            _ = try app.request("POST", "/notes", body: "body=a")
            _ = try app.request("POST", "/notes", body: "body=b")
            let id = try #require(try upload(app)["id"] as? String)
            func patch(_ body: String, json: Bool = false) throws -> WireResponse {
                try app.request(
                    "PATCH", "/uploads/\(id)", headers: [("Content-Type", json ? "application/json" : "application/x-www-form-urlencoded")],
                    body: body)
            }
            let attached = try patch("note_id=1")
            #expect(attached.status == 200)
            #expect((try attached.json()["upload"] as? [String: Any])?["note_id"] as? String == "1")
            #expect(try app.request("GET", "/notes/1").header("ETag") == "\"2\"")
            let note = try #require(try app.request("GET", "/notes/1").json()["note"] as? [String: Any])
            #expect((note["attachments"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])

            #expect(try patch(#"{"note_id":"2"}"#, json: true).status == 200)
            #expect(try app.request("GET", "/notes/1").header("ETag") == "\"3\"")
            #expect(try app.request("GET", "/notes/2").header("ETag") == "\"2\"")
            let detached = try patch("note_id=")
            #expect((try detached.json()["upload"] as? [String: Any])?["note_id"] is NSNull)
            #expect(try page(app, "/uploads?note_id=").ids == [id])

            #expect(try patch("note_id=99").status == 404)
            #expect(try patch("note_id=01").status == 404)
            #expect(try patch("other=1").status == 422)
            #expect(try patch(#"{"note_id":2}"#, json: true).status == 422)
            #expect(try app.request("PATCH", "/uploads/0123456789abcdef01234567", body: "note_id=1").status == 404)
            #expect(try page(app, "/uploads?note_id=").ids == [id], "nothing changed by the refused ones")

            // A client that can only POST a form: `_method` in the body, as on /notes/{id}.
            let posted = try app.request("POST", "/uploads/\(id)", body: "_method=PATCH&note_id=2")
            #expect(posted.status == 200)
            #expect((try posted.json()["upload"] as? [String: Any])?["note_id"] as? String == "2")
            #expect(try app.request("POST", "/uploads/\(id)", body: "note_id=1").status == 405, "no _method: POST is not allowed here")
            #expect(try app.request("POST", "/uploads/\(id)", body: "_method=DELETE").status == 200)
            #expect(try app.request("GET", "/uploads/\(id)").status == 404)
        }
    }

    @Test(
        "text that is UTF-8 is stored and served with charset=utf-8; other bytes without",
        arguments: [
            ("text/plain", Array("Grüße aus Köln".utf8), "text/plain; charset=utf-8"),
            ("text/markdown", Array("# Überschrift".utf8), "text/markdown; charset=utf-8"),
            ("text/plain", [0x47, 0x72, 0xFC, 0xDF, 0x65], "text/plain"),  // Latin-1
            ("text/plain", Array("abc".utf8) + [0xE2, 0x82], "text/plain"),  // cut off mid-character
            ("TEXT/PLAIN; charset=latin1", Array("plain ascii".utf8), "text/plain; charset=utf-8"),
            ("image/png", Array("Grüße".utf8), "image/png"),
        ])
    func charset(_ type: String, _ body: [UInt8], _ expected: String) throws {
        try TestApp.with { app in
            let created = try upload(app, type: type, body: body)
            #expect(created["content_type"] as? String == expected)
            let id = try #require(created["id"] as? String)
            let content = try app.request("GET", "/uploads/\(id)/content")
            #expect(content.header("Content-Type") == expected)
            #expect(content.body == body)
            // The charset does not change how it is shown: text/plain inline, markdown as a download.
            #expect(content.header("Content-Disposition")?.hasPrefix(type.hasPrefix("text/markdown") ? "attachment;" : "inline;") == true)
        }
    }

    @Test("a UTF-8 character split across the chunks of a large text upload is still UTF-8")
    func charsetAcrossChunks() throws {
        try TestApp.with { app in
            let body = Array(String(repeating: "Köln ✓ 📝 ", count: 40_000).utf8)  // ~600 KB: many engine chunks
            let created = try upload(app, type: "text/plain", body: body)
            #expect(created["content_type"] as? String == "text/plain; charset=utf-8")
        }
    }
}
