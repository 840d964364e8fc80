import CNGHTTP2
import Foundation
import Glibc
import Testing
@testable import JotterHTTP
import JotterHTTPTesting

/// The HTTP/2 connection's state machine driven with no socket (`MemoryConnection`): what a
/// client sends is made by libnghttp2 as a client session in the test, fed to the machine in
/// pieces; what the machine writes goes back to that client, which reads the answers. Time is
/// passed in by the test.
@Suite("HTTP/2 connection state machine, with no socket")
struct HTTP2StateMachineTests {
    typealias Setup = HTTP1StateMachineTests.Setup
    static let start = HTTP1StateMachineTests.start

    static func connection(_ setup: Setup, now: UInt64 = start) -> MemoryConnection<HTTP2StateMachine> {
        var connection = MemoryConnection<HTTP2StateMachine>(server: setup.server, now: now)
        connection.begin()
        return connection
    }

    /// Runs the exchange until neither side has anything more for the other: the client's
    /// frames go to the machine, the machine's output to the client.
    static func converse(_ client: H2Client, _ connection: inout MemoryConnection<HTTP2StateMachine>) {
        for _ in 0..<100_000 {
            let fromClient = client.output()
            if !fromClient.isEmpty { connection.send(fromClient) }
            let fromServer = connection.takeOutput()
            if !fromServer.isEmpty { client.receive(fromServer) }
            if fromClient.isEmpty && fromServer.isEmpty { return }
        }
        Issue.record("the exchange did not settle")
    }

    static let hello = H2Client.Answer(status: 200, body: "hello")

    // MARK: - Bytes in pieces

    @Test(
        "the client's frames split at every position: each request is answered as soon as its frames are complete, in full; the idle connection holds no output"
    )
    func splitEverywhere() {
        // What one client sends: the preface and SETTINGS, then three requests, and where each ends.
        func client() -> (H2Client, [Int32], bytes: [UInt8], ends: [Int]) {
            let client = H2Client()
            var bytes = client.output()
            var ids: [Int32] = []
            var ends: [Int] = []
            ids.append(client.request("GET", "/hello"))
            bytes += client.output()
            ends.append(bytes.count)
            ids.append(client.request("POST", "/echo", body: Array("hello".utf8)))
            bytes += client.output()
            ends.append(bytes.count)
            ids.append(client.request("GET", "/items/7"))
            bytes += client.output()
            ends.append(bytes.count)
            return (client, ids, bytes, ends)
        }
        let expected = [Self.hello, H2Client.Answer(status: 200, body: "hello"), H2Client.Answer(status: 200, body: "item 7")]
        let bytes = client().bytes
        for split in 0...bytes.count {
            let setup = Setup()
            var connection = Self.connection(setup)
            let (client, ids, sent, ends) = client()
            #expect(sent == bytes, "the client sends the same bytes each time")
            connection.send(sent[..<split])
            client.receive(connection.takeOutput())
            let complete = ends.filter { $0 <= split }.count
            #expect(ids.prefix(complete).map { client.answer($0) } == Array(expected.prefix(complete)), "split at \(split)")
            #expect(ids.dropFirst(complete).allSatisfy { client.exchanges[$0]?.ended != true }, "split at \(split)")
            connection.send(sent[split...])
            client.receive(connection.takeOutput())
            #expect(ids.map { client.answer($0) } == expected, "split at \(split)")
            #expect(setup.completions.all.map(\.status) == [200, 200, 200], "split at \(split)")
            #expect(setup.completions.all.allSatisfy { $0.outcome == .sent })
            #expect(connection.machine.openStreams == 0 && connection.machine.heldOutputBytes == 0, "split at \(split)")
            #expect(!connection.ended && connection.interest.read)
            #expect(connection.violations.isEmpty, "\(connection.violations)")
            #expect(setup.server.requestsInFlight == 0)
        }
    }

    @Test("one byte per read: the same answers")
    func oneByteReads() {
        let setup = Setup()
        var connection = Self.connection(setup)
        connection.readSize = 1
        let client = H2Client()
        let ids = [client.request("GET", "/hello"), client.request("POST", "/echo", body: Array(repeating: 0x61, count: 3000))]
        Self.converse(client, &connection)
        #expect(ids.map { client.answer($0) } == [Self.hello, H2Client.Answer(status: 200, body: String(repeating: "a", count: 3000))])
        #expect(connection.violations.isEmpty, "\(connection.violations)")
    }

    // MARK: - Writes

    @Test("under a 16-byte window, the socket taking one byte per write: bytes, a file and a stream arrive whole, every write a byte")
    func smallWindowOneByteWrites() {
        func exchange(writeSize: Int) -> (answers: [H2Client.Answer?], writes: Int, written: Int, violations: [String]) {
            let setup = Setup()
            var connection = Self.connection(setup)
            let client = H2Client(initialWindow: 16)
            client.receive(connection.takeOutput())  // our SETTINGS, written when the connection began
            let writesBefore = connection.writes
            connection.writeSize = writeSize
            var written = 0
            let ids = [client.request("GET", "/big"), client.request("GET", "/file"), client.request("GET", "/stream")]
            func settle() {
                for _ in 0..<1_000_000 {
                    let fromClient = client.output()
                    if !fromClient.isEmpty { connection.send(fromClient) }
                    let fromServer = connection.takeOutput()
                    written += fromServer.count
                    if !fromServer.isEmpty { client.receive(fromServer) }
                    if fromClient.isEmpty && fromServer.isEmpty { return }
                }
            }
            settle()
            setup.script.push("abc")
            connection.deliverWakes()
            settle()
            setup.script.push("defg")
            setup.script.end()
            connection.deliverWakes()
            settle()
            #expect(setup.script.state.withLock { $0.finished })
            #expect(setup.completions.all.map(\.outcome) == [.sent, .sent, .sent])
            // The access log's body bytes, as on HTTP/1.1: the big answer's, the file's range, the stream's.
            let logged = Dictionary(uniqueKeysWithValues: setup.completions.all.map { ($0.target, $0.bytes) })
            #expect(logged == ["/big": 10_000, "/file": 6, "/stream": 7], "\(setup.completions.all)")
            #expect(connection.machine.heldOutputBytes == 0)
            return (ids.map { client.answer($0) }, connection.writes - writesBefore, written, connection.violations)
        }
        let expected = [
            H2Client.Answer(status: 200, body: String(repeating: "b", count: 10_000)), H2Client.Answer(status: 200, body: "234567"),
            H2Client.Answer(status: 200, body: "abcdefg"),
        ]
        let whole = exchange(writeSize: .max)
        let bytewise = exchange(writeSize: 1)
        #expect(whole.answers == expected)
        #expect(bytewise.answers == expected)
        #expect(bytewise.writes == bytewise.written, "every write took one byte")
        #expect(whole.violations.isEmpty && bytewise.violations.isEmpty, "\(whole.violations) \(bytewise.violations)")
    }

    @Test("a client that reads nothing: frames wait in the connection; when it reads, the answer arrives whole and nothing is held")
    func clientNotReading() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let id = client.request("GET", "/big")
        client.receive(connection.takeOutput())  // our SETTINGS, written when the connection began
        connection.clientReads = false
        connection.send(client.output())
        #expect(connection.output.isEmpty)
        #expect(connection.interest.write, "it waits until the socket takes more")
        #expect(connection.machine.heldOutputBytes > 10_000, "the frames the socket did not take are kept")
        #expect(setup.completions.all.map(\.outcome) == [.sent], "complete once its last frame is made")
        connection.clientReads = true
        connection.pump()
        Self.converse(client, &connection)
        #expect(client.answer(id) == H2Client.Answer(status: 200, body: String(repeating: "b", count: 10_000)))
        #expect(connection.machine.heldOutputBytes == 0)
    }

    // MARK: - Work elsewhere

    @Test("a stream reset while its step is on an executor: completed once, as a client abort, after the landing; the connection serves on")
    func resetWhileAway() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let away = client.request("GET", "/away")
        Self.converse(client, &connection)
        #expect(setup.executor.work.withLock { $0.count } == 1, "the step went to the executor")
        client.reset(away)
        Self.converse(client, &connection)
        #expect(setup.completions.all.isEmpty, "completion waits for the landing")
        #expect(setup.executor.run() == 1)
        let landed = connection.land()
        #expect(landed)
        #expect(setup.completions.all.map(\.outcome) == [.clientAbort])
        #expect(setup.server.requestsInFlight == 0)
        let hello = client.request("GET", "/hello")
        Self.converse(client, &connection)
        #expect(client.answer(hello) == Self.hello)
        #expect(setup.completions.all.map(\.outcome) == [.clientAbort, .sent])
        #expect(connection.violations.isEmpty, "\(connection.violations)")
    }

    @Test("a stream reset in the same read as its head: its step never goes to the executor, and it is completed once")
    func resetBeforeTheStepLeft() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let away = client.request("GET", "/away")
        var bytes = client.output()
        client.reset(away)
        bytes += client.output()
        connection.send(bytes)
        client.receive(connection.takeOutput())
        #expect(setup.executor.run() == 0)
        #expect(setup.completions.all.map(\.outcome) == [.clientAbort])
        #expect(setup.server.requestsInFlight == 0)
    }

    @Test(
        "a body behind a head whose step is away is kept and given to the body once it lands; the interim sent from the executor comes before the answer"
    )
    func awayWithBody() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let id = client.request("POST", "/away", body: Array("hello".utf8))
        Self.converse(client, &connection)
        #expect(!connection.interest.read, "nothing more is read while the head is away")
        #expect(setup.executor.run() == 1)
        connection.land()
        #expect(setup.executor.run() == 1, "the end's trip")
        connection.interimsQueued()
        connection.land()
        Self.converse(client, &connection)
        #expect(client.exchanges[id]?.blocks.map(\.status) == [104, 200])
        #expect(client.exchanges[id]?.blocks.first?.fields["upload-offset"] == "5")
        #expect(client.answer(id) == H2Client.Answer(status: 200, body: "away 5"))
        #expect(connection.interest.read)
    }

    @Test("a later reply: its stream waits while others are answered; then its answer")
    func later() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let later = client.request("GET", "/later")
        let hello = client.request("GET", "/hello")
        Self.converse(client, &connection)
        #expect(client.answer(hello) == Self.hello)
        #expect(client.exchanges[later]?.ended != true)
        let resumed = connection.resumeLater()
        #expect(resumed)
        Self.converse(client, &connection)
        #expect(client.answer(later) == H2Client.Answer(status: 200, body: "later"))
    }

    @Test("a body's consumer that is behind stops all reading, not counted against the rate; called back, the body is read to its end")
    func backPressure() {
        let setup = Setup()
        var connection = Self.connection(setup)
        connection.readSize = 1000
        let size = 50_000
        let client = H2Client()
        let id = client.request(
            "POST", "/gated", headers: [("content-type", HTTP1StateMachineTests.oneFileType)],
            body: HTTP1StateMachineTests.oneFile(size: size))
        Self.converse(client, &connection)
        let atPause = setup.gate.state.withLock { $0.received }
        #expect(atPause > 0 && atPause < size)
        #expect(connection.unread > 0 && !connection.interest.read, "the body waits in the socket")
        connection.now = Self.start + 60_000_000
        connection.tick()
        #expect(connection.closed == false, "the pause is the server's, not the client's")
        setup.gate.release()
        #expect(connection.mail.bodyCalledBack)
        connection.bodyReady()
        Self.converse(client, &connection)
        #expect(client.answer(id) == H2Client.Answer(status: 200, body: "files [\(size)]"))
        #expect(setup.gate.state.withLock { $0.paused } == 1)
    }

    @Test(
        "while one stream's consumer is behind, reading stops for all: no stream's body is held to the minimum rate for that time, during it or after"
    )
    func pauseIsNoStreamsFault() {
        let setup = Setup()
        var connection = Self.connection(setup)
        connection.readSize = 1000
        let client = H2Client()
        let slow = client.request(
            "POST", "/echo", headers: [("content-length", "100000")], body: [UInt8](repeating: 0x61, count: 6_000), ends: false)
        Self.converse(client, &connection)
        let size = 50_000
        let gated = client.request(
            "POST", "/gated", headers: [("content-type", HTTP1StateMachineTests.oneFileType)],
            body: HTTP1StateMachineTests.oneFile(size: size))
        Self.converse(client, &connection)
        #expect(!connection.interest.read, "reading is paused for the gated stream")
        // A minute of the server's pause: 6,000 bytes in 60 s would be 100 B/s.
        connection.now = Self.start + 60_000_000
        connection.tick()
        Self.converse(client, &connection)
        #expect(client.answer(slow) == nil, "no 408 while the server holds reading")
        setup.gate.release()
        connection.bodyReady()
        connection.tick()
        Self.converse(client, &connection)
        #expect(client.answer(gated) == H2Client.Answer(status: 200, body: "files [\(size)]"))
        #expect(client.answer(slow) == nil, "nor right after: the pause is taken off its rate")
        // The rate counts again from the end of the pause: 6,000 bytes in 10.2 s is enough, in 12 s not.
        connection.now = Self.start + 70_200_000
        connection.tick()
        Self.converse(client, &connection)
        #expect(client.answer(slow) == nil)
        connection.now = Self.start + 72_000_000
        connection.tick()
        Self.converse(client, &connection)
        #expect(client.answer(slow)?.status == 408)
    }

    // MARK: - Time and the end
    // MARK: - Time and the end

    @Test("no stream open for the header deadline: GOAWAY, then closed; 1 µs before, nothing")
    func idleDeadline() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let id = client.request("GET", "/hello")
        connection.now = Self.start + 3_000_000
        Self.converse(client, &connection)
        #expect(client.answer(id) == Self.hello)
        // The deadline runs from the end of the last stream.
        connection.now = Self.start + 13_000_000 - 1
        connection.tick()
        #expect(connection.closed == false)
        connection.now += 1
        connection.tick()
        client.receive(connection.takeOutput())
        #expect(client.goAway?.error == NGHTTP2_NO_ERROR.rawValue)
        #expect(client.goAway?.lastStream == id)
        #expect(connection.closed == true)
        #expect(setup.server.slowConnectionsClosed.timedOut == 0, "an idle connection is not a slow one")
    }

    @Test("past the deadline with the client's bytes unread while the loop was busy: served, not cut")
    func loopLate() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let id = client.request("GET", "/hello")
        connection.now = Self.start + 12_000_000
        connection.polledAt = Self.start + 9_000_000
        connection.arrive(client.output())
        connection.tick()
        #expect(connection.closed == false)
        client.receive(connection.takeOutput())
        #expect(client.answer(id) == Self.hello)
    }

    @Test("an answer the client does not read for the idle timeout: the connection closes and the stream ends as a timeout")
    func idleTimeout() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client(initialWindow: 16, updatesWindows: false)
        _ = client.request("GET", "/big")
        Self.converse(client, &connection)
        #expect(setup.completions.all.isEmpty, "its window holds the rest")
        connection.now = Self.start + 29_999_999
        connection.tick()
        #expect(connection.closed == false)
        connection.now = Self.start + 30_000_000
        connection.tick()
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.outcome) == [.timeout])
        #expect(setup.server.slowConnectionsClosed.timedOut == 1)
    }

    // MARK: - What a connection holds

    @Test(
        "a zero window and 100 streams of 300 KB: requests begin only while the connection holds under 1 MiB of answers; once the client reads, all 100 arrive whole and nothing is held"
    )
    func zeroWindowHoldsBounded() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client(initialWindow: 0)
        let ids = (0..<100).map { _ in client.request("GET", "/sized/300000") }
        Self.converse(client, &connection)
        #expect(setup.server.requestsInFlight <= 4, "\(setup.server.requestsInFlight) requests begun under a zero window")
        #expect(
            connection.machine.heldAnswerBytes <= HTTP2StateMachine.heldBytesLimit + 300_000,
            "\(connection.machine.heldAnswerBytes) bytes held")
        #expect(setup.server.heldAnswers.bytes <= HTTP2StateMachine.heldBytesLimit + 300_000)
        #expect(connection.machine.openStreams == 100, "the others wait, open")
        // A tick does not change it, and a request on a connection that holds nothing begins at once.
        connection.tick()
        let other = H2Client()
        var second = Self.connection(setup)
        let hello = other.request("GET", "/hello")
        Self.converse(other, &second)
        #expect(other.answer(hello) == Self.hello)
        // The client reads: every answer arrives, whole.
        client.settings(initialWindow: 1 << 20)
        Self.converse(client, &connection)
        #expect(ids.allSatisfy { client.answer($0)?.body.utf8.count == 300_000 && client.answer($0)?.status == 200 })
        #expect(setup.completions.all.count == 101 && setup.completions.all.allSatisfy { $0.outcome == .sent })
        #expect(connection.machine.heldAnswerBytes == 0 && setup.server.heldAnswers.bytes == 0)
        #expect(setup.server.requestsInFlight == 0)
        #expect(connection.violations.isEmpty, "\(connection.violations)")
    }

    @Test("the server's bound: past it, a connection that holds answers begins no more; one that holds none still does; a hang-up lets go of all")
    func serverBoundOnHeldBytes() {
        let setup = Setup { $0.maxHeldAnswerBytes = 100_000 }
        var first = Self.connection(setup)
        let client = H2Client(initialWindow: 0)
        for _ in 0..<5 { client.request("GET", "/sized/60000") }
        Self.converse(client, &first)
        #expect(setup.server.requestsInFlight == 2, "the first held 60,000 bytes (under the bound), the second passed it")
        var second = Self.connection(setup)
        let other = H2Client(initialWindow: 0)
        for _ in 0..<3 { other.request("GET", "/sized/60000") }
        Self.converse(other, &second)
        #expect(setup.server.requestsInFlight == 3, "a connection that holds nothing begins one")
        first.closeInput()
        second.closeInput()
        #expect(setup.server.heldAnswers.bytes == 0 && setup.server.requestsInFlight == 0)
        #expect(setup.completions.all.allSatisfy { $0.outcome == .clientAbort }, "\(setup.completions.all.map(\.outcome))")
    }

    @Test("downloads under a zero window: one connection holds at most 8 files open; the rest begin as those end")
    func filesPerConnection() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client(initialWindow: 0)
        let ids = (0..<50).map { _ in client.request("GET", "/file") }
        Self.converse(client, &connection)
        #expect(setup.server.heldAnswers.files == HTTP2StateMachine.heldFilesLimit)
        #expect(setup.server.requestsInFlight == HTTP2StateMachine.heldFilesLimit)
        client.settings(initialWindow: 1 << 20)
        Self.converse(client, &connection)
        #expect(ids.allSatisfy { client.answer($0) == H2Client.Answer(status: 200, body: "234567") })
        #expect(setup.server.heldAnswers.files == 0)
    }

    @Test("a parked stream's body is kept for its request; past 64 KiB of parked bodies the stream is refused (REFUSED_STREAM)")
    func parkedBodies() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client(initialWindow: 0)
        _ = client.request("GET", "/sized/2000000")
        let small = client.request("POST", "/echo", body: Array(repeating: 0x61, count: 1_000))
        let large = client.request("POST", "/echo", body: Array(repeating: 0x61, count: 100_000))
        Self.converse(client, &connection)
        #expect(client.exchanges[large]?.reset == NGHTTP2_REFUSED_STREAM.rawValue)
        #expect(setup.server.requestsInFlight == 1)
        client.settings(initialWindow: 1 << 20)
        Self.converse(client, &connection)
        #expect(client.answer(small) == H2Client.Answer(status: 200, body: String(repeating: "a", count: 1_000)))
        #expect(setup.server.requestsInFlight == 0 && setup.server.heldAnswers.bytes == 0)
    }

    @Test(
        "floods of frames that carry no progress (empty DATA, WINDOW_UPDATE): GOAWAY ENHANCE_YOUR_CALM, closed; a download's WINDOW_UPDATEs are not one",
        arguments: ["data", "window"])
    func noProgressFlood(_ kind: String) {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let id = client.request("POST", "/echo", body: [], ends: false)
        Self.converse(client, &connection)
        var flood: [UInt8] = []
        for _ in 0..<1_200 {
            if kind == "data" {
                flood += [0, 0, 0, 0, 0, 0, 0, 0, UInt8(id)]  // DATA, length 0, no flags
            } else {
                flood += [0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1]  // WINDOW_UPDATE of 1 on the connection
            }
        }
        connection.send(flood)
        client.receive(connection.takeOutput())
        #expect(client.goAway?.error == NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.outcome) == [.error])
    }

    @Test("a large download with a client that updates its windows as it reads: no GOAWAY")
    func downloadIsProgress() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client(initialWindow: 1_000)
        let ids = (0..<20).map { _ in client.request("GET", "/sized/300000") }
        Self.converse(client, &connection)
        #expect(ids.allSatisfy { client.answer($0)?.body.utf8.count == 300_000 })
        #expect(client.goAway == nil && !connection.closed)
    }

    @Test("a body below 512 B/s once 10 s have passed: its stream is answered 408 then reset (NO_ERROR), the connection serves on")
    func minimumBodyRate() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let id = client.request(
            "POST", "/echo", headers: [("content-length", "100000")], body: [UInt8](repeating: 0x61, count: 5_200),
            ends: false)
        Self.converse(client, &connection)
        connection.now = Self.start + 10_000_000
        connection.tick()
        #expect(client.exchanges[id]?.reset == nil, "5,200 bytes in 10 s: 520 B/s")
        connection.now = Self.start + 10_200_000
        connection.tick()
        Self.converse(client, &connection)
        #expect(client.answer(id)?.status == 408)
        #expect(client.answer(id)?.body.contains("send it again") == true)
        #expect(client.exchanges[id]?.reset == NGHTTP2_NO_ERROR.rawValue)
        #expect(setup.server.slowConnectionsClosed.slowBodies == 1)
        #expect(setup.completions.all.map(\.status) == [408])
        #expect(connection.closed == false)
        let next = client.request("GET", "/hello")
        Self.converse(client, &connection)
        #expect(client.answer(next)?.status == 200, "the connection serves on")
    }

    @Test("a body that stops arriving for the idle timeout: its stream is answered 408, then GOAWAY and the connection closes")
    func stalledBodyIdleTimeout() {
        let setup = Setup { $0.minimumBodyRate = 0 }
        var connection = Self.connection(setup)
        let client = H2Client()
        let id = client.request(
            "POST", "/echo", headers: [("content-length", "100000")], body: [UInt8](repeating: 0x61, count: 100),
            ends: false)
        Self.converse(client, &connection)
        connection.now = Self.start + 29_999_999
        connection.tick()
        #expect(client.answer(id) == nil && connection.closed == false)
        connection.now = Self.start + 30_000_000
        connection.tick()
        Self.converse(client, &connection)
        #expect(client.answer(id)?.status == 408)
        #expect(client.answer(id)?.body.contains("stopped arriving for 30 s") == true)
        #expect(client.goAway?.error == NGHTTP2_NO_ERROR.rawValue)
        #expect(setup.completions.all.map(\.status) == [408])
        #expect(setup.server.slowConnectionsClosed.timedOut == 1)
        #expect(connection.closed == true)
    }

    @Test("quiesce with a stream in flight: GOAWAY naming it; it is answered, then the connection closes")
    func quiesceWithStreamInFlight() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        let later = client.request("GET", "/later")
        let stream = client.request("GET", "/stream")
        Self.converse(client, &connection)
        connection.quiesce()
        client.receive(connection.takeOutput())
        #expect(client.goAway?.error == NGHTTP2_NO_ERROR.rawValue)
        #expect(client.goAway?.lastStream == stream)
        #expect(client.answer(stream) == H2Client.Answer(status: 200, body: ""), "a streaming body ends")
        #expect(connection.closed == false, "a stream is still in flight")
        let resumed = connection.resumeLater()
        #expect(resumed)
        client.receive(connection.takeOutput())
        #expect(client.answer(later) == H2Client.Answer(status: 200, body: "later"))
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.outcome) == [.sent, .sent])
        #expect(setup.script.state.withLock { $0.finished })
    }

    @Test("a client that hangs up with streams open: each ends once as a client abort")
    func hangUp() {
        let setup = Setup()
        var connection = Self.connection(setup)
        let client = H2Client()
        _ = client.request("GET", "/later")
        _ = client.request("POST", "/echo", body: Array("abc".utf8), ends: false)
        Self.converse(client, &connection)
        connection.closeInput()
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.outcome) == [.clientAbort, .clientAbort])
        #expect(setup.server.requestsInFlight == 0)
        let resumed = connection.resumeLater()
        #expect(resumed, "the later reply's work ended; handed back to a closed connection")
        #expect(connection.violations.isEmpty)
    }

    @Test("a bad preface: GOAWAY, closed, nothing completed")
    func badPreface() {
        let setup = Setup()
        var connection = Self.connection(setup)
        connection.send(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(connection.closed == true)
        #expect(setup.completions.all.isEmpty)
        #expect(connection.violations.isEmpty)
    }
}

/// An HTTP/2 client: libnghttp2's client session, its bytes handed over by hand.
final class H2Client {
    /// One final answer as the test compares it.
    struct Answer: Equatable, CustomStringConvertible {
        var status: Int
        var body: String
        var description: String { "\(status) \(body.debugDescription)" }
    }

    /// One header section received.
    struct Block {
        var status = 0
        var fields: [String: String] = [:]
    }

    struct Exchange {
        var blocks: [Block] = []
        var body: [UInt8] = []
        var ended = false
        var reset: UInt32?
        /// The request body still to send, and whether it ends the stream.
        var toSend: [UInt8] = []
        var sent = 0
        var ends = true
    }

    private(set) var session: OpaquePointer?
    var exchanges: [Int32: Exchange] = [:]
    private(set) var goAway: (lastStream: Int32, error: UInt32)?

    /// `updatesWindows`: whether the session sends WINDOW_UPDATE as it reads (false: the
    /// server's DATA stops once the window it announced is used).
    init(initialWindow: UInt32 = 65_535, updatesWindows: Bool = true) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(
            callbacks,
            { _, frame, user in
                guard let frame, let user else { return 0 }
                H2Client.from(user).exchanges[frame.pointee.hd.stream_id]?.blocks.append(Block())
                return 0
            })
        nghttp2_session_callbacks_set_on_header_callback(
            callbacks,
            { _, frame, name, nameLength, value, valueLength, _, user in
                guard let frame, let user, let name, let value else { return 0 }
                let client = H2Client.from(user)
                let id = frame.pointee.hd.stream_id
                let field = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
                let text = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
                guard var exchange = client.exchanges[id], !exchange.blocks.isEmpty else { return 0 }
                if field == ":status" {
                    exchange.blocks[exchange.blocks.count - 1].status = Int(text) ?? 0
                } else if field != "date" {
                    exchange.blocks[exchange.blocks.count - 1].fields[field] = text
                }
                client.exchanges[id] = exchange
                return 0
            })
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
            callbacks,
            { _, _, id, data, length, user in
                guard let user, let data else { return 0 }
                H2Client.from(user).exchanges[id]?.body += UnsafeBufferPointer(start: data, count: length)
                return 0
            })
        nghttp2_session_callbacks_set_on_frame_recv_callback(
            callbacks,
            { _, frame, user in
                guard let frame, let user else { return 0 }
                let client = H2Client.from(user)
                let id = frame.pointee.hd.stream_id
                switch UInt32(frame.pointee.hd.type) {
                case NGHTTP2_GOAWAY.rawValue:
                    client.goAway = (frame.pointee.goaway.last_stream_id, frame.pointee.goaway.error_code)
                case NGHTTP2_RST_STREAM.rawValue:
                    client.exchanges[id]?.reset = frame.pointee.rst_stream.error_code
                case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
                    if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 { client.exchanges[id]?.ended = true }
                default: break
                }
                return 0
            })
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_window_update(option, updatesWindows ? 0 : 1)
        nghttp2_session_client_new2(&session, callbacks, Unmanaged.passUnretained(self).toOpaque(), option)
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: initialWindow)]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    deinit { nghttp2_session_del(session) }

    fileprivate static func from(_ user: UnsafeMutableRawPointer) -> H2Client {
        Unmanaged<H2Client>.fromOpaque(user).takeUnretainedValue()
    }

    /// Submits a request; its stream id. `body`: sent as DATA; `ends`: whether the stream ends with it.
    @discardableResult
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil, ends: Bool = true) -> Int32 {
        var block: [UInt8] = []
        var spans: [(Int, Int, Int, Int)] = []
        for (name, value) in [(":method", method), (":scheme", "http"), (":authority", "a"), (":path", path)] + headers {
            let nameStart = block.count
            block += Array(name.utf8)
            let valueStart = block.count
            block += Array(value.utf8)
            spans.append((nameStart, valueStart - nameStart, valueStart, block.count - valueStart))
        }
        var provider = nghttp2_data_provider(
            source: nghttp2_data_source(ptr: nil),
            read_callback: { _, id, buffer, length, flags, _, user in
                guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                let client = H2Client.from(user)
                guard var exchange = client.exchanges[id] else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                let count = min(length, exchange.toSend.count - exchange.sent)
                exchange.toSend.withUnsafeBytes {
                    UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress! + exchange.sent, byteCount: count)
                }
                exchange.sent += count
                client.exchanges[id] = exchange
                if exchange.sent == exchange.toSend.count {
                    if exchange.ends {
                        flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                    } else if count == 0 {
                        return Int(NGHTTP2_ERR_DEFERRED.rawValue)
                    }
                }
                return count
            })
        let session = self.session
        let id = block.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var list = spans.map { span in
                nghttp2_nv(
                    name: buffer.baseAddress! + span.0, value: buffer.baseAddress! + span.2, namelen: span.1, valuelen: span.3,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return withUnsafePointer(to: &provider) { provider in
                nghttp2_submit_request(session, nil, &list, list.count, body == nil ? nil : provider, nil)
            }
        }
        exchanges[id] = Exchange(toSend: body ?? [], ends: ends)
        return id
    }

    /// Sends SETTINGS with a new `SETTINGS_INITIAL_WINDOW_SIZE` (every stream's window changes by the difference).
    func settings(initialWindow: UInt32) {
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: initialWindow)]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    /// Resets stream `id` (CANCEL).
    func reset(_ id: Int32) {
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
    }

    /// Everything the session has to send now.
    func output() -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            if count <= 0 { return bytes }
            bytes += UnsafeBufferPointer(start: data, count: count)
        }
    }

    /// What the server wrote.
    func receive(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let result = bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
        if result < 0 { Issue.record("the client could not read the server's frames: \(String(cString: nghttp2_strerror(Int32(result))))") }
    }

    /// The final answer of stream `id` (nil while it has not ended).
    func answer(_ id: Int32) -> Answer? {
        guard let exchange = exchanges[id], exchange.ended, let final = exchange.blocks.last(where: { $0.status >= 200 }) else { return nil }
        return Answer(status: final.status, body: String(decoding: exchange.body, as: UTF8.self))
    }
}
