import Foundation
import Glibc
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// What an operator watches and uses: `/healthz` readiness, the gauges in `/metrics`, and
/// online backups through `/admin/backups`.
@Suite("Operations endpoints")
struct OperationsTests {
    func upload(_ app: TestApp, _ bytes: [UInt8], noteID: String? = nil) throws -> [String: Any] {
        var parts = MultipartBuilder()
        if let noteID { parts.field("note_id", noteID) }
        parts.file("file", filename: "a.bin", body: bytes)
        let response = try RawHTTP(port: app.port).request(
            "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
            body: parts.finished(), close: true)
        #expect(response.status == 201)
        return try #require((try response.json()["uploads"] as? [[String: Any]])?.first)
    }

    @Test("/healthz is 200 {\"status\":\"ok\"} with every check ok and the free space")
    func healthy() throws {
        try TestApp.with { app in
            let response = try app.request("GET", "/healthz")
            #expect(response.status == 200)
            let json = try response.json()
            #expect(json["status"] as? String == "ok")
            #expect(json["checks"] as? [String: String] == ["database": "ok", "data_folder": "ok", "free_space": "ok"])
            #expect((json["free_bytes"] as? Int ?? 0) > 0)
        }
    }

    @Test("/healthz is 503 problem+json naming the check when too little space is free")
    func lowSpace() throws {
        try TestApp.with(configure: { $0.minimumFreeSpace = .max }) { app in
            let response = try app.request("GET", "/healthz")
            #expect(response.status == 503)
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.header("Retry-After") == "5")
            let json = try response.json()
            #expect(json["status"] as? Int == 503)
            #expect((json["detail"] as? String)?.contains("free_space: only") == true)
            #expect((json["checks"] as? [String: String])?["database"] == "ok")
            #expect(json["request_id"] is String)
        }
    }

    @Test("/healthz is 503 when nothing can be written in the data folder, and 200 again once it can")
    func unwritable() throws {
        try TestApp.with { app in
            let tmp = app.dataDirectory.appendingPathComponent("tmp")
            try FileManager.default.removeItem(at: tmp)
            let response = try app.request("GET", "/healthz")
            #expect(response.status == 503)
            #expect(
                (try response.json()["detail"] as? String)
                    == "not ready: data_folder: cannot create a file in the data folder: No such file or directory")
            // A public endpoint: no path of the server's in it.
            #expect(!response.text.contains(app.dataDirectory.path), "\(response.text)")
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: false)
            #expect(try app.request("GET", "/healthz").status == 200)
        }
    }

    @Test("the log says when a start created or migrated the database, and nothing when it was current")
    func migrationLogged() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var logs: [String] = []
        for _ in 0..<2 {
            let server = try ServerProcess(["--quiet"], dataDirectory: folder)
            #expect(server.signal(SIGTERM))
            let (status, log) = server.finish()
            #expect(status == 0)
            logs.append(log)
        }
        #expect(logs[0].contains(" info created the database at schema version "), "\(logs[0])")
        #expect(!logs[1].contains("schema version"), "\(logs[1])")
    }

    @Test("/healthz's failures are logged whole, once when they start and once when they end")
    func failuresLoggedOnce() throws {
        let server = try ServerProcess(["--quiet"])
        let tmp = server.dataDirectory.appendingPathComponent("tmp")
        try FileManager.default.removeItem(at: tmp)
        for _ in 0..<3 {
            #expect(try RawHTTP(port: server.port).request("GET", "/healthz", close: true).status == 503)
        }
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: false)
        for _ in 0..<2 {
            #expect(try RawHTTP(port: server.port).request("GET", "/healthz", close: true).status == 200)
        }
        #expect(server.signal(SIGTERM))
        let (status, log) = server.finish()
        #expect(status == 0)
        let lines = log.split(separator: "\n").map(String.init).filter { $0.contains("/healthz") }
        #expect(
            lines.map { $0.drop(while: { $0 != " " }) } == [
                " warning /healthz: not ready: data_folder: cannot create a file in \(tmp.path): No such file or directory",
                " info /healthz: ready again",
            ], "\(log)")
    }

    @Test("/metrics counts notes, uploads and their bytes, open event streams, and shows uptime and the build")
    func gauges() throws {
        try TestApp.with { app in
            _ = try app.request("POST", "/notes", body: "body=one")
            _ = try app.request("POST", "/notes", body: "body=two")
            _ = try upload(app, [UInt8](repeating: 7, count: 1234), noteID: "1")
            let stream = try RawHTTP(port: app.port)
            try stream.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
            _ = try stream.readStream(until: "\r\n\r\n")
            let text = try app.request("GET", "/metrics").text
            #expect(text.contains("# TYPE jotter_notes gauge\njotter_notes 2\n"))
            #expect(text.contains("\njotter_uploads 1\n"))
            #expect(text.contains("\njotter_upload_bytes 1234\n"))
            #expect(text.contains("\njotter_event_streams 1\n"))
            #expect(text.contains(#"jotter_build_info{version="0.1.0",schema_version="12"} 1"#))
            #expect(text.contains("\njotter_uptime_seconds "))
            #expect(text.contains("\njotter_database_bytes "))
            #expect(text.contains("\njotter_data_free_bytes "))
        }
    }

    @Test("POST /admin/backups snapshots the database and the uploads; their files are served, then deleted")
    func backupEndpoints() throws {
        try TestApp.with { app in
            _ = try app.request("POST", "/notes", body: "body=kept")
            let stored = try upload(app, Array("attached bytes".utf8), noteID: "1")
            let created = try app.request("POST", "/admin/backups")
            #expect(created.status == 201)
            let backup = try #require(try created.json()["backup"] as? [String: Any])
            let id = try #require(backup["id"] as? String)
            #expect(created.header("Location") == "/admin/backups/\(id)")
            #expect(backup["notes"] as? Int == 1)
            #expect(backup["schema_version"] as? Int == 12)
            #expect(backup["files_url"] as? String == "/admin/backups/\(id)/files")
            let uploads = try #require(backup["uploads"] as? [[String: Any]])
            #expect(uploads.map { $0["id"] as? String } == [stored["id"] as? String])
            #expect(uploads.first?["sha256"] as? String == stored["sha256"] as? String)

            // Deleting the upload now leaves the snapshot's copy alone.
            #expect(try app.request("DELETE", "/uploads/\(stored["id"] as! String)").status == 200)
            let file = try app.request("GET", "/admin/backups/\(id)/files/uploads/\(stored["id"] as! String)")
            #expect(file.status == 200)
            #expect(file.text == "attached bytes")
            let range = try app.request("GET", "/admin/backups/\(id)/files/uploads/\(stored["id"] as! String)", headers: [("Range", "bytes=9-")])
            #expect(range.status == 206)
            #expect(range.text == "bytes")
            let database = try app.request("GET", "/admin/backups/\(id)/files/jotter.sqlite")
            #expect(database.status == 200)
            #expect(database.body.count == backup["database_size"] as? Int)
            #expect(Array(database.body.prefix(15)) == Array("SQLite format 3".utf8))

            #expect(try app.request("GET", "/admin/backups/\(id)/files/uploads/ffffffffffffffffffffffff").status == 404)
            #expect(try app.request("DELETE", "/admin/backups/\(id)").status == 204)
            #expect(try app.request("GET", "/admin/backups/\(id)/files/jotter.sqlite").status == 404)
            #expect(try app.request("DELETE", "/admin/backups/\(id)").status == 404)
            #expect(try app.request("DELETE", "/admin/backups/..").status == 404)
        }
    }

    @Test("every answer of /healthz and /admin/backups is the one /openapi.json documents")
    func documented() throws {
        try TestApp.with { app in
            let tour = try OpenAPIConformanceTests.Tour(app)
            _ = try upload(app, Array("bytes".utf8))
            let created = try tour.check("POST", "/admin/backups", expect: 201)
            let backup = try #require(try created.json()["backup"] as? [String: Any])
            let id = try #require(backup["id"] as? String)
            let uploadID = try #require((backup["uploads"] as? [[String: Any]])?.first?["id"] as? String)
            let files = "/admin/backups/{id}/files"
            try tour.check("GET", "/admin/backups/\(id)/files/jotter.sqlite", route: files + "/jotter.sqlite", expect: 200)
            try tour.check(
                "GET", "/admin/backups/\(id)/files/jotter.sqlite", route: files + "/jotter.sqlite",
                headers: [("Range", "bytes=0-99")], expect: 206)
            try tour.check("GET", "/admin/backups/\(id)/files/uploads/\(uploadID)", route: files + "/uploads/{upload}", expect: 200)
            try tour.check(
                "GET", "/admin/backups/\(id)/files/uploads/\(uploadID)", route: files + "/uploads/{upload}",
                headers: [("Range", "bytes=99-")], expect: 416)
            try tour.check("GET", "/admin/backups/\(id)/files/uploads/ffffffffffffffffffffffff", route: files + "/uploads/{upload}", expect: 404)
            try tour.check("DELETE", "/admin/backups/\(id)", route: "/admin/backups/{id}", expect: 204)
            try tour.check("DELETE", "/admin/backups/\(id)", route: "/admin/backups/{id}", expect: 404)
            try tour.check("GET", "/admin/backups/\(id)/files/jotter.sqlite", route: files + "/jotter.sqlite", expect: 404)
            try tour.check("GET", "/healthz", expect: 200)
            tour.expectNoProblems()
        }
        try TestApp.with(configure: { $0.minimumFreeSpace = .max }) { app in
            let tour = try OpenAPIConformanceTests.Tour(app)
            try tour.check("GET", "/healthz", expect: 503)
            tour.expectNoProblems()
        }
    }
}
