import Foundation
import Testing
import JotterHTTP
import JotterServer
import JotterTestSupport

/// HTTPS through libmicrohttpd's GnuTLS, with a certificate `openssl` makes for the test.
@Suite("HTTPS")
struct TLSTests {
    /// A self-signed certificate for 127.0.0.1 and its key, in a fresh folder.
    static func certificate() throws -> URL {
        let folder = try scratchFolder()
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder.path + "/key.pem",
                             "-out", folder.path + "/cert.pem", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2"]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        try #require(openssl.terminationStatus == 0, "openssl could not make a certificate")
        return folder
    }

    /// curl, verifying the server against `certificate`: status line, headers and body.
    static func curl(_ arguments: [String], certificate: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-i", "--cacert", certificate.path + "/cert.pem", "--max-time", "10"] + arguments
        // To a file, not a pipe: reading a pipe here can be interrupted (EINTR) and Foundation traps.
        let output = certificate.appendingPathComponent("curl-\(UUID().uuidString).out")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        return String(decoding: try Data(contentsOf: output), as: UTF8.self)
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
            let upload = try Self.curl(["-H", "Authorization: Bearer \(secret)", "-F", "file=@\(file.path)", base + "/uploads"], certificate: certificate)
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

    @Test("a head that leaves libmicrohttpd no room for the answer is answered over HTTPS too (431, once)")
    func crampedHeadOverTLS() throws {
        let certificate = try Self.certificate()
        defer { try? FileManager.default.removeItem(at: certificate) }
        try TestApp.with(configure: {
            $0.tlsCertificatePath = certificate.path + "/cert.pem"
            $0.tlsKeyPath = certificate.path + "/key.pem"
        }) { app in
            // Around the band where libmicrohttpd's pool has no room left for a header section
            // (docs/http-engine.md, "A head that nearly fills the pool").
            for length in stride(from: 7_700, through: 8_060, by: 30) {
                let answer = try Self.curl(["-H", "X-Big: " + String(repeating: "a", count: length), "https://127.0.0.1:\(app.port)/healthz"],
                                           certificate: certificate)
                #expect(answer.hasPrefix("HTTP/1.1 431 "), "X-Big of \(length) bytes: \(answer.prefix(40))")
                #expect(answer.components(separatedBy: "HTTP/1.1 ").count == 2, "X-Big of \(length) bytes")
            }
        }
    }
}
