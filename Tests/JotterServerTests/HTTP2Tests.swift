import Foundation
import Testing
import JotterHTTP
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// HTTP/2 (RFC 9113) on the engine: the conformance and protection cases of
/// Tests/HTTP2/conformance.py (the `h2` library from .venv-test, prior knowledge over a plain
/// socket), curl `--http2-prior-knowledge` and `--http2` over TLS against the API's endpoints,
/// and GOAWAY on a graceful stop.
@Suite("HTTP/2")
struct HTTP2Tests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".venv-test/bin/python")
    static let script = root.appendingPathComponent("Tests/HTTP2/conformance.py")

    static let cases = [
        "settings", "hello_and_methods", "form_post_and_expect", "body_too_large", "slow_stream_blocks_nothing",
        "flow_control_windows", "too_many_streams", "rapid_reset", "continuation_flood", "ping_flood",
        "oversized_header_list", "long_path", "malformed_requests", "bad_preface", "frame_size", "stream_states",
        "flow_control_errors", "hpack_errors", "settings_flood",
    ]

    /// Runs one case of the script against `port`; its last line (PASS, or FAIL: why).
    static func run(_ name: String, port: Int, ready: (() -> Void)? = nil) throws -> String {
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "run scripts/test-venv (make test does)")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("h2-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = try ChildProgram([python.path, script.path, String(port), name], output: .file(output))
        if let ready {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, !((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("READY") { usleep(20_000) }
            ready()
        }
        process.waitUntilExit()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").last.map(String.init) ?? "(no output)"
    }

    @Test("conformance and protection", arguments: HTTP2Tests.cases)
    func conformance(_ name: String) throws {
        try TestApp.with { app in
            let result = try Self.run(name, port: app.port)
            #expect(result == "PASS", "\(name): \(result)")
            #expect(app.app.requestsInFlight == 0 || Self.settles(app), "\(name) left requests in flight")
        }
    }

    @Test("a stream the peer opens no window for: the idle rule still ends the silent connection, nothing left in flight")
    func zeroWindowStall() throws {
        try TestApp.with(configure: { $0.idleTimeout = 2 }) { app in
            let result = try Self.run("zero_window_stall", port: app.port)
            #expect(result == "PASS", "\(result)")
            #expect(Self.settles(app), "the stalled stream is still in flight")
        }
    }

    static func settles(_ app: TestApp) -> Bool {
        let deadline = Date().addingTimeInterval(3)
        while app.app.requestsInFlight > 0, Date() < deadline { usleep(10_000) }
        return app.app.requestsInFlight == 0
    }

    @Test("a graceful stop sends GOAWAY (NO_ERROR) to an HTTP/2 connection with an open event stream")
    func gracefulStop() throws {
        let app = try TestApp()
        var stopped = false
        let result = try Self.run("graceful_stop", port: app.port) {
            app.stop()
            stopped = true
        }
        if !stopped { app.stop() }
        #expect(result == "PASS", "\(result)")
    }

    /// curl with `arguments`: status line, headers and body (the protocol curl spoke is on the
    /// status line).
    static func curl(_ arguments: [String]) throws -> String {
        try runProgram(["curl", "-s", "-i", "--max-time", "10"] + arguments, separateErrors: true).output
    }

    /// The API's endpoints through curl with `transport` (prior knowledge, or TLS with ALPN).
    static func endpoints(base: String, transport: [String]) throws {
        func call(_ arguments: String..., expect status: Int, _ what: String) throws -> String {
            let answer = try curl(transport + arguments)
            #expect(answer.hasPrefix("HTTP/2 \(status)"), "\(what): \(answer.prefix(200))")
            return answer
        }
        _ = try call(base + "/hello?name=Bob", expect: 200, "GET /hello")
        _ = try call("-d", "name=Bob", base + "/hello", expect: 200, "POST /hello")
        _ = try call("-d", "a=1&b=2", base + "/echo", expect: 200, "POST /echo form")
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("photo.jpg")
        try Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: file)
        _ = try call("-F", "file=@\(file.path)", base + "/echo", expect: 200, "POST /echo multipart")
        let created = try call("-d", "body=first", base + "/notes", expect: 201, "POST /notes")
        let id = try #require(created.firstMatch(of: /"id":"(\d+)"/).map { String($0.output.1) })
        _ = try call(base + "/notes", expect: 200, "GET /notes")
        let shown = try call(base + "/notes/\(id)", expect: 200, "GET /notes/{id}")
        let etag = try #require(shown.firstMatch(of: /(?i)etag: ("[^"]+")/).map { String($0.output.1) })
        _ = try call("-H", "If-None-Match: \(etag)", base + "/notes/\(id)", expect: 304, "GET /notes/{id} If-None-Match")
        _ = try call("-X", "PUT", "-d", "body=second", base + "/notes/\(id)", expect: 200, "PUT /notes/{id}")
        _ = try call("-d", "_method=PATCH&body=third", base + "/notes/\(id)", expect: 200, "POST _method=PATCH")
        let upload = try call("-F", "file=@\(file.path)", base + "/uploads", expect: 201, "POST /uploads")
        let uploadID = try #require(upload.firstMatch(of: /"id":"([0-9a-f]+)"/).map { String($0.output.1) })
        _ = try call(base + "/uploads", expect: 200, "GET /uploads")
        let content = try call(base + "/uploads/\(uploadID)/content", expect: 200, "GET /uploads/{id}/content")
        #expect(content.contains("content-length: 200000"))
        _ = try call("-r", "100-199", base + "/uploads/\(uploadID)/content", expect: 206, "GET a range")
        _ = try call("-I", base + "/uploads/\(uploadID)/content", expect: 200, "HEAD /uploads/{id}/content")
        _ = try call("-X", "PATCH", "-d", "note_id=\(id)", base + "/uploads/\(uploadID)", expect: 200, "attach")
        _ = try call("-X", "DELETE", base + "/uploads/\(uploadID)", expect: 200, "DELETE /uploads/{id}")
        _ = try call("-X", "DELETE", base + "/notes/\(id)", expect: 200, "DELETE /notes/{id}")
        _ = try call(base + "/notes/\(id)", expect: 404, "GET a deleted note")
        _ = try call("-X", "DELETE", base + "/hello", expect: 405, "DELETE /hello")
        _ = try call(base + "/healthz", expect: 200, "GET /healthz")
        _ = try call(base + "/openapi.json", expect: 200, "GET /openapi.json")
        _ = try call(base + "/", expect: 200, "GET / (the web app)")
        _ = try call(base + "/echo", expect: 200, "GET /echo (the form page)")
        _ = try call(base + "/metrics", expect: 200, "GET /metrics")
    }

    @Test("curl --http2-prior-knowledge: every endpoint of the API answers over HTTP/2")
    func priorKnowledge() throws {
        try TestApp.with { app in
            try Self.endpoints(base: "http://127.0.0.1:\(app.port)", transport: ["--http2-prior-knowledge"])
            // HTTP/1.1 on the same port still works.
            #expect(try Self.curl(["--http1.1", "http://127.0.0.1:\(app.port)/hello?name=x"]).hasPrefix("HTTP/1.1 200"))
        }
    }

    @Test(
        "curl --http2-prior-knowledge on PostgreSQL + S3, where the routes run on the store's threads: every endpoint answers",
        .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
    func priorKnowledgeOnPostgres() throws {
        let backend = try SharedBackend()
        try TestApp.with(configure: backend.configure) { app in
            try Self.endpoints(base: "http://127.0.0.1:\(app.port)", transport: ["--http2-prior-knowledge"])
        }
    }

    @Test("metrics count requests and open connections by protocol; the access log names HTTP/2.0")
    func protocolInMetricsAndLog() throws {
        let server = try ServerProcess()
        defer { server.finish() }
        let base = "http://127.0.0.1:\(server.port)"
        for _ in 0..<3 { _ = try Self.curl(["--http2-prior-knowledge", base + "/hello?name=h2"]) }
        _ = try Self.curl(["--http1.1", base + "/hello?name=h1"])
        let metrics = try Self.curl(["--http2-prior-knowledge", base + "/metrics"])
        #expect(metrics.contains(#"jotter_http_requests_by_protocol_total{protocol="HTTP/2"} 3"#), "\(metrics.suffix(1500))")
        #expect(metrics.contains(#"jotter_http_requests_by_protocol_total{protocol="HTTP/1.1"} 1"#))
        // Once the server has seen curl's earlier connections close, the /metrics request's own
        // is the one connection open, and it speaks HTTP/2.
        let settled = #/jotter_http_connections\{protocol="HTTP/1"\} 0\njotter_http_connections\{protocol="HTTP/2"\} 1\n/#
        var gauges = metrics
        let deadline = Date().addingTimeInterval(5)
        while !gauges.contains(settled), Date() < deadline {
            usleep(50_000)
            gauges = try Self.curl(["--http2-prior-knowledge", base + "/metrics"])
        }
        #expect(gauges.contains(settled), "\(gauges.suffix(400))")
        server.signal(SIGKILL)
        let log = server.finish().log
        #expect(log.contains(#""GET /hello?name=h2 HTTP/2.0" 200"#), "\(log.suffix(800))")
        #expect(log.contains(#""GET /hello?name=h1 HTTP/1.1" 200"#))
    }

    @Test("HTTPS: ALPN picks h2 for curl --http2, http/1.1 for --http1.1; every endpoint answers over h2")
    func overTLS() throws {
        let certificate = try TLSTests.certificate()
        defer { try? FileManager.default.removeItem(at: certificate) }
        try TestApp.with(configure: {
            $0.tlsCertificatePath = certificate.path + "/cert.pem"
            $0.tlsKeyPath = certificate.path + "/key.pem"
        }) { app in
            let base = "https://127.0.0.1:\(app.port)"
            let cacert = ["--cacert", certificate.path + "/cert.pem"]
            try Self.endpoints(base: base, transport: cacert + ["--http2"])
            let plain = try Self.curl(cacert + ["--http1.1", base + "/hello?name=x"])
            #expect(plain.hasPrefix("HTTP/1.1 200"))
            let h2 = try Self.curl(cacert + ["--http2", base + "/hello?name=x"])
            #expect(h2.contains("strict-transport-security: max-age=31536000"))
        }
    }
}
