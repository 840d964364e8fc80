import Foundation
import Glibc
import Testing
import JotterHTTP
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// HTTPS on the engine's OpenSSL sessions, with certificates `openssl` makes for the test.
@Suite("HTTPS")
struct TLSTests {
    /// A self-signed certificate for 127.0.0.1 and its key, in a fresh folder.
    static func certificate() throws -> URL {
        let folder = try scratchFolder()
        try makeCertificate(in: folder)
        return folder
    }

    /// Writes cert.pem and key.pem (a new key and a new self-signed certificate) into `folder`.
    static func makeCertificate(in folder: URL) throws {
        let openssl = try runProgram([
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder.path + "/key.pem",
            "-out", folder.path + "/cert.pem", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2",
        ])
        try #require(openssl.status == 0, "openssl could not make a certificate: \(openssl.output)")
    }

    /// curl over HTTP/1.1, verifying the server against `certificate`: status line, headers and
    /// body. (HTTP/2, which curl would pick by ALPN, has HTTP2Tests.)
    static func curl(_ arguments: [String], certificate: URL) throws -> String {
        try HTTP2Tests.curl(["--http1.1", "--cacert", certificate.path + "/cert.pem"] + arguments)
    }

    @Test("serves HTTPS with HSTS; the session cookie is Secure; uploads and the API work; plain HTTP gets nothing")
    func https() throws {
        let certificate = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: certificate) }
        try TestApp.with(configure: {
            $0.tlsCertificatePath = certificate.path + "/cert.pem"
            $0.tlsKeyPath = certificate.path + "/key.pem"
            $0.auth = .required
        }) { app in
            #expect(app.app.url.hasPrefix("https://127.0.0.1:"))
            let base = "https://127.0.0.1:\(app.port)"
            let health = try Self.curl([base + "/healthz"], certificate: certificate)
            #expect(health.hasPrefix("HTTP/1.1 200"))
            #expect(health.contains("Strict-Transport-Security: max-age=31536000"))
            try app.addUser("ann", password: "ann's password")
            let session = try Self.curl(["-d", "name=ann&password=ann%27s%20password", base + "/auth/sessions"], certificate: certificate)
            #expect(session.hasPrefix("HTTP/1.1 201"))
            #expect(session.contains("; HttpOnly; SameSite=Lax; Secure"))
            let token = try Self.curl(["-d", "name=ann&password=ann%27s%20password&kind=token", base + "/auth/sessions"], certificate: certificate)
            let secret = try #require(token.firstMatch(of: /jot_[0-9A-Za-z]{36}/).map { String($0.output) })
            let file = certificate.appendingPathComponent("file.txt")
            try Data(repeating: 0x61, count: 300_000).write(to: file)
            let upload = try Self.curl(
                ["-H", "Authorization: Bearer \(secret)", "-F", "file=@\(file.path)", base + "/uploads"], certificate: certificate)
            #expect(upload.hasPrefix("HTTP/1.1 201"), "\(upload.prefix(300))")
            #expect(upload.contains("\"size\":300000"))
            // A plain-HTTP request to the HTTPS port is not served.
            let plain = try? RawHTTP(port: app.port, timeout: 3).request("GET", "/healthz", close: true)
            #expect(plain?.status != 200)
        }
    }

    @Test("a certificate without its key, or a file that is not PEM, refuses to start in words")
    func badFiles() throws {
        let certificate = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: certificate) }
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = certificate.path + "/data"
        configuration.tlsCertificatePath = certificate.path + "/cert.pem"
        #expect(throws: ServerStartError.self) { try buildApplication(configuration) }
        configuration.tlsKeyPath = certificate.path + "/cert.pem"  // a certificate where the key should be
        let app = try buildApplication(configuration)
        #expect(throws: ServerStartError.self) { try app.start() }
        app.shutdown()
    }

    @Test("heads around 8 KiB over HTTPS: 431 once each, as over plain HTTP")
    func largeHeadsOverTLS() throws {
        let certificate = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: certificate) }
        try TestApp.with(configure: {
            $0.tlsCertificatePath = certificate.path + "/cert.pem"
            $0.tlsKeyPath = certificate.path + "/key.pem"
        }) { app in
            for length in stride(from: 7_700, through: 8_060, by: 90) {
                let answer = try Self.curl(
                    ["-H", "X-Big: " + String(repeating: "a", count: length), "https://127.0.0.1:\(app.port)/healthz"],
                    certificate: certificate)
                #expect(answer.hasPrefix("HTTP/1.1 431 "), "X-Big of \(length) bytes: \(answer.prefix(40))")
                #expect(answer.components(separatedBy: "HTTP/1.1 ").count == 2, "X-Big of \(length) bytes")
            }
        }
    }

    @Test("a connection closed before its handshake is closed at once (the loop does not spin on it until the deadline)")
    func closedBeforeHandshake() throws {
        let certificate = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: certificate) }
        try TestApp.with(configure: {
            $0.tlsCertificatePath = certificate.path + "/cert.pem"
            $0.tlsKeyPath = certificate.path + "/key.pem"
        }) { app in
            for _ in 0..<5 {
                let connection = try RawHTTP(port: app.port, timeout: 2)
                _ = connection  // connected, then closed without a byte
            }
            let deadline = Date().addingTimeInterval(2)  // the header deadline is 10 s
            while app.app.openConnections > 0, Date() < deadline { usleep(20_000) }
            #expect(app.app.openConnections == 0)
        }
    }

    @Test("pipelined requests over one TLS connection are answered in order; an event stream over HTTPS gets its event")
    func pipeliningAndEventsOverTLS() throws {
        let certificate = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: certificate) }
        try TestApp.with(configure: {
            $0.tlsCertificatePath = certificate.path + "/cert.pem"
            $0.tlsKeyPath = certificate.path + "/key.pem"
        }) { app in
            let session = try TLSClient(port: app.port)
            defer { session.stop() }
            session.send(
                "GET /hello?name=One HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /hello?name=Two HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    + "GET /hello?name=Three HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let answers = session.wait(until: { $0.contains("Hello Three!") })
            let order = ["Hello One!", "Hello Two!", "Hello Three!"].map { answers.range(of: $0)?.lowerBound }
            #expect(order.allSatisfy { $0 != nil } && order[0]! < order[1]! && order[1]! < order[2]!, "\(answers)")

            let events = try TLSClient(port: app.port)
            defer { events.stop() }
            events.send("GET /notes/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(events.wait(until: { $0.contains("text/event-stream") }).contains("200 OK"))
            _ = try Self.curl(["-d", "body=over TLS", "https://127.0.0.1:\(app.port)/notes"], certificate: certificate)
            #expect(events.wait(until: { $0.contains("over TLS") }).contains("event: note.created"))
        }
    }

    @Test("SIGHUP: new connections get the renewed certificate, an open connection goes on; unusable files keep the previous one")
    func reloadOnSIGHUP() throws {
        let first = try Self.certificate()
        let folder = try scratchFolder()
        defer {
            try? FileManager.default.removeItem(at: first)
            try? FileManager.default.removeItem(at: folder)
        }
        for name in ["cert.pem", "key.pem"] {
            try FileManager.default.copyItem(at: first.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        let server = try ServerProcess(["--tls-cert", folder.path + "/cert.pem", "--tls-key", folder.path + "/key.pem"])
        defer {
            server.signal(SIGTERM)
            _ = server.finish()
        }
        let base = "https://127.0.0.1:\(server.port)"
        #expect(try Self.curl([base + "/healthz"], certificate: first).hasPrefix("HTTP/1.1 200"))
        let open = try TLSClient(port: server.port)
        defer { open.stop() }
        open.send("GET /hello?name=Before HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(open.wait(until: { $0.contains("Hello Before!") }).contains("Hello Before!"))

        // Renewed: a new key and certificate written over the files, then SIGHUP.
        let renewed = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: renewed) }
        try Self.makeCertificate(in: renewed)
        for name in ["cert.pem", "key.pem"] {
            try Data(contentsOf: renewed.appendingPathComponent(name)).write(to: folder.appendingPathComponent(name))
        }
        #expect(server.signal(SIGHUP))
        #expect(Self.waitFor(server, "TLS certificate reloaded"))
        #expect(try Self.curl([base + "/healthz"], certificate: renewed).hasPrefix("HTTP/1.1 200"))
        #expect(try Self.curl([base + "/healthz"], certificate: first).isEmpty, "the old certificate is no longer served")
        // The connection opened before the reload still works.
        open.send("GET /hello?name=After HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(open.wait(until: { $0.contains("Hello After!") }).contains("Hello After!"))

        // A broken key: the server says so and keeps serving the renewed certificate.
        try Data("not a key".utf8).write(to: folder.appendingPathComponent("key.pem"))
        #expect(server.signal(SIGHUP))
        #expect(Self.waitFor(server, "the previous one stays"))
        #expect(try Self.curl([base + "/healthz"], certificate: renewed).hasPrefix("HTTP/1.1 200"))
        #expect(server.isRunning)
    }

    /// A line of the server's own: `2026-11-30T14:35:40Z info …` (or `warning`, `error`).
    nonisolated(unsafe) static let logLine = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (info|warning|error) \S.*$/#
    /// An access-log line: `2026-11-30T14:35:40Z 127.0.0.1 "GET / HTTP/1.1" 200 10 0.085ms id=k3x9a-12`.
    nonisolated(unsafe) static let accessLine =
        #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \S+ "(?<method>[^ "]*) (?<target>[^ "]*) (?<version>[^ "]*)" (?<status>\d{3}) \d+ \d+\.\d{3}ms id=(?<id>\S+)( [a-z-]+)?$/#

    @Test("plain HTTP to the HTTPS port: 400 with a request id, logged with it and a target that says what happened")
    func plainHTTPLogged() throws {
        let certificate = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: certificate) }
        let server = try ServerProcess(["--tls-cert", certificate.path + "/cert.pem", "--tls-key", certificate.path + "/key.pem"])
        defer { server.signal(SIGTERM); _ = server.finish() }
        let plain = try RawHTTP(port: server.port, timeout: 5).request("GET", "/healthz", close: true)
        #expect(plain.status == 400)
        let id = try #require(try plain.json()["request_id"] as? String)
        #expect(id != "-" && plain.header("X-Request-Id") == id)
        #expect(Self.waitFor(server, "id=\(id)"))
        let line = try #require(
            server.stderrText.split(separator: "\n").map(String.init).first { $0.hasSuffix("id=\(id)") || $0.contains("id=\(id) ") })
        let match = try #require(try Self.accessLine.wholeMatch(in: line), "\(line)")
        #expect(match.target == "<plain-http-on-https-port>" && match.status == "400", "\(line)")
    }

    @Test("every line the server writes — start, SIGHUP failures, SIGTERM, stopped — has its time and level, or is an access-log line")
    func everyLineInOneFormat() throws {
        let certificate = try Self.certificate()
        let folder = try scratchFolder()
        defer {
            try? FileManager.default.removeItem(at: certificate)
            try? FileManager.default.removeItem(at: folder)
        }
        for name in ["cert.pem", "key.pem"] {
            try FileManager.default.copyItem(at: certificate.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        let server = try ServerProcess(["--tls-cert", folder.path + "/cert.pem", "--tls-key", folder.path + "/key.pem"])
        #expect(try Self.curl(["https://127.0.0.1:\(server.port)/healthz"], certificate: certificate).hasPrefix("HTTP/1.1 200"))
        try Data("not a key".utf8).write(to: folder.appendingPathComponent("key.pem"))
        #expect(server.signal(SIGHUP))
        #expect(Self.waitFor(server, "the previous one stays"))
        #expect(server.signal(SIGTERM))
        let (status, log) = server.finish()
        #expect(status == 0)
        let lines = log.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains(" error SIGHUP: the new certificate was not loaded") }, "\(log)")
        #expect(lines.contains { $0.hasSuffix(" info SIGTERM received: finishing requests in flight, then stopping") }, "\(log)")
        #expect(lines.last?.hasSuffix(" info stopped") == true, "\(log)")
        for line in lines {
            #expect((try? Self.logLine.wholeMatch(in: line)) != nil || (try? Self.accessLine.wholeMatch(in: line)) != nil, "\(line)")
        }
    }

    static func waitFor(_ server: ServerProcess, _ text: String) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if server.stderrText.contains(text) { return true }
            usleep(20_000)
        }
        return false
    }
}

/// One TLS connection held open by `openssl s_client`: what is sent goes out on it, what
/// comes back collects in a file.
final class TLSClient: Sendable {
    private let process: ChildProgram
    /// The write end of its standard input's pipe.
    private let input: Int32
    private let output: URL

    init(port: Int) throws {
        output = FileManager.default.temporaryDirectory.appendingPathComponent("tls-client-\(UUID().uuidString).out")
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw RawHTTP.Failure(message: "pipe: \(String(cString: strerror(errno)))") }
        defer { close(ends[0]) }
        input = ends[1]
        do {
            // The certificate is checked by curl in the tests; s_client only holds the connection.
            process = try ChildProgram(
                ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-quiet", "-alpn", "http/1.1"],
                input: .descriptor(ends[0]), output: .file(output), errors: .discard)
        } catch {
            close(ends[1])
            throw error
        }
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// What arrived so far once `done` says it is complete, or after 10 seconds.
    func wait(until done: (String) -> Bool) -> String {
        let deadline = Date().addingTimeInterval(10)
        var text = ""
        repeat {
            text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            if done(text) { return text }
            usleep(20_000)
        } while Date() < deadline
        return text
    }

    func stop() {
        process.stop()
        close(input)
        try? FileManager.default.removeItem(at: output)
    }
}
