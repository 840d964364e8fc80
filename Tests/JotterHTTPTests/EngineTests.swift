import Foundation
import Glibc
import Testing
@testable import JotterHTTP
import JotterTestSupport

@Suite("Engine: connections, limits, routing, shutdown", .tags(.timing), .serialized)
struct EngineTests {
    @Test("keep-alive serves several requests on one connection")
    func keepAlive() throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        for _ in 0..<3 {
            let response = try connection.request("GET", "/hello")
            #expect(response.text == "hello")
            #expect(response.header("Connection")?.lowercased() != "close")
        }
    }

    @Test("every response carries nosniff and a request id; a client id is kept")
    func commonHeaders() throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        let first = try connection.request("GET", "/hello")
        #expect(first.header("X-Content-Type-Options") == "nosniff")
        #expect(first.header("X-Request-Id")?.isEmpty == false)
        let missing = try connection.request("GET", "/nowhere", headers: [("X-Request-Id", "abc-123")])
        #expect(missing.status == 404)
        #expect(missing.header("X-Content-Type-Options") == "nosniff")
        #expect(missing.header("X-Request-Id") == "abc-123")
        #expect(try missing.json()["request_id"] as? String == "abc-123")
    }

    @Test("404 and 405 with Allow are problem+json; HEAD works where GET does")
    func routing() throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        let notFound = try connection.request("GET", "/nope")
        #expect(notFound.status == 404)
        #expect(notFound.header("Content-Type") == "application/problem+json")
        let wrongMethod = try connection.request("DELETE", "/hello")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("Allow") == "GET, HEAD")
        let head = try connection.request("HEAD", "/hello")
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "5")
        #expect(head.body.isEmpty)
        #expect(try connection.request("GET", "/items/42").text == "item 42")
        #expect(try connection.request("GET", "/items/abc").status == 404)
        #expect(try connection.request("GET", "/items/%ZZ").status == 400)
    }

    @Test("method override: header or _method on POST only, PUT/PATCH/DELETE only")
    func methodOverride() throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        #expect(try connection.request("POST", "/body", headers: [("X-HTTP-Method-Override", "PUT")]).text == "PUT 0")
        #expect(try connection.request("POST", "/body", body: Array("_method=DELETE&".utf8)).text == "DELETE 15")
        #expect(
            try connection.request(
                "POST", "/body", headers: [("Content-Type", "application/json")],
                body: Array(#"{"_method":"put"}"#.utf8)
            ).text == "PUT 17")
        #expect(try connection.request("POST", "/body", body: Array("_method=GET".utf8)).status == 400)
        // Never on GET.
        #expect(try connection.request("GET", "/hello?_method=DELETE", headers: [("X-HTTP-Method-Override", "DELETE")]).text == "hello")
        // Streamed routes take the header only.
        #expect(try connection.request("POST", "/streamed", body: Array("_method=PUT".utf8)).text == "POST")
        #expect(try connection.request("POST", "/streamed", headers: [("X-HTTP-Method-Override", "PUT")]).text == "PUT")
    }

    @Test("a declared body over the limit is refused at once, before it is sent")
    func declaredTooLarge() throws {
        let fixture = try EngineFixture { $0.maxBodySize = 1 << 20 }
        let connection = try fixture.connect()
        try connection.send("POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(try response.json()["detail"] as? String == "the request body is larger than the limit of 1048576 bytes (--max-body-size)")
        #expect(connection.isClosedByServer())
    }

    @Test("limit exact is accepted, limit + 1 is 413")
    func limitBoundary() throws {
        let fixture = try EngineFixture { $0.maxBodySize = 1000 }
        #expect(try fixture.connect().request("POST", "/body", body: [UInt8](repeating: 65, count: 1000)).text == "POST 1000")
        #expect(try fixture.connect().request("POST", "/body", body: [UInt8](repeating: 65, count: 1001)).status == 413)
    }

    /// The 413 is sent as soon as the body passes the limit and the connection closes; the
    /// handler never runs.
    @Test("a chunked body over the limit is refused with 413 and the connection closed")
    func streamedTooLarge() throws {
        let fixture = try EngineFixture { $0.maxBodySize = 1000 }
        let connection = try fixture.connect()
        try connection.send("POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = String(repeating: "a", count: 600)
        try connection.send("258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(try response.json()["detail"] as? String == "the request body is larger than the limit of 1000 bytes (--max-body-size)")
        #expect(connection.isClosedByServer())
    }

    @Test("an unexpected error is a 500 that names the request id, never the cause")
    func internalError() throws {
        let fixture = try EngineFixture()
        let response = try fixture.connect().request("GET", "/crash")
        #expect(response.status == 500)
        let detail = try #require(try response.json()["detail"] as? String)
        #expect(detail.contains(try #require(response.header("X-Request-Id"))))
        #expect(!response.text.contains("Boom"))
    }

    @Test("per-address limit: one address can't starve another")
    func perAddressLimit() throws {
        let fixture = try EngineFixture { $0.connectionsPerAddress = 5 }
        var held: [RawHTTP] = []
        for _ in 0..<5 {
            let connection = try fixture.connect(from: "127.0.0.1")
            #expect(try connection.request("GET", "/hello").status == 200)
            held.append(connection)
        }
        let refused = try fixture.connect(from: "127.0.0.1", timeout: 2)
        try? refused.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(refused.isClosedByServer())
        let other = try fixture.connect(from: "127.0.0.2")
        #expect(try other.request("GET", "/hello").text == "hello")
        held.removeAll()
    }

    @Test("idle connections are closed after the idle timeout")
    func idleTimeout() throws {
        let fixture = try EngineFixture { $0.idleTimeout = 1 }
        let connection = try fixture.connect(timeout: 4)
        #expect(try connection.request("GET", "/hello").status == 200)
        let start = Date()
        #expect(connection.isClosedByServer())
        #expect(Date().timeIntervalSince(start) < 3.5)
    }

    @Test("shutdown stops accepting, finishes the request in flight, then stops")
    func gracefulShutdown() async throws {
        let fixture = try EngineFixture()
        let port = fixture.port
        let slow = try fixture.connect()
        try slow.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        while fixture.server.requestsInFlight == 0 { usleep(1000) }
        let server = fixture.server
        let stopped = Task.detached { server.shutdown() }
        while !server.isStopping { usleep(1000) }
        // While the request in flight finishes, a new connection is refused: before, the
        // kernel still took it into the listening socket's backlog, and reset it (its request
        // sent) when the server exited — a 502 behind HAProxy on every rolling restart.
        #expect(throws: (any Error).self, "a connection during the grace period") { try RawHTTP(port: port, timeout: 1) }
        let response = try slow.readResponse()
        #expect(response.text == "slow done")
        await stopped.value
        #expect(throws: (any Error).self) { try RawHTTP(port: port) }
    }

    @Test("connections queued in the listener's backlog at the stop are answered (Connection: close), not reset")
    func backlogAtStop() async throws {
        // One loop, held by /hold: what connects meanwhile waits in the kernel's queue, unaccepted.
        let fixture = try EngineFixture { $0.threads = 1 }
        let port = fixture.port
        let holder = try fixture.connect()
        try holder.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        fixture.held.wait()
        var queued: [RawHTTP] = []
        for index in 0..<20 {
            let client = try fixture.connect(timeout: 10)
            try client.send("GET /hello?n=\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            queued.append(client)
        }
        let server = fixture.server
        let stopped = Task.detached { server.shutdown() }
        while !server.isStopping { usleep(1000) }
        // The listener is shut: a new connection is refused, not queued.
        #expect(throws: (any Error).self, "a connection after the stop began") { try RawHTTP(port: port, timeout: 1) }
        fixture.gate.signal()
        #expect(try holder.readResponse().text == "released")
        for (index, client) in queued.enumerated() {
            let response = try client.readResponse()
            #expect(response.status == 200 && response.text == "hello", "queued connection \(index): \(response.status)")
            #expect(response.header("Connection")?.lowercased() == "close", "queued connection \(index)")
        }
        await stopped.value
    }
}
