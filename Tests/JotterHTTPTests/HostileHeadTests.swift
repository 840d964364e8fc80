import Foundation
import Glibc
import Testing
import JotterTestSupport

/// Request heads an attacker shapes to exhaust libmicrohttpd's per-connection memory or to
/// make headers mean something else: each gets an answer, and nothing stays in flight.
@Suite("Hostile request heads")
struct HostileHeadTests {
    /// Waits (bounded) for every request to complete, so a leaked request fails the test.
    private func expectNothingInFlight(_ fixture: EngineFixture) {
        let deadline = Date.now.addingTimeInterval(2)
        while fixture.server.requestsInFlight > 0, Date.now < deadline { usleep(5_000) }
        #expect(fixture.server.requestsInFlight == 0)
    }

    @Test("many query parameters are answered like any request", arguments: [118, 125, 200, 700])
    func manyQueryParameters(_ count: Int) throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect(timeout: 3)
        let query = (0..<count).map { "a\($0)=1" }.joined(separator: "&")
        try connection.send("GET /hello?\(query) HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "hello")
        // The connection stays usable.
        try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
        expectNothingInFlight(fixture)
    }

    @Test("a long request-target is 414", arguments: [5_900, 6_100, 7_000, 7_500])
    func longTargets(_ length: Int) throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect(timeout: 3)
        try connection.send("GET /hello?x=\(String(repeating: "a", count: length - 9)) HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == (length > 6000 ? 414 : 200), "\(response.raw.prefix(80))")
        if length > 6000 {
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.header("Connection")?.lowercased() == "close")
        }
        expectNothingInFlight(fixture)
    }

    @Test("a target that fills the connection's memory is answered or closed at once, and completes",
          arguments: [7_900, 8_080, 8_120, 8_175, 8_300])
    func targetsFillingTheMemory(_ length: Int) throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect(timeout: 2)
        try connection.send("GET /hello?x=\(String(repeating: "a", count: length - 9)) HTTP/1.1\r\nHost: x\r\n\r\n")
        if let response = try? connection.readResponse() {
            #expect([414, 431].contains(response.status), "\(response.status)")
            #expect(response.raw.components(separatedBy: "HTTP/1.1 ").count == 2)
        }
        #expect(connection.isClosedByServer())
        expectNothingInFlight(fixture)
    }

    @Test("a large header section is 431", arguments: [6_600, 7_000, 7_400])
    func largeHeaderSection(_ length: Int) throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect(timeout: 3)
        try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: length))\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 431)
        #expect(response.header("Content-Type") == "application/problem+json")
        // Sent once: one status line on the wire.
        #expect(response.raw.components(separatedBy: "HTTP/1.1 ").count == 2)
        expectNothingInFlight(fixture)
    }

    @Test("many small header fields are 431", arguments: [100, 300, 1000])
    func manyHeaderFields(_ count: Int) throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect(timeout: 3)
        let fields = (0..<count).map { "a\($0): b\r\n" }.joined()
        try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\n\(fields)\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 431)
        #expect(response.raw.components(separatedBy: "HTTP/1.1 ").count == 2)
        expectNothingInFlight(fixture)
    }

    @Test("a head that fills the connection's memory is closed, and completes")
    func headFillingTheMemory() throws {
        let fixture = try EngineFixture()
        // Every size from just under the connection's memory to past it: each connection gets
        // an answer (431, 414) or is closed — none is left waiting for the idle timeout.
        for length in stride(from: 7_500, through: 8_400, by: 20) {
            let connection = try fixture.connect(timeout: 2)
            try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: length))\r\n\r\n")
            if let response = try? connection.readResponse() {
                #expect([414, 431].contains(response.status), "\(length): \(response.status)")
            }
            #expect(connection.isClosedByServer(), "\(length)")
        }
        expectNothingInFlight(fixture)
    }

    @Test("obsolete line folding is refused with 400 and the connection closed",
          arguments: ["GET /hello HTTP/1.1\r\nHost: x\r\nX-Foo: a\r\n b\r\n\r\n",
                      "GET /hello HTTP/1.1\r\nHost: x\r\nX-Foo: a\r\n\tb\r\n\r\n",
                      "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                          + "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"])
    func obsoleteLineFolding(_ request: String) throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect(timeout: 3)
        try connection.send(request)
        let response = try connection.readResponse()
        #expect(response.status == 400, "\(response.raw)")
        #expect(try response.json()["detail"] as? String == "a header line starts with a space or tab (obsolete line folding is not accepted)")
        #expect(connection.isClosedByServer())
    }

    @Test("spaces and tabs after the colon are not folding")
    func whitespaceAfterColon() throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect(timeout: 3)
        try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Foo:  \t  a\r\nX-Empty:\r\nX-Bar:b\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
    }
}
