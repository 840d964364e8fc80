import Foundation
import Glibc
import Testing
import JotterServerTestSupport
import JotterSystem
import JotterTestSupport

/// `/echo`: the request as JSON, shaped like httpbin's `/anything`.
@Suite("Echo")
struct EchoTests {
    struct Sample: Sendable, CustomTestStringConvertible {
        var name: String
        var method: String
        var target: String
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        var testDescription: String { name }
    }

    static let samples: [Sample] = {
        var multipart = MultipartBuilder()
        multipart.field("a", "1")
        multipart.field("a", "2 & 3 = 5")
        multipart.field("é", "ü")
        multipart.file("doc", filename: "notes.txt", contentType: "text/plain", body: Array("hello\n".utf8))
        multipart.file("doc", filename: "more.txt", contentType: "text/plain", body: Array("more\n".utf8))
        return [
            Sample(name: "query with repeated keys", method: "GET", target: "/echo?a=1&a=2&b=3&empty=&plus=a+b&pct=%C3%A9%26"),
            Sample(
                name: "form body", method: "POST", target: "/echo?q=1", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Array("a=1&a=2&b=x%26y&c=%E2%82%AC&d=a+b".utf8)),
            Sample(
                name: "multipart fields and files", method: "POST", target: "/echo",
                headers: [("Content-Type", multipart.contentType)], body: multipart.finished()),
            Sample(
                name: "JSON object", method: "POST", target: "/echo", headers: [("Content-Type", "application/json")],
                body: Array(#"{"k":[1,2,{"n":null}],"s":"é","t":true,"f":1.5}"#.utf8)),
            Sample(
                name: "JSON array on PATCH", method: "PATCH", target: "/echo", headers: [("Content-Type", "application/json")],
                body: Array("[1,2,3]".utf8)),
            Sample(
                name: "raw text on PUT", method: "PUT", target: "/echo", headers: [("Content-Type", "text/plain")],
                body: Array("hello\nworld".utf8)),
            Sample(
                name: "octet stream", method: "POST", target: "/echo", headers: [("Content-Type", "application/octet-stream")],
                body: Array("plain bytes".utf8)),
            Sample(name: "DELETE without a body", method: "DELETE", target: "/echo?x=y"),
        ]
    }()

    static func send(_ sample: Sample, port: Int, pathPrefix: String = "") throws -> [String: Any] {
        let target = pathPrefix.isEmpty ? sample.target : sample.target.replacingOccurrences(of: "/echo", with: pathPrefix)
        return try RawHTTP(port: port).request(sample.method, target, headers: sample.headers, body: sample.body, close: true).json()
    }

    /// `/echo` needs no credentials: a file it received must hold no storage, however long the
    /// request lasts (a body sent fast, then a byte now and then, would otherwise keep its file in
    /// `tmp/` for days).
    @Test("a file part is hashed as it streams and never written to tmp/, even while its request is open")
    func filesHoldNoDisk() throws {
        try TestApp.with { app in
            let tmp = app.dataDirectory.appendingPathComponent("tmp").path
            let content = [UInt8](repeating: 0x61, count: 3 << 20)
            var multipart = MultipartBuilder()
            multipart.file("big", filename: "big.bin", body: content)
            let body = multipart.finished()
            let connection = try RawHTTP(port: app.port, timeout: 30)
            try connection.send(
                "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: \(multipart.contentType)\r\n"
                    + "Content-Length: \(body.count)\r\n\r\n")
            // All but the closing boundary: sent only once the server has read most of it
            // (the socket buffers hold far less than 3 MiB).
            try connection.send(Array(body.dropLast(64)))
            #expect(try FileManager.default.contentsOfDirectory(atPath: tmp).isEmpty, "a file in tmp/ for an open /echo request")
            try connection.send(Array(body.suffix(64)))
            let echo = try connection.readResponse().json()
            let file = try #require((echo["files"] as? [String: Any])?["big"] as? [String: Any])
            #expect(file["size"] as? Int == content.count)
            var hash = SHA256()
            content.withUnsafeBytes { hash.update($0) }
            let digest = hash.finish()
            #expect(file["sha256"] as? String == digest)
        }
    }

    @Test("credentials are not echoed: Cookie and Proxy-Authorization are [redacted]")
    func credentialsRedacted() throws {
        try TestApp.with { app in
            let echo = try RawHTTP(port: app.port).request(
                "GET", "/echo", headers: [("Cookie", "jotter_session=secret; theme=dark"), ("Proxy-Authorization", "Basic c2VjcmV0")],
                close: true
            ).json()
            let headers = try #require(echo["headers"] as? [String: String])
            #expect(headers["Cookie"] == "[redacted]")
            #expect(headers["Proxy-Authorization"] == "[redacted]")
            #expect(headers["Accept"] == nil && headers["Host"] != nil, "other fields as sent")
        }
    }

    @Test("fields are shaped as the contract says")
    func shape() throws {
        try TestApp.with { app in
            let echo = try Self.send(Self.samples[2], port: app.port)
            #expect(echo["method"] as? String == "POST")
            #expect(echo["url"] as? String == "/echo")
            #expect((echo["form"] as? NSDictionary) == (["a": ["1", "2 & 3 = 5"], "é": "ü"] as NSDictionary))
            let files = try #require(echo["files"] as? [String: [[String: Any]]])
            let docs = try #require(files["doc"])
            #expect(docs.map { $0["filename"] as? String } == ["notes.txt", "more.txt"])
            #expect(docs.first?["size"] as? Int == 6)
            #expect(docs.first?["content_type"] as? String == "text/plain")
            #expect(docs.first?["sha256"] as? String == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03")
            #expect(echo["json"] is NSNull)
            #expect(echo["data"] as? String == "")
            #expect((echo["headers"] as? [String: String])?["Content-Type"]?.hasPrefix("multipart/form-data") == true)
        }
    }

    @Test("any method, the override header, any content type, binary data as a data: URL")
    func methods() throws {
        try TestApp.with { app in
            for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
                #expect(try app.request(method, "/echo").json()["method"] as? String == method)
            }
            let overridden = try app.request("POST", "/echo", headers: [("X-HTTP-Method-Override", "DELETE")]).json()
            #expect(overridden["method"] as? String == "DELETE")
            // A _method field in a streamed body does not override.
            #expect(try app.request("POST", "/echo", body: "_method=PUT").json()["method"] as? String == "POST")
            let binary = try RawHTTP(port: app.port).request(
                "POST", "/echo", headers: [("Content-Type", "application/x-thing")],
                body: [0xFF, 0xFE, 0x00, 0x41], close: true
            ).json()
            #expect(binary["data"] as? String == "data:application/octet-stream;base64,//4AQQ==")
            #expect(try app.request("HEAD", "/echo").status == 200)
            #expect(try app.request("TRACE", "/echo").status == 405)
        }
    }

    /// The same requests to httpbin (from PyPI, started here) and to jotter: `args`, `form`,
    /// `json`, `data` and `method` must agree. Deliberate differences, documented in
    /// docs/API.md: file parts report metadata and a digest instead of their content, `url` is
    /// the request-target, and a body without Content-Type is read as a form.
    @Test("agrees with httpbin", arguments: samples)
    func httpbinParity(_ sample: Sample) throws {
        let httpbin = try HTTPBin.shared.get()
        try TestApp.with { app in
            let ours = try Self.send(sample, port: app.port)
            let theirs = try Self.send(sample, port: httpbin.port, pathPrefix: "/anything")
            for key in ["method", "args", "form", "json", "data"] {
                #expect(
                    NSDictionary(dictionary: [key: ours[key] ?? NSNull()]) == NSDictionary(dictionary: [key: theirs[key] ?? NSNull()]),
                    "\(key): jotter \(ours[key] ?? "nil") httpbin \(theirs[key] ?? "nil")")
            }
            #expect(Set((ours["files"] as? [String: Any] ?? [:]).keys) == Set((theirs["files"] as? [String: Any] ?? [:]).keys))
        }
    }
}

/// httpbin from `.venv-test` (made by `scripts/test-venv`, which `make test` runs), on a free port.
final class HTTPBin: Sendable {
    let port: Int
    let process: ChildProgram

    static let shared = Result { try HTTPBin() }

    init() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let python = root.appendingPathComponent(".venv-test/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw RawHTTP.Failure(message: "httpbin is not installed: run scripts/test-venv (make test does)")
        }
        // A free port: bind to 0, read it, release it for httpbin.
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        close(probe)
        // PR_SET_PDEATHSIG (1) with SIGKILL (9): httpbin ends with the test process.
        process = try ChildProgram(
            [
                python.path, "-c",
                "import ctypes, logging; ctypes.CDLL(None).prctl(1, 9); logging.disable(logging.CRITICAL); "
                    + "from httpbin import app; app.run(host='127.0.0.1', port=\(port))",
            ], output: .discard)
        let deadline = Date().addingTimeInterval(20)
        while (try? RawHTTP(port: port, timeout: 1)) == nil {
            guard Date() < deadline, process.isRunning else { throw RawHTTP.Failure(message: "httpbin did not start") }
            usleep(50_000)
        }
    }
}
