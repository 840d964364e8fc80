import Foundation
import Glibc
import Testing
import JotterTestSupport

/// The access log's line, as docs/deployment.md shows it: time, address, request line, status,
/// body bytes, milliseconds, request id, and how it ended when it did not end well.
@Suite("Access log", .serialized)
struct AccessLogTests {
    nonisolated(unsafe) static let line =
        #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ 127\.0\.0\.1 "(?<request>[^"]*)" (?<status>\d{3}) (?<bytes>\d+) \d+\.\d{3}ms id=(?<id>[A-Za-z0-9._~-]+)(?<outcome> [a-z-]+)?$/#

    func lines(_ server: ServerProcess, containing text: String) -> [String] {
        let deadline = Date().addingTimeInterval(5)
        while true {
            let lines = server.stderrText.split(separator: "\n").map(String.init).filter { $0.contains(text) }
            if !lines.isEmpty || Date() > deadline { return lines }
            usleep(20_000)
        }
    }

    @Test("one line per request, every field where it belongs")
    func lineFormat() throws {
        let server = try ServerProcess()
        defer { server.signal(SIGTERM); server.finish() }
        let hello = try RawHTTP(port: server.port).request("GET", "/hello?name=Logged", headers: [("X-Request-Id", "chosen-id-1")], close: true)
        #expect(hello.status == 200)
        let found = lines(server, containing: "/hello?name=Logged")
        #expect(found.count == 1)
        let match = try #require(try Self.line.wholeMatch(in: found.first ?? ""), "\(found)")
        #expect(match.request == "GET /hello?name=Logged HTTP/1.1")
        #expect(match.status == "200" && match.bytes == "\(hello.body.count)" && match.id == "chosen-id-1" && match.outcome == nil)

        let missing = try RawHTTP(port: server.port).request("GET", "/nowhere/at/all", close: true)
        #expect(missing.status == 404)
        let notFound = try #require(try Self.line.wholeMatch(in: lines(server, containing: "/nowhere/at/all").first ?? ""))
        #expect(notFound.status == "404" && notFound.bytes == "\(missing.body.count)")
    }

    @Test("a 413 is logged once more, with the limit it met: the status alone does not tell which")
    func refusalReasons() throws {
        let server = try ServerProcess(["--max-body-size", "1000"])
        defer {
            _ = server.signal(SIGTERM)
            _ = server.finish()
        }
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        let boundary = "log-boundary"
        let multipart =
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n\(String(repeating: "m", count: 1500))\r\n--\(boundary)--\r\n"
        let cases: [(id: String, method: String, headers: [(String, String)], body: String, reason: String)] = [
            (
                "limit-body", "POST", form, "name=" + String(repeating: "a", count: 2000),
                "the request body is larger than the limit of 1000 bytes (--max-body-size)"
            ),
            ("limit-none", "GET", form, "name=x", "GET /hello takes no request body"),
            (
                "limit-fields", "POST", [("Content-Type", "multipart/form-data; boundary=\(boundary)")], multipart,
                "the form fields are larger than the limit of 1000 bytes (--max-body-size)"
            ),
        ]
        for refused in cases {
            let response = try RawHTTP(port: server.port).request(
                refused.method, "/hello", headers: refused.headers + [("X-Request-Id", refused.id)], body: Array(refused.body.utf8), close: true)
            #expect(response.status == 413, "\(refused.id): \(response.text)")
            #expect((try? response.json()["detail"] as? String) == refused.reason, "\(response.text)")
            let logged = lines(server, containing: "request \(refused.id) ")
            #expect(logged.count == 1, "\(refused.id): \(logged)")
            #expect(
                logged.first?.contains(" warning request \(refused.id) \(refused.method) /hello answered 413: \(refused.reason)") == true, "\(logged)"
            )
        }
    }
}
