import Foundation
import Glibc
import Testing
import JotterTestSupport

/// Slow clients (slowloris): a header section or a body trickled a byte at a time is cut, and a
/// full connection table still serves a client that sends its request at once.
@Suite("Slow clients", .tags(.timing))
struct SlowClientTests {
    /// True once the server has given up on `connection`: it answered (bytes to read: a body
    /// cut is answered 408 before the close) or closed it (EOF or reset), without waiting.
    private func closed(_ connection: RawHTTP) -> Bool {
        var byte: UInt8 = 0
        let count = recv(connection.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count >= 0 || errno == ECONNRESET
    }

    /// Sends `bytes` one at a time every `interval` seconds until the server closes the
    /// connection; the seconds that took, or nil if it stayed open for `limit` seconds.
    private func trickle(_ bytes: [UInt8], on connection: RawHTTP, every interval: Double, limit: Double) -> Double? {
        let start = Date.now
        var index = 0
        while Date.now.timeIntervalSince(start) < limit {
            if closed(connection) { return Date.now.timeIntervalSince(start) }
            _ = try? connection.send([bytes[index % bytes.count]])
            index += 1
            usleep(useconds_t(interval * 1_000_000))
        }
        return nil
    }

    @Test("a header section trickled a byte at a time is cut at the header timeout")
    func slowHeaderSection() throws {
        let fixture = try EngineFixture { $0.headerTimeout = 1 }
        let connection = try fixture.connect()
        try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\n")
        let after = trickle(Array("X-Slow: aaaaaaaa".utf8), on: connection, every: 0.2, limit: 4)
        let seconds = try #require(after, "still open after 4 s")
        #expect(seconds >= 0.7 && seconds < 2.5, "closed after \(seconds) s")
        #expect(fixture.server.slowConnectionsClosed.timedOut >= 1)
    }

    @Test("an idle keep-alive connection gets the header timeout for its next request")
    func keepAliveHeaderTimeout() throws {
        let fixture = try EngineFixture { $0.headerTimeout = 1 }
        let connection = try fixture.connect()
        #expect(try connection.request("GET", "/hello").status == 200)
        try connection.send("GET /hel")
        let after = trickle(Array("lo".utf8), on: connection, every: 0.3, limit: 4)
        #expect(after != nil, "still open after 4 s")
    }

    @Test("a head sent in time while the loop was busy is served, not cut at the header deadline")
    func busyLoopIsNotTheClientsDelay() throws {
        // One loop; connection B opens, then A's request keeps the loop busy (400 ms) past B's
        // deadline (300 ms) while B's request, sent well within it, waits in B's socket.
        let fixture = try EngineFixture {
            $0.threads = 1
            $0.headerTimeout = 0.3
        }
        let b = try fixture.connect()
        let a = try fixture.connect()
        usleep(20_000)
        try a.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000)
        try b.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try b.readResponse().status == 200)
        #expect(try a.readResponse().status == 200)
    }

    @Test("a body below the minimum rate is cut: answered 408, then closed")
    func slowBody() throws {
        let fixture = try EngineFixture {
            $0.headerTimeout = 1
            $0.minimumBodyRate = 1000
        }
        let connection = try fixture.connect()
        try connection.send("POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        let after = trickle(Array("0123456789".utf8), on: connection, every: 0.1, limit: 5)
        let seconds = try #require(after, "still open after 5 s")
        #expect(seconds >= 0.7 && seconds < 3, "closed after \(seconds) s")
        let answer = try connection.readResponse()
        #expect(answer.status == 408 && answer.header("Content-Type") == "application/problem+json", "\(answer.raw)")
        #expect(fixture.server.slowConnectionsClosed.slowBodies == 1)
        // A body at a normal rate is read whole.
        let fast = try fixture.connect()
        let response = try fast.request("POST", "/body", body: Array(repeating: 0x61, count: 100_000))
        #expect(response.text == "POST 100000")
    }

    @Test("with the table full of slow senders from many addresses, a normal client is served")
    func fullTable() throws {
        let fixture = try EngineFixture {
            $0.connectionLimit = 100
            $0.connectionsPerAddress = 10
            $0.headerTimeout = 60  // only the eviction can help within this test
        }
        var slow: [RawHTTP] = []
        for address in 2...16 {  // 15 addresses × 10 = 150 slow connections for 100 places
            for _ in 0..<10 {
                let connection = try fixture.connect(from: "127.0.0.\(address)")
                try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                slow.append(connection)
            }
        }
        usleep(200_000)
        for attempt in 0..<10 {
            let client = try fixture.connect(from: "127.0.0.200")
            let response = try client.request("GET", "/hello")
            #expect(response.status == 200, "attempt \(attempt)")
            // The slow senders keep coming back.
            let again = try fixture.connect(from: "127.0.0.\(2 + attempt)")
            try again.send("GET /hello HTTP/1.1\r\nHost: x\r\n")
            slow.append(again)
        }
        // Past the table, each new connection pushes out the slow sender that has waited longest
        // — once it has waited 100 ms, so a connection that has just opened is never the one
        // pushed out; before that the newcomer is refused.
        // The last reconnections may still wait in the listen backlog, their connect done, the
        // evictions they cause not yet made (a busy machine): count once the server has caught up.
        var open = slow.filter { !closed($0) }.count
        var closedSlow = fixture.server.slowConnectionsClosed
        let deadline = Date().addingTimeInterval(10)
        while open > 100 || closedSlow.evicted + closedSlow.refused < 50, Date() < deadline {
            usleep(20_000)
            open = slow.filter { !closed($0) }.count
            closedSlow = fixture.server.slowConnectionsClosed
        }
        #expect(closedSlow.evicted + closedSlow.refused >= 50)
        #expect(open <= 100, "\(open) slow connections still open")
    }

    @Test(
        "a table full of event streams and slow bodies: a newcomer pushes out the oldest of the address that holds the most, and is served",
        arguments: ["events", "bodies"])
    func fullTableOfLongLived(_ kind: String) throws {
        let fixture = try EngineFixture {
            $0.connectionLimit = 40
            $0.connectionsPerAddress = 30
            $0.headerTimeout = 60
            $0.minimumBodyRate = 0
        }
        func open(from address: String) throws -> RawHTTP {
            let connection = try fixture.connect(from: address)
            if kind == "events" {
                try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try connection.readStream(until: "\r\n\r\n")
            } else {
                try connection.send("POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc")
            }
            return connection
        }
        var heavy: [RawHTTP] = [], light: [RawHTTP] = []
        for _ in 0..<30 { heavy.append(try open(from: "127.0.0.2")) }
        for _ in 0..<10 { light.append(try open(from: "127.0.0.3")) }
        usleep(1_300_000)  // long-lived for a second: then they may be pushed out
        for attempt in 0..<5 {
            let client = try fixture.connect(from: "127.0.0.200")
            let response = try client.request("GET", "/hello", close: true)
            #expect(response.status == 200, "attempt \(attempt)")
        }
        #expect(fixture.server.longLivedEvicted >= 1)
        #expect(fixture.server.slowConnectionsClosed.refused == 0)
        usleep(100_000)
        #expect(light.allSatisfy { !closed($0) }, "the address holding fewer keeps its connections")
        #expect(heavy.filter { closed($0) }.count == fixture.server.longLivedEvicted)
    }
}
