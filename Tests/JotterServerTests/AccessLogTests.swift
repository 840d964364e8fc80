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
}
