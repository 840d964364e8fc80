import Foundation
import Glibc
import Testing
import JotterAPI
import JotterHTTP
import JotterServerTestSupport
import JotterTestSupport
@testable import JotterServer

/// `/uploads` per API.md: storing, attaching, serving with ranges, deleting, and never leaving
/// a byte behind on error.
@Suite("Uploads")
struct UploadsTests {
    func upload(_ app: TestApp, _ parts: MultipartBuilder, path: String = "/uploads") throws -> WireResponse {
        try RawHTTP(port: app.port).request("POST", path, headers: [("Content-Type", parts.contentType)], body: parts.finished(), close: true)
    }

    func uploads(_ response: WireResponse) throws -> [[String: Any]] {
        try #require(try response.json()["uploads"] as? [[String: Any]])
    }

    /// Files in the data folder's tmp/ and uploads/.
    func filesOnDisk(_ app: TestApp) -> (tmp: [String], uploads: [String]) {
        let manager = FileManager.default
        return (
            (try? manager.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("tmp").path)) ?? [],
            (try? manager.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("uploads").path)) ?? []
        )
    }

    /// Polls `condition` until it holds or `seconds` pass (a bound for "never", not a timing claim).
    func waitUntil(seconds: Double = 30, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    /// Waits (up to 1 s, as the contract allows) until no temporary file is left.
    func expectNoTemporaryFiles(_ app: TestApp, sourceLocation: SourceLocation = #_sourceLocation) {
        let deadline = Date().addingTimeInterval(1)
        while !filesOnDisk(app).tmp.isEmpty && Date() < deadline { usleep(10_000) }
        #expect(filesOnDisk(app).tmp.isEmpty, "temporary files left: \(filesOnDisk(app).tmp)", sourceLocation: sourceLocation)
    }

    @Test("create: 201 with metadata, content served back byte for byte", arguments: ["/uploads", "/upload"])
    func create(_ path: String) throws {
        try TestApp.with { app in
            let content = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            var parts = MultipartBuilder()
            parts.file("photo", filename: "cat.png", contentType: "image/png", body: content)
            parts.file("doc", filename: "notes.txt", contentType: "text/plain", body: Array("hi\n".utf8))
            let response = try upload(app, parts, path: path)
            #expect(response.status == 201)
            let created = try uploads(response)
            #expect(created.count == 2)
            let photo = created[0]
            let id = try #require(photo["id"] as? String)
            #expect(photo["filename"] as? String == "cat.png")
            #expect(photo["content_type"] as? String == "image/png")
            #expect(photo["size"] as? Int == content.count)
            #expect(photo["sha256"] as? String == SHA256Hex.of(content))
            #expect(photo["note_id"] is NSNull)
            #expect(photo["url"] as? String == "/uploads/\(id)/content")
            #expect((photo["created_at"] as? String)?.wholeMatch(of: /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/) != nil)

            let body = try app.request("GET", "/uploads/\(id)/content")
            #expect(body.status == 200)
            #expect(body.body == content)
            #expect(body.header("Content-Type") == "image/png")
            #expect(body.header("Accept-Ranges") == "bytes")
            #expect(body.header("ETag") == "\"\(SHA256Hex.of(content))\"")
            #expect(body.header("Content-Disposition")?.hasPrefix("inline;") == true)
            // Last-Modified: the upload's created_at, as an HTTP date (RFC 9110 IMF-fixdate).
            let createdText = try #require(photo["created_at"] as? String)
            let storedAt = try #require(Timestamp.parse(createdText))
            #expect(body.header("Last-Modified") == HTTPDate.format(storedAt), "\(body.header("Last-Modified") ?? "none")")
            #expect(body.header("Last-Modified")?.wholeMatch(of: /[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT/) != nil)
            let ranged = try app.request("GET", "/uploads/\(id)/content", headers: [("Range", "bytes=0-9")])
            #expect(ranged.status == 206 && ranged.header("Last-Modified") == body.header("Last-Modified"))

            let shown = try app.request("GET", "/uploads/\(id)").json()["upload"] as? [String: Any]
            #expect(shown?["id"] as? String == id)
            let listed = try uploads(app.request("GET", "/uploads")).compactMap { $0["id"] as? String }
            #expect(listed == [try #require(created[1]["id"] as? String), id])  // newest first
            expectNoTemporaryFiles(app)
        }
    }

    @Test("attaching to a note bumps its version, shows in the note; the files go when the note leaves the trash")
    func attachments() throws {
        try TestApp.with { app in
            let note = try #require(try app.request("POST", "/notes", body: "body=with+files").json()["note"] as? [String: Any])
            let noteID = try #require(note["id"] as? String)
            var parts = MultipartBuilder()
            parts.field("note_id", noteID)
            parts.file("file", filename: "a.txt", contentType: "text/plain", body: Array("aaa".utf8))
            let created = try uploads(upload(app, parts))
            #expect(created.first?["note_id"] as? String == noteID)
            let shown = try app.request("GET", "/notes/\(noteID)")
            #expect(shown.header("ETag") == "\"2\"")
            let attachments = (try shown.json()["note"] as? [String: Any])?["attachments"] as? [[String: Any]]
            #expect(attachments?.compactMap { $0["filename"] as? String } == ["a.txt"])
            #expect(filesOnDisk(app).uploads.count == 1)

            #expect(try app.request("DELETE", "/notes/\(noteID)").status == 200)
            let id = try #require(created.first?["id"] as? String)
            // In the trash, the note keeps its files.
            #expect(try app.request("GET", "/uploads/\(id)/content").text == "aaa")
            #expect(filesOnDisk(app).uploads.count == 1)
            #expect(try app.request("DELETE", "/notes/trash/\(noteID)").status == 204)
            #expect(try app.request("GET", "/uploads/\(id)").status == 404)
            #expect(filesOnDisk(app).uploads.isEmpty)
        }
    }

    @Test("note_id: empty means none, unknown or malformed is 404 and stores nothing")
    func noteID() throws {
        try TestApp.with { app in
            for (value, status) in [("", 201), ("999", 404), ("abc", 404)] {
                var parts = MultipartBuilder()
                parts.field("note_id", value)
                parts.file("f", filename: "x.bin", body: [1, 2, 3])
                let response = try upload(app, parts)
                #expect(response.status == status, "note_id '\(value)'")
            }
            #expect(filesOnDisk(app).uploads.count == 1)
            expectNoTemporaryFiles(app)
        }
    }

    @Test("note_id in the query of a multipart upload: used when the fields have none (the field wins), malformed is 404")
    func noteIDInTheQuery() throws {
        try TestApp.with { app in
            let note = try #require(try app.request("POST", "/notes", body: "body=n").json()["note"] as? [String: Any])
            let noteID = try #require(note["id"] as? String)
            func send(query: String, field: String?) throws -> WireResponse {
                var parts = MultipartBuilder()
                if let field { parts.field("note_id", field) }
                parts.file("f", filename: "x.bin", body: [1, 2, 3])
                return try upload(app, parts, path: "/upload?note_id=" + query)
            }
            let attached = try send(query: noteID, field: nil)
            #expect(attached.status == 201, "\(attached.text)")
            #expect(try uploads(attached).first?["note_id"] as? String == noteID)
            #expect(try send(query: noteID, field: noteID).status == 201)
            #expect(try send(query: "%0Fx", field: nil).status == 404)
            #expect(try send(query: "%0Fx", field: noteID).status == 404, "a malformed query is refused beside a good field")
            // Both well formed: the field wins.
            let both = try send(query: "999", field: noteID)
            #expect(both.status == 201, "\(both.text)")
            #expect(try uploads(both).first?["note_id"] as? String == noteID)
            #expect(filesOnDisk(app).uploads.count == 3)
            expectNoTemporaryFiles(app)
        }
    }

    @Test("delete: 200 with the upload, the bytes are gone; a detached note changes version")
    func delete() throws {
        try TestApp.with { app in
            _ = try app.request("POST", "/notes", body: "body=n")
            var parts = MultipartBuilder()
            parts.field("note_id", "1")
            parts.file("f", filename: "x.bin", body: [1, 2, 3])
            let id = try #require(try uploads(upload(app, parts)).first?["id"] as? String)
            let deleted = try app.request("DELETE", "/uploads/\(id)")
            #expect(deleted.status == 200)
            #expect((try deleted.json()["upload"] as? [String: Any])?["id"] as? String == id)
            #expect(try app.request("GET", "/uploads/\(id)/content").status == 404)
            #expect(filesOnDisk(app).uploads.isEmpty)
            #expect(try app.request("GET", "/notes/1").header("ETag") == "\"3\"")
            #expect(try app.request("DELETE", "/uploads/\(id)").status == 404)
            #expect(try app.request("GET", "/uploads/not-an-id").status == 404)

        }
    }

    @Test("no file part is 422; a body that is not multipart is 415")
    func validation() throws {
        try TestApp.with { app in
            var parts = MultipartBuilder()
            parts.field("note_id", "")
            let noFile = try upload(app, parts)
            #expect(noFile.status == 422)
            #expect(try app.request("POST", "/uploads", body: "file=x").status == 415)
        }
    }

    /// A file input left empty: browsers send a part with `filename=""` and no bytes. It is no
    /// file (as PHP takes it): alone it is the "no file part" 422; beside a real file it is
    /// ignored. A named empty file, or bytes under an empty name, are files.
    @Test("a file input left empty (filename=\"\", no bytes) is no file; a named empty file is stored", arguments: ["/uploads", "/upload"])
    func emptyFileInput(_ path: String) throws {
        try TestApp.with { app in
            var alone = MultipartBuilder()
            alone.field("note_id", "")
            alone.file("file", filename: "", body: [])
            let refused = try upload(app, alone, path: path)
            #expect(refused.status == 422, "\(refused.text)")
            #expect((try app.request("GET", "/uploads").json()["uploads"] as? [Any])?.isEmpty == true)

            var beside = MultipartBuilder()
            beside.file("file", filename: "", body: [])
            beside.file("file", filename: "empty.txt", contentType: "text/plain", body: [])
            beside.file("other", filename: "", body: [1, 2, 3])
            let stored = try uploads(upload(app, beside, path: path))
            #expect(stored.map { $0["filename"] as? String } == ["empty.txt", "upload"])
            #expect(stored.map { $0["size"] as? Int } == [0, 3])
            expectNoTemporaryFiles(app)
        }
    }

    @Test(
        "Content-Disposition: inline only for safe types; HTML and SVG download",
        arguments: [
            ("image/png", "inline"), ("image/jpeg", "inline"), ("image/gif", "inline"), ("image/webp", "inline"),
            ("text/plain", "inline"), ("application/pdf", "inline"), ("text/html", "attachment"),
            ("image/svg+xml", "attachment"), ("application/octet-stream", "attachment"), ("TEXT/HTML; charset=utf-8", "attachment"),
        ])
    func disposition(_ type: String, _ expected: String) throws {
        try TestApp.with { app in
            var parts = MultipartBuilder()
            parts.file(
                "f", filename: "", contentType: type, body: Array("<script>alert(1)</script>".utf8),
                disposition: #"form-data; name="f"; filename="été \"x\".bin""#)
            let id = try #require(try uploads(upload(app, parts)).first?["id"] as? String)
            let content = try app.request("GET", "/uploads/\(id)/content")
            let header = try #require(content.header("Content-Disposition"))
            #expect(header.hasPrefix(expected + ";"))
            #expect(header.contains("filename*=UTF-8''%C3%A9t%C3%A9%20%22x%22.bin"))
            #expect(content.header("X-Content-Type-Options") == "nosniff")
        }
    }

    @Test("Range: single ranges, suffixes, open ends, 416, multi-range and If-Range serve it whole")
    func ranges() throws {
        try TestApp.with { app in
            let content = Array("0123456789abcdefghij".utf8)
            var parts = MultipartBuilder()
            parts.file("f", filename: "r.txt", contentType: "text/plain", body: content)
            let id = try #require(try uploads(upload(app, parts)).first?["id"] as? String)
            let path = "/uploads/\(id)/content"
            func get(_ headers: [(String, String)]) throws -> WireResponse { try app.request("GET", path, headers: headers) }
            let cases: [(String, Int, String, String?)] = [
                ("bytes=0-4", 206, "01234", "bytes 0-4/20"), ("bytes=15-", 206, "fghij", "bytes 15-19/20"),
                ("bytes=-3", 206, "hij", "bytes 17-19/20"), ("bytes=18-100", 206, "ij", "bytes 18-19/20"),
                ("bytes=-100", 206, "0123456789abcdefghij", "bytes 0-19/20"), ("bytes=19-19", 206, "j", "bytes 19-19/20"),
                ("bytes=0-1,5-6", 200, "0123456789abcdefghij", nil), ("items=0-1", 200, "0123456789abcdefghij", nil),
                ("bytes=5-2", 200, "0123456789abcdefghij", nil), ("bytes=1-2,", 206, "12", "bytes 1-2/20"),
                ("bytes= , 3-4", 206, "34", "bytes 3-4/20"),
            ]
            for (range, status, body, contentRange) in cases {
                let response = try get([("Range", range)])
                #expect(response.status == status, "\(range)")
                #expect(response.text == body, "\(range)")
                #expect(response.header("Content-Range") == contentRange, "\(range)")
            }
            for range in ["bytes=20-", "bytes=100-200", "bytes=-0"] {
                let response = try get([("Range", range)])
                #expect(response.status == 416, "\(range)")
                #expect(response.header("Content-Range") == "bytes */20")
            }
            let etag = try #require(try get([]).header("ETag"))
            #expect(try get([("Range", "bytes=0-1"), ("If-Range", etag)]).status == 206)
            #expect(try get([("Range", "bytes=0-1"), ("If-Range", "\"stale\"")]).status == 200)
            #expect(try get([("If-None-Match", etag)]).status == 304)

            // RFC 9110 §13.2.2's order: If-Match (strong), else If-Unmodified-Since; then
            // If-None-Match, else If-Modified-Since.
            let modified = try #require(try get([]).header("Last-Modified"))
            let before = "Thu, 01 Jan 1970 00:00:00 GMT", after = "Fri, 31 Dec 9999 23:59:59 GMT"
            let stale = try get([("If-Match", "\"stale\"")])
            #expect(stale.status == 412)
            #expect(stale.header("Content-Type") == "application/problem+json")
            #expect(try get([("If-Match", "W/\(etag)")]).status == 412, "weak tags never match If-Match")
            #expect(try get([("If-Match", etag)]).status == 200)
            #expect(try get([("If-Match", "*")]).status == 200)
            #expect(try get([("If-Match", "")]).status == 200, "an empty list is no condition")
            #expect(try get([("If-Match", etag), ("If-None-Match", etag)]).status == 304)
            #expect(try get([("If-Unmodified-Since", before)]).status == 412)
            #expect(try get([("If-Unmodified-Since", modified)]).status == 200)
            #expect(try get([("If-Match", etag), ("If-Unmodified-Since", before)]).status == 200, "If-Match wins")
            #expect(try get([("If-Modified-Since", modified)]).status == 304)
            #expect(try get([("If-Modified-Since", after)]).status == 304)
            #expect(try get([("If-Modified-Since", before)]).status == 200)
            #expect(try get([("If-Modified-Since", "yesterday")]).status == 200, "a date that can't be read is ignored")
            #expect(try get([("If-None-Match", "\"stale\""), ("If-Modified-Since", modified)]).status == 200, "If-None-Match wins")
            #expect(try app.request("HEAD", path, headers: [("If-Modified-Since", modified)]).status == 304)
        }
    }

    @Test("a file deleted from uploads/ behind the server's back: 404 problem whole or ranged, 416 first; the row stays")
    func fileGoneBehindOurBack() throws {
        try TestApp.with { app in
            var parts = MultipartBuilder()
            parts.file("f", filename: "gone.bin", body: Array(repeating: 7, count: 5000))
            let id = try #require(try uploads(upload(app, parts)).first?["id"] as? String)
            try FileManager.default.removeItem(at: app.dataDirectory.appendingPathComponent("uploads/\(id)"))
            for headers in [[], [("Range", "bytes=10-19")]] {
                let answer = try app.request("GET", "/uploads/\(id)/content", headers: headers)
                #expect(answer.status == 404, "\(headers): \(answer.text)")
                #expect(answer.header("Content-Type") == "application/problem+json")
                #expect(answer.text.contains("gone from the blob store"), "\(answer.text)")
            }
            // The range is checked against the row's size before the file is looked for.
            let unsatisfiable = try app.request("GET", "/uploads/\(id)/content", headers: [("Range", "bytes=99999-")])
            #expect(unsatisfiable.status == 416)
            #expect(unsatisfiable.header("Content-Range") == "bytes */5000")
            #expect(try app.request("GET", "/uploads/\(id)").status == 200)
        }
    }

    /// `sendfile(2)` (and OpenSSL's socket writes) to a client that has gone may fail with
    /// `EPIPE` and raise SIGPIPE, whose default action ends the process hosting the server — as
    /// this test process hosts it. `HTTPServer.start` has it ignored (nothing else in the test
    /// process does); a timing pass once died of it (signal 13).
    @Test("clients that leave mid-download, reset or closed, leave the server serving; SIGPIPE is ignored")
    func clientsLeavingMidDownload() throws {
        try TestApp.with { app in
            let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            let ignored = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigIgn:") }?.split(separator: "\t").last)
            #expect((UInt64(ignored, radix: 16) ?? 0) & (1 << (UInt64(SIGPIPE) - 1)) != 0, "SIGPIPE is not ignored: SigIgn \(ignored)")
            var parts = MultipartBuilder()
            let content = [UInt8](repeating: 0x5a, count: 24 << 20)
            parts.file("f", filename: "big.bin", body: content)
            let id = try #require(try uploads(upload(app, parts)).first?["id"] as? String)
            for round in 0..<12 {
                let client = try RawHTTP(port: app.port)
                try client.send("GET /uploads/\(id)/content HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = try client.readStream(until: "\r\n\r\n")
                // The server is mid-file: its next sendfile meets a closed or reset socket.
                if round % 2 == 0 { client.reset() } else { client.closeNow() }
                usleep(20_000)
            }
            let answer = try app.request("GET", "/uploads/\(id)/content", headers: [("Range", "bytes=0-9")])
            #expect(answer.status == 206)
            #expect(answer.body == Array(content[0..<10]))
        }
    }

    @Test(
        "hostile filenames are made safe and never touch a path",
        arguments: [
            ("../../etc/passwd", "passwd"), ("/etc/shadow", "shadow"), ("..\\..\\boot.ini", "boot.ini"),
            ("a\u{0}b.txt", "ab.txt"), ("tab\tnew\nline.txt", "tabnewline.txt"), ("", "upload"), ("..", "upload"), (".", "upload"),
            ("invoice\u{202E}fdp.exe", "invoicefdp.exe"),
        ])
    func hostileNames(_ name: String, _ expected: String) throws {
        try TestApp.with { app in
            var parts = MultipartBuilder()
            parts.file("f", filename: name, body: [42])
            let response = try upload(app, parts)
            #expect(response.status == 201)
            #expect(try uploads(response).first?["filename"] as? String == expected)
            let stored = filesOnDisk(app).uploads
            #expect(stored.count == 1 && stored[0].utf8.count == 24)
        }
    }

    @Test("a 10,000-character name is cut to 255 bytes; filename* (UTF-8) is preferred")
    func longAndExtendedNames() throws {
        try TestApp.with { app in
            var parts = MultipartBuilder()
            parts.file("f", filename: String(repeating: "x", count: 10_000), body: [1])
            parts.file(
                "g", filename: "", body: [2],
                disposition: "form-data; name=\"g\"; filename=\"fallback.txt\"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%20%F0%9F%93%9D.txt")
            let created = try uploads(upload(app, parts))
            #expect((created[0]["filename"] as? String)?.utf8.count == 255)
            #expect(created[1]["filename"] as? String == "日本 📝.txt")
        }
    }

    @Test("over --max-upload-size: 413 naming the limit, nothing left on disk", arguments: [true, false])
    func uploadLimit(_ declared: Bool) throws {
        try TestApp.with(configure: { $0.maxUploadSize = 1000 }) { app in
            var exact = MultipartBuilder()
            exact.file("f", filename: "exact.bin", body: [UInt8](repeating: 1, count: 1000))
            let accepted = try upload(app, exact)
            #expect(accepted.status == 201)

            var over = MultipartBuilder()
            over.file("f", filename: "over.bin", body: [UInt8](repeating: 1, count: 1001))
            let body = over.finished()
            let connection = try RawHTTP(port: app.port)
            var head = "POST /uploads HTTP/1.1\r\nHost: localhost\r\nContent-Type: \(over.contentType)\r\n"
            head += declared ? "Content-Length: \(body.count)\r\n\r\n" : "Transfer-Encoding: chunked\r\n\r\n"
            try connection.send(
                Array(head.utf8) + (declared ? body : Array(String(body.count, radix: 16).utf8) + [13, 10] + body + Array("\r\n0\r\n\r\n".utf8)))
            let response = try connection.readResponse()
            #expect(response.status == 413)
            #expect((try response.json()["detail"] as? String)?.contains("--max-upload-size") == true)
            expectNoTemporaryFiles(app)
            #expect(filesOnDisk(app).uploads.count == 1)
        }
    }

    @Test("too many parts is 422; plain fields over --max-body-size are 413")
    func partsAndFieldLimits() throws {
        try TestApp.with(configure: { $0.maxBodySize = 2000 }) { app in
            var many = MultipartBuilder()
            for n in 0..<1001 { many.field("f\(n)", "") }
            let tooMany = try upload(app, many)
            #expect(tooMany.status == 422)
            var big = MultipartBuilder()
            big.field("note_id", String(repeating: "1", count: 2001))
            big.file("f", filename: "x", body: [1])
            let tooBig = try upload(app, big)
            #expect(tooBig.status == 413)
            expectNoTemporaryFiles(app)
            #expect(filesOnDisk(app).uploads.isEmpty)
        }
    }

    @Test(
        "broken multipart is 400 naming the problem, with nothing left behind",
        arguments: [
            ("multipart/form-data", "--x\r\n", "no boundary parameter"),
            ("multipart/form-data; boundary=x", "--x\r\nContent-Type: text/plain\r\n\r\nabc\r\n--x--", "no Content-Disposition"),
            ("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\nabc", "truncated"),
            ("multipart/form-data; boundary=wrong", "--x\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nabc\r\n--x--", "no boundary line"),
        ])
    func broken(_ contentType: String, _ body: String, _ detail: String) throws {
        try TestApp.with { app in
            let response = try app.request("POST", "/uploads", headers: [("Content-Type", contentType)], body: body)
            #expect(response.status == 400)
            #expect((try response.json()["detail"] as? String)?.contains(detail) == true, "\(response.text)")
            expectNoTemporaryFiles(app)
        }
    }

    @Test("a client that disconnects mid-upload leaves nothing behind")
    func disconnect() throws {
        try TestApp.with { app in
            var parts = MultipartBuilder()
            parts.file("f", filename: "big.bin", body: [UInt8](repeating: 7, count: 3 << 20))
            let body = parts.finished()
            let connection = try RawHTTP(port: app.port)
            try connection.send(
                "POST /uploads HTTP/1.1\r\nHost: localhost\r\nContent-Type: \(parts.contentType)\r\nContent-Length: \(body.count)\r\n\r\n")
            try connection.send(Array(body.prefix(2 << 20)))
            // The temporary file exists while the upload runs…
            #expect(waitUntil { !filesOnDisk(app).tmp.isEmpty }, "the upload never started")
            shutdown(connection.fd, Int32(SHUT_RDWR))  // … and goes with the connection.
            // How soon the server notices a vanished client depends on the bytes still buffered
            // and on the engine's check for peers that hung up (every 250 ms): not a wall-clock
            // bound to test on a loaded machine. What must hold: once the request has ended,
            // nothing of it is left.
            #expect(waitUntil { app.app.server.requestsInFlight == 0 }, "the aborted request never ended")
            #expect(filesOnDisk(app).tmp.isEmpty, "temporary files left: \(filesOnDisk(app).tmp)")
            #expect(filesOnDisk(app).uploads.isEmpty)
        }
    }

    @Test("multipart works on every method: PUT a note with a multipart body")
    func multipartOnPut() throws {
        try TestApp.with { app in
            _ = try app.request("POST", "/notes", body: "body=old")
            var parts = MultipartBuilder()
            parts.field("body", "from multipart")
            let response = try RawHTTP(port: app.port).request(
                "PUT", "/notes/1", headers: [("Content-Type", parts.contentType)],
                body: parts.finished(), close: true)
            #expect(response.status == 200)
            #expect((try response.json()["note"] as? [String: Any])?["body"] as? String == "from multipart")
        }
    }
}

/// SHA-256 for test expectations, by the system's `sha256sum` (not the server's code).
enum SHA256Hex {
    /// (A tool that could not run gives a text no digest equals.)
    static func of(_ bytes: [UInt8]) -> String {
        guard let run = try? runProgram(["sha256sum"], input: bytes, separateErrors: true) else { return "(sha256sum could not run)" }
        return String(run.output.prefix(64))
    }
}
