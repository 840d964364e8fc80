import Foundation
import Glibc
import JotterBlobs
import JotterStore
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// The server on PostgreSQL and an S3 bucket (SeaweedFS), through HTTP: the contract as on
/// SQLite, upload bytes in the bucket (whole, ranged, deleted with their row), events from the
/// store's feed. The store behaviour itself is the conformance suite's (Tests/JotterStoreTests).
@Suite("Server on PostgreSQL and S3", .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
struct PostgresServerTests {
    let backend: SharedBackend
    let bucket: S3BlobStore

    init() throws {
        backend = try SharedBackend()
        let environment = ProcessInfo.processInfo.environment.merging(backend.credentials) { _, new in new }
        bucket = S3BlobStore(try S3BlobStore.Configuration(url: backend.blobStoreURL, environment: environment))
    }

    @Test("notes: create, show with its ETag, 412 on a stale If-Match, search, paging, delete")
    func notes() throws {
        try TestApp.with(configure: backend.configure) { app in
            func json(_ method: String, _ target: String, _ body: String = "", headers: [(String, String)] = []) throws -> WireResponse {
                try app.request(method, target, headers: [("Content-Type", "application/json")] + headers, body: body)
            }
            var ids: [String] = []
            for body in ["buy milk", "call Bob", "milk the cow"] {
                let created = try json("POST", "/notes", #"{"body":"\#(body)"}"#)
                #expect(created.status == 201, "\(created.text)")
                ids.append(try #require((try created.json()["note"] as? [String: Any])?["id"] as? String))
            }
            let shown = try app.request("GET", "/notes/\(ids[0])")
            #expect(shown.status == 200)
            #expect(shown.header("ETag") == "\"1\"")
            #expect(try json("PUT", "/notes/\(ids[0])", #"{"body":"buy oat milk"}"#, headers: [("If-Match", "\"1\"")]).status == 200)
            #expect(try json("PUT", "/notes/\(ids[0])", #"{"body":"stale"}"#, headers: [("If-Match", "\"1\"")]).status == 412)
            let found = try app.request("GET", "/notes?q=mil")
            let foundIDs = try #require(try found.json()["notes"] as? [[String: Any]]).compactMap { $0["id"] as? String }
            #expect(foundIDs == [ids[2], ids[0]])
            let page = try app.request("GET", "/notes?limit=2")
            #expect(try page.json()["next"] as? String == "/notes?limit=2&after=\(ids[1])")
            #expect(try app.request("DELETE", "/notes/\(ids[1])").status == 200)
            #expect(try app.request("GET", "/notes/\(ids[1])").status == 404)
        }
    }

    @Test("uploads: the bytes go to the bucket, download whole and by range, and leave it with their row")
    func uploads() throws {
        try TestApp.with(configure: backend.configure) { app in
            let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            var parts = MultipartBuilder()
            parts.file("file", filename: "data.bin", body: bytes)
            let created = try RawHTTP(port: app.port).request(
                "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
                body: parts.finished(), close: true)
            #expect(created.status == 201, "\(created.text)")
            let upload = try #require((try created.json()["uploads"] as? [[String: Any]])?.first)
            let id = try #require(upload["id"] as? String)
            #expect(try bucket.head(UploadRecord.blobKey(id))?.size == Int64(bytes.count))
            // Nothing of the request is left in the data folder: the bytes are in the bucket only.
            #expect((try? FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("tmp").path)) ?? [] == [])

            let whole = try app.request("GET", "/uploads/\(id)/content")
            #expect(whole.status == 200)
            #expect(whole.body == bytes)
            let etag = try #require(whole.header("ETag"))
            let ranged = try app.request("GET", "/uploads/\(id)/content", headers: [("Range", "bytes=1000-1999")])
            #expect(ranged.status == 206)
            #expect(ranged.header("Content-Range") == "bytes 1000-1999/\(bytes.count)")
            #expect(ranged.body == Array(bytes[1000...1999]))
            let stale = try app.request("GET", "/uploads/\(id)/content", headers: [("Range", "bytes=0-9"), ("If-Range", "\"other\"")])
            #expect(stale.status == 200 && stale.body.count == bytes.count)
            #expect(try app.request("GET", "/uploads/\(id)/content", headers: [("If-None-Match", etag)]).status == 304)
            #expect(try app.request("GET", "/uploads/\(id)/content", headers: [("Range", "bytes=999999-")]).status == 416)

            #expect(try app.request("DELETE", "/uploads/\(id)").status == 200)
            #expect(try bucket.head(UploadRecord.blobKey(id)) == nil)
            #expect(try app.request("GET", "/uploads/\(id)/content").status == 404)
        }
    }

    @Test("a note written on one server reaches the event stream of another on the same database")
    func eventsAcrossServers() throws {
        try TestApp.with(configure: backend.configure) { first in
            try TestApp.with(configure: backend.configure) { second in
                let stream = try RawHTTP(port: second.port, timeout: 20)
                try stream.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
                _ = try stream.readStream(until: "retry: 3000\n\n")
                let created = try first.request(
                    "POST", "/notes", headers: [("Content-Type", "application/json")], body: #"{"body":"from the first"}"#)
                #expect(created.status == 201)
                let text = try stream.readStream(until: "from the first")
                #expect(text.contains("event: note.created"))
            }
        }
    }

    @Test("the start-up line names the database (without its password) and the blob store")
    func startupLine() throws {
        let environment = ProcessInfo.processInfo.environment.merging(backend.credentials) { _, new in new }
        let server = try ServerProcess(backend.arguments, environment: environment)
        defer { server.signal(SIGTERM); _ = server.finish() }
        let line = try #require(server.stderrText.split(separator: "\n").first { $0.contains("listening on") }.map(String.init))
        #expect(line.contains(", database postgres"), "\(line)")
        #expect(line.hasSuffix(", uploads in \(backend.blobStoreURL)"), "\(line)")
    }

    @Test("/healthz names the database and the blob store")
    func health() throws {
        try TestApp.with(configure: backend.configure) { app in
            let health = try app.request("GET", "/healthz")
            #expect(health.status == 200, "\(health.text)")
            let checks = try #require(try health.json()["checks"] as? [String: String])
            #expect(checks["database"] == "ok")
            #expect(checks["blob_store"] == "ok")
        }
    }

    @Test("POST /admin/backups is 501 naming the database's own tools, and leaves no snapshot folder")
    func backupsAreTheDatabases() throws {
        try TestApp.with(configure: backend.configure) { app in
            let answer = try app.request("POST", "/admin/backups")
            #expect(answer.status == 501, "\(answer.text)")
            #expect(answer.header("Content-Type") == "application/problem+json")
            #expect(answer.text.contains("pg_dump"), "\(answer.text)")
            let snapshots = (try? FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("backups").path)) ?? []
            #expect(snapshots.isEmpty)
        }
    }

    @Test("a wrong S3 secret (a misconfiguration): uploads are a 500 with no row, /healthz says why")
    func wrongSecret() throws {
        try TestApp.with(configure: { configuration in
            backend.configure(&configuration)
            configuration.environment["AWS_SECRET_ACCESS_KEY"] = "wrong"
        }) { app in
            var parts = MultipartBuilder()
            parts.file("file", filename: "x.bin", body: [1, 2, 3])
            let refused = try RawHTTP(port: app.port).request(
                "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
                body: parts.finished(), close: true)
            #expect(refused.status == 500, "\(refused.text)")
            #expect((try app.request("GET", "/uploads").json()["uploads"] as? [Any])?.isEmpty == true)
            let health = try app.request("GET", "/healthz")
            #expect(health.status == 503)
            #expect(health.text.contains("blob_store"))
        }
    }
}

/// PostgreSQL taken away under a running server: every request that needs it is a `503` with
/// `Retry-After` (nothing half-stored), `/healthz` says the database is the reason, and once
/// PostgreSQL is back the server serves again by itself.
@Suite(
    "Server on PostgreSQL: database down", .tags(.timing), .serialized,
    .enabled(if: SharedBackend.available && PostgresRestart.program != nil, Comment(rawValue: SharedBackend.skipMessage)))
struct PostgresDownTests {
    @Test func unavailableThenBack() throws {
        let backend = try SharedBackend()
        try TestApp.with(configure: backend.configure) { app in
            let created = try app.request("POST", "/notes", headers: [("Content-Type", "application/json")], body: #"{"body":"kept"}"#)
            let id = try #require((try created.json()["note"] as? [String: Any])?["id"] as? String)
            try PostgresRestart.run("stop")
            var restarted = false
            defer { if !restarted { try? PostgresRestart.run("start") } }

            for (method, target, body) in [("GET", "/notes/\(id)", ""), ("GET", "/notes", ""), ("POST", "/notes", #"{"body":"lost"}"#)] {
                let refused = try app.request(method, target, headers: [("Content-Type", "application/json")], body: body)
                #expect(refused.status == 503, "\(method) \(target): \(refused.text)")
                #expect(refused.header("Retry-After") != nil, "\(method) \(target)")
                #expect(refused.header("Content-Type") == "application/problem+json")
                expectNoDatabaseAddress(refused, backend, "\(method) \(target)")
            }
            let health = try app.request("GET", "/healthz")
            #expect(health.status == 503)
            let checks = try health.json()["checks"] as? [String: String]
            // libpq's text names the host: the log has it, the public answer does not.
            #expect(checks?["database"] == "unavailable (the server's log says why)")
            #expect(checks?["blob_store"] == "ok")

            try PostgresRestart.run("start")
            restarted = true
            // Back by itself: the pool replaces its dead connections (a bound for "never", not a timing claim).
            let deadline = Date().addingTimeInterval(30)
            var last = try app.request("GET", "/notes/\(id)")
            while last.status != 200, Date() < deadline {
                usleep(200_000)
                last = try app.request("GET", "/notes/\(id)")
            }
            #expect(last.status == 200, "\(last.text)")
            #expect(try app.request("GET", "/healthz").status == 200)
            // The refused POST stored nothing.
            let bodies = try #require(try app.request("GET", "/notes").json()["notes"] as? [[String: Any]]).compactMap { $0["body"] as? String }
            #expect(bodies == ["kept"])
        }
    }

    /// libpq's error text names the database's host and port: the log has it (the answer's
    /// cause), an answer never does — before, every `503` carried it, to anonymous clients too.
    func expectNoDatabaseAddress(_ response: WireResponse, _ backend: SharedBackend, _ what: String) {
        let port = URLComponents(string: backend.databaseURL)?.port.map { "port \($0)" } ?? "connection to server"
        #expect(!response.text.contains(port) && !response.text.contains("connection to server"), "\(what): \(response.text)")
    }

    /// Waits until the server reads PostgreSQL again (a bound for "never", not a timing claim).
    func waitForDatabase(_ app: TestApp) throws {
        let deadline = Date().addingTimeInterval(30)
        while try app.request("GET", "/healthz").status != 200, Date() < deadline { usleep(200_000) }
    }

    @Test("--auth required, PostgreSQL down: a valid token and a correct sign-in are 503 with Retry-After, never 401")
    func authRequiredDuringOutage() throws {
        let backend = try SharedBackend()
        try TestApp.with(configure: {
            backend.configure(&$0); $0.auth = .required; $0.credentialRefreshInterval = 0
        }) { app in
            try app.addUser("ann", password: "correct horse")
            let token = try app.token("ann", password: "correct horse")
            #expect(try app.request("GET", "/notes", token: token).status == 200)
            try PostgresRestart.run("stop")
            var restarted = false
            defer { if !restarted { try? PostgresRestart.run("start") } }
            let read = try app.request("GET", "/notes", token: token)
            #expect(read.status == 503, "\(read.text)")
            #expect(read.header("Retry-After") != nil)
            #expect(read.header("WWW-Authenticate") == nil)
            expectNoDatabaseAddress(read, backend, "GET /notes with a token")
            expectNoDatabaseAddress(try app.request("GET", "/notes", token: "jot_unknown"), backend, "GET /notes with an unknown token")
            let signIn = try app.request(
                "POST", "/auth/sessions", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: "name=ann&password=correct+horse&kind=token")
            #expect(signIn.status == 503, "\(signIn.text)")
            #expect(signIn.header("Retry-After") != nil)
            expectNoDatabaseAddress(signIn, backend, "POST /auth/sessions")
            try PostgresRestart.run("start")
            restarted = true
            try waitForDatabase(app)
            #expect(try app.request("GET", "/notes", token: token).status == 200)
        }
    }

    @Test("--auth off, PostgreSQL down: a request is 503, and nothing of it is cached: notes written right after are the user's")
    func authOffDuringOutage() throws {
        let backend = try SharedBackend()
        try TestApp.with(configure: {
            backend.configure(&$0); $0.auth = .off; $0.credentialRefreshInterval = 60
        }) { app in
            try app.addUser("ann", password: "correct horse")  // the anonymous owner is read on the next request
            try PostgresRestart.run("stop")
            var restarted = false
            defer { if !restarted { try? PostgresRestart.run("start") } }
            let refused = try app.request("GET", "/notes")
            #expect(refused.status == 503, "\(refused.text)")
            #expect(refused.header("Retry-After") != nil)
            try PostgresRestart.run("start")
            restarted = true
            try waitForDatabase(app)
            let created = try app.request("POST", "/notes", headers: [("Content-Type", "application/json")], body: #"{"body":"after"}"#)
            #expect(created.status == 201, "\(created.text)")
            let token = try app.token("ann", password: "correct horse")
            let bodies = try #require(try app.request("GET", "/notes", token: token).json()["notes"] as? [[String: Any]])
                .compactMap { $0["body"] as? String }
            #expect(bodies == ["after"], "the note was stored for another owner than the one user")
        }
    }
}
