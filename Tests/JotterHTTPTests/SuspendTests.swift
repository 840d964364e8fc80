import Foundation
import Glibc
import Testing
@testable import JotterHTTP
import JotterTestSupport

/// Deferred answers and streaming bodies suspend their connection instead of holding a thread.
@Suite("Suspended connections: deferred answers and event streams", .tags(.timing), .serialized)
struct SuspendTests {
    @Test("a deferred answer arrives after the connection was suspended")
    func deferred() throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        let response = try connection.request("GET", "/deferred")
        #expect(response.status == 200)
        #expect(response.text == "deferred \(try #require(response.header("X-Request-Id")))")
        // The connection stays usable afterwards.
        #expect(try connection.request("GET", "/hello").text == "hello")
    }

    @Test("fifty deferred answers on one engine thread wait together, not in turn")
    func manyDeferred() throws {
        let fixture = try EngineFixture { $0.threads = 1 }
        let connections = try (0..<50).map { _ in try fixture.connect() }
        let start = Date()
        for connection in connections { try connection.send("GET /deferred HTTP/1.1\r\nHost: x\r\n\r\n") }
        for connection in connections { #expect(try connection.readResponse().status == 200) }
        // Each waits 0.2 s; served one after another they would take 10 s.
        #expect(Date().timeIntervalSince(start) < 2)
    }

    @Test("a deferred failure renders as a problem")
    func deferredFailure() throws {
        let fixture = try EngineFixture()
        let response = try fixture.connect().request("GET", "/deferred-error")
        #expect(response.status == 412)
        #expect(try response.json()["detail"] as? String == "stale")
    }

    /// The fixture's heartbeat is 30 s, so only the publish itself can wake these streams.
    @Test("two subscribers see the same events in order, each woken by the publish")
    func eventStream() throws {
        let fixture = try EngineFixture()
        let first = try fixture.connect(), second = try fixture.connect()
        for subscriber in [first, second] {
            try subscriber.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        }
        while fixture.hub.count < 2 { usleep(1000) }
        let publisher = try fixture.connect()
        for id in 1...3 {
            #expect(try publisher.request("POST", "/publish", body: Array("id=\(id)&data=event+\(id)".utf8)).text == "published")
        }
        for subscriber in [first, second] {
            let text = try subscriber.readStream(until: "data: event 3\n\n")
            #expect(text.contains("HTTP/1.1 200 OK"))
            #expect(text.contains("Content-Type: text/event-stream"))
            let events = text.components(separatedBy: "id: ").dropFirst().map { $0.prefix(1) }
            #expect(events == ["1", "2", "3"])
        }
    }

    @Test("shutdown ends open streams at once")
    func shutdownWithStreams() throws {
        let fixture = try EngineFixture()
        let subscriber = try fixture.connect()
        try subscriber.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        while fixture.hub.count < 1 { usleep(1000) }
        let start = Date()
        fixture.server.shutdown()
        #expect(Date().timeIntervalSince(start) < 1.5)
        #expect(subscriber.isClosedByServer())
    }
}
