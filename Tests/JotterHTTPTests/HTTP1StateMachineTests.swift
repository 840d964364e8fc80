import Foundation
import Glibc
import Synchronization
import Testing
@testable import JotterHTTP
import JotterHTTPTesting
import JotterSystem

/// The HTTP/1.1 connection's state machine driven with no socket (`MemoryConnection`): bytes in
/// pieces, writes the socket takes a byte at a time, time passed in by the test.
@Suite("HTTP/1.1 connection state machine, with no socket")
struct HTTP1StateMachineTests {
    /// Every completed exchange, in the order the lifecycle reported them.
    final class Completions: Middleware {
        let exchanges = Mutex<[(target: String, status: Int, outcome: CompletedExchange.Outcome, bytes: Int)]>([])
        func completed(_ exchange: CompletedExchange) {
            exchanges.withLock { $0.append((exchange.target, exchange.status, exchange.outcome, exchange.bytesSent)) }
        }
        var all: [(target: String, status: Int, outcome: CompletedExchange.Outcome, bytes: Int)] { exchanges.withLock { $0 } }
    }

    /// Every completed exchange's durations, as the lifecycle reported them.
    final class Durations: Middleware {
        let exchanges = Mutex<[(target: String, total: Int, answered: Int?)]>([])
        func completed(_ exchange: CompletedExchange) {
            exchanges.withLock { $0.append((exchange.target, exchange.microseconds, exchange.responseMicroseconds)) }
        }
        var all: [(target: String, total: Int, answered: Int?)] { exchanges.withLock { $0 } }
    }

    /// An executor whose work waits until the test runs it, on the test's thread.
    final class ManualExecutor: Executor, @unchecked Sendable {
        let work = Mutex<[@Sendable () -> Void]>([])
        func execute(_ work: @escaping @Sendable () -> Void) { self.work.withLock { $0.append(work) } }
        /// Runs what was handed over; how many pieces of work ran.
        @discardableResult
        func run() -> Int {
            var ran = 0
            while let next = work.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                next()
                ran += 1
            }
            return ran
        }
    }

    /// A streaming body whose pieces the test hands over one by one.
    final class Script: StreamingBody, @unchecked Sendable {
        let state = Mutex<(pieces: [[UInt8]], ended: Bool, waker: ConnectionWaker?, finished: Bool)>(([], false, nil, false))
        func push(_ text: String) {
            let waker = state.withLock {
                $0.pieces.append(Array(text.utf8)); return $0.waker
            }
            waker?.wake()
        }
        func end() {
            let waker = state.withLock {
                $0.ended = true; return $0.waker
            }
            waker?.wake()
        }
        func start(waker: ConnectionWaker) { state.withLock { $0.waker = waker } }
        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> StreamRead {
            state.withLock { state in
                guard !state.pieces.isEmpty else { return state.ended ? .end : .wait }
                let piece = state.pieces.removeFirst()
                buffer.copyBytes(from: piece)
                return .bytes(piece.count)
            }
        }
        func finish() { state.withLock { $0.finished = true } }
    }

    /// One answer read back from the bytes written.
    struct Answer: Equatable, CustomStringConvertible {
        var version: String
        var status: Int
        var fields: [String: String]
        var body: String
        var description: String { "\(version) \(status) \(fields) \(body.debugDescription)" }
    }

    /// Routes and a server (never started: only its routes, limits and counters are used).
    final class Setup: @unchecked Sendable {
        let completions = Completions()
        let durations = Durations()
        let gate = BodyGate()
        let script = Script()
        let executor = ManualExecutor()
        let server: HTTPServer
        let file: String

        init(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) {
            file = FileManager.default.temporaryDirectory.appendingPathComponent("machine-\(UUID().uuidString)").path
            _ = FileManager.default.createFile(atPath: file, contents: Data("0123456789".utf8))
            var routes = RouterBuilder()
            routes.add(middleware: completions)
            routes.add(middleware: durations)
            routes.get("/hello") { _, _ in "hello" }
            routes.post("/echo") { request, _ in Response(status: .ok, contentType: "text/plain", body: request.rawBody) }
            routes.get("/items/:id") { _, context in "item \(try context.parameters.require("id", as: Int.self))" }
            routes.get("/later") { request, _ in Reply.later { done in done { try "later".response(for: request) } } }
            routes.get("/big") { _, _ in Response(status: .ok, contentType: "text/plain", body: Array(repeating: 0x62, count: 10_000)) }
            routes.get("/sized/:bytes") { _, context in
                Response(
                    status: .ok, contentType: "text/plain", body: Array(repeating: 0x63, count: try context.parameters.require("bytes", as: Int.self))
                )
            }
            let path = file
            routes.get("/file") { _, _ in
                Response.file(fd: Glibc.open(path, O_RDONLY), offset: 2, length: 6, headers: HTTPHeaders([("Content-Type", "text/plain")]))
            }
            let script = self.script
            routes.get("/stream") { _, _ in Response.stream(script, headers: HTTPHeaders([("Content-Type", "text/plain")])) }
            routes.post("/gated", body: .multipart(files: GatedStore(gate: gate))) { request, _ in "files \(request.files.map(\.size))" }
            routes.get("/away", runs: .executor(executor)) { _, _ in "away" }
            routes.post("/away", runs: .executor(executor)) { request, context in
                context.sendInterim(.uploadResumptionSupported, headers: HTTPHeaders([("Upload-Offset", "\(request.rawBody.count)")]))
                return "away \(request.rawBody.count)"
            }
            var configuration = HTTPServer.Configuration(port: 0, threads: 1, shutdownGracePeriod: 1)
            configure(&configuration)
            server = HTTPServer(configuration: configuration, router: routes.build(), log: Logger(accessLog: false))
        }

        deinit { unlink(file) }

        func connection(now: UInt64 = start) -> MemoryConnection<HTTP1StateMachine> { MemoryConnection(server: server, now: now) }
    }

    static let start: UInt64 = 1_000_000_000

    /// A multipart body of one file part of `size` bytes (`a`), of type `oneFileType`.
    static func oneFile(size: Int) -> [UInt8] {
        let head = "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        return Array(head.utf8) + [UInt8](repeating: 0x61, count: size) + Array("\r\n--b--\r\n".utf8)
    }

    static let oneFileType = "multipart/form-data; boundary=b"

    /// Reads answers from `bytes`; `heads` are the positions (among final answers) of answers to
    /// HEAD, which carry no body. Stops at an answer not complete yet.
    static func answers(_ bytes: [UInt8], heads: Set<Int> = []) -> [Answer] {
        var answers: [Answer] = []
        var position = 0
        var finals = 0
        let separator: [UInt8] = [13, 10, 13, 10]
        while position < bytes.count {
            guard let end = (position...(bytes.count - 4)).first(where: { Array(bytes[$0..<($0 + 4)]) == separator }) else { break }
            let lines = String(decoding: bytes[position..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let statusLine = lines[0].split(separator: " ")
            var fields: [String: String] = [:]
            for line in lines.dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                fields[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
            }
            fields["date"] = nil
            var answer = Answer(version: String(statusLine[0]), status: Int(statusLine[1]) ?? 0, fields: fields, body: "")
            position = end + 4
            if answer.status < 200 {
                answers.append(answer)
                continue
            }
            if heads.contains(finals) || answer.status == 204 || answer.status == 304 {
            } else if let length = fields["content-length"].flatMap({ Int($0) }) {
                guard position + length <= bytes.count else { break }
                answer.body = String(decoding: bytes[position..<(position + length)], as: UTF8.self)
                position += length
            } else if fields["transfer-encoding"] == "chunked" {
                var body: [UInt8] = []
                while true {
                    guard let lineEnd = (position..<max(position, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                        let size = Int(String(decoding: bytes[position..<lineEnd], as: UTF8.self), radix: 16)
                    else { return answers }
                    position = lineEnd + 2
                    guard position + size + 2 <= bytes.count else { return answers }
                    body += bytes[position..<(position + size)]
                    position += size + 2
                    if size == 0 { break }
                }
                answer.body = String(decoding: body, as: UTF8.self)
            } else {
                answer.body = String(decoding: bytes[position...], as: UTF8.self)
                position = bytes.count
            }
            finals += 1
            answers.append(answer)
        }
        return answers
    }

    static func ok(_ body: String, type: String = "text/plain; charset=utf-8", close: Bool = false, version: String = "HTTP/1.1") -> Answer {
        var fields = ["content-type": type, "x-content-type-options": "nosniff", "content-length": String(body.utf8.count)]
        if close { fields["connection"] = "close" }
        return Answer(version: version, status: 200, fields: fields, body: body)
    }

    // MARK: - Bytes in pieces

    /// Four requests — no body, a Content-Length body, a chunked body, a path parameter — and
    /// where each ends.
    static let four: (bytes: [UInt8], ends: [Int]) = {
        let requests = [
            "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
            "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            "GET /items/7 HTTP/1.1\r\nHost: a\r\n\r\n",
        ]
        var ends: [Int] = []
        var bytes: [UInt8] = []
        for request in requests {
            bytes += Array(request.utf8)
            ends.append(bytes.count)
        }
        return (bytes, ends)
    }()

    static let fourAnswers = [ok("hello"), ok("hello", type: "text/plain"), ok("abcde", type: "text/plain"), ok("item 7")]

    @Test("pipelined downloads to a client that reads nothing: one file open at a time; when it reads, every answer arrives")
    func pipelinedFilesOneAtATime() {
        let setup = Setup()
        var connection = setup.connection()
        connection.clientReads = false
        connection.send(Array(String(repeating: "GET /file HTTP/1.1\r\nHost: x\r\n\r\n", count: 20).utf8))
        #expect(setup.server.requestsInFlight == 1, "\(setup.server.requestsInFlight) downloads begun, each holding its file")
        connection.clientReads = true
        connection.pump()
        for _ in 0..<100 { connection.pump() }
        #expect(Self.answers(connection.takeOutput()).map(\.body) == Array(repeating: "234567", count: 20))
        #expect(setup.server.requestsInFlight == 0)
    }

    @Test("bytes split at every position: each request is answered as soon as it is complete, in order; the idle connection holds no buffer")
    func splitEverywhere() {
        let (bytes, ends) = Self.four
        for split in 0...bytes.count {
            let setup = Setup()
            var connection = setup.connection()
            connection.send(bytes[..<split])
            let complete = ends.filter { $0 <= split }.count
            #expect(Self.answers(connection.output) == Array(Self.fourAnswers.prefix(complete)), "split at \(split)")
            connection.send(bytes[split...])
            #expect(Self.answers(connection.output) == Self.fourAnswers, "split at \(split)")
            #expect(setup.completions.all.map(\.status) == [200, 200, 200, 200], "split at \(split)")
            #expect(setup.completions.all.allSatisfy { $0.outcome == .sent })
            #expect(connection.machine.heldBufferBytes == 0, "split at \(split): an idle connection holds a buffer")
            #expect(!connection.ended && !connection.writesShut && connection.interest.read)
            #expect(connection.violations.isEmpty, "\(connection.violations)")
            #expect(setup.server.requestsInFlight == 0)
        }
    }

    @Test("a pipelined head with a field line without a name, completed in a later read: refused, not a crash")
    func emptyFieldNameAcrossReads() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("GET /hello HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\n: v\r\n".utf8))
        connection.send(Array("Host: a\r\n\r\n".utf8))
        #expect(Self.answers(connection.output).map(\.status) == [200, 400])
    }

    @Test("one byte per read, and every read size up to the whole: the same answers")
    func readSizes() {
        for size in [1, 2, 3, 7, 16, 100, Self.four.bytes.count] {
            let setup = Setup()
            var connection = setup.connection()
            connection.readSize = size
            connection.send(Self.four.bytes)
            #expect(Self.answers(connection.output) == Self.fourAnswers, "reads of \(size)")
            #expect(connection.violations.isEmpty, "\(connection.violations)")
            #expect(connection.machine.heldBufferBytes == 0)
        }
    }

    @Test("pipelined: a hundred requests in one read are answered in order, each completed once")
    func pipelined() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send((0..<100).flatMap { Array("GET /items/\($0) HTTP/1.1\r\nHost: a\r\n\r\n".utf8) })
        #expect(Self.answers(connection.output).map(\.body) == (0..<100).map { "item \($0)" })
        #expect(setup.completions.all.map(\.target) == (0..<100).map { "/items/\($0)" })
        #expect(connection.violations.isEmpty)
    }

    // MARK: - Writes

    @Test("the socket takes one byte per write: the same bytes, head and body, a file, a stream, in order")
    func oneByteWrites() {
        func exchange(writeSize: Int) -> (answers: [Answer], writes: Int, output: Int, violations: [String]) {
            let setup = Setup()
            var connection = setup.connection()
            connection.writeSize = writeSize
            connection.send(
                Self.four.bytes
                    + Array("GET /big HTTP/1.1\r\nHost: a\r\n\r\nGET /file HTTP/1.1\r\nHost: a\r\n\r\nGET /stream HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            setup.script.push("abc")
            connection.deliverWakes()
            setup.script.push("defg")
            setup.script.end()
            connection.deliverWakes()
            connection.send(Array("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            #expect(setup.script.state.withLock { $0.finished })
            #expect(setup.completions.all.count == 8)
            // The access log's body bytes: the big answer's, the file's range, the stream's.
            #expect(setup.completions.all.suffix(4).map(\.bytes) == [10_000, 6, 7, 5], "\(setup.completions.all)")
            return (Self.answers(connection.output), connection.writes, connection.output.count, connection.violations)
        }
        let whole = exchange(writeSize: .max)
        let bytewise = exchange(writeSize: 1)
        var expected = Self.fourAnswers
        expected.append(Self.ok(String(repeating: "b", count: 10_000), type: "text/plain"))
        expected.append(Self.ok("234567", type: "text/plain"))
        expected.append(
            Answer(
                version: "HTTP/1.1", status: 200,
                fields: ["content-type": "text/plain", "x-content-type-options": "nosniff", "transfer-encoding": "chunked"],
                body: "abcdefg"))
        expected.append(Self.ok("hello"))
        #expect(whole.answers == expected)
        #expect(bytewise.answers == expected)
        #expect(bytewise.writes == bytewise.output, "every write took one byte")
        #expect(whole.writes < 20)
        #expect(whole.violations.isEmpty && bytewise.violations.isEmpty, "\(whole.violations) \(bytewise.violations)")
    }

    @Test("a client that reads nothing: parsing stops past 1 MiB of answers; when it reads, the rest is answered in order")
    func outputHighWater() {
        let setup = Setup()
        var connection = setup.connection()
        connection.clientReads = false
        connection.send((0..<300).flatMap { _ in Array("GET /big HTTP/1.1\r\nHost: a\r\n\r\n".utf8) })
        #expect(connection.output.isEmpty)
        #expect(!connection.interest.read && connection.interest.write)
        #expect(connection.machine.heldBufferBytes > 0, "the requests not parsed are kept")
        #expect(setup.completions.all.isEmpty)
        connection.clientReads = true
        connection.pump()
        let answers = Self.answers(connection.output)
        #expect(answers.count == 300 && answers.allSatisfy { $0.body.utf8.count == 10_000 })
        #expect(setup.completions.all.count == 300)
        #expect(connection.machine.heldBufferBytes == 0)
    }

    // MARK: - Time

    @Test("a header section not complete 10 s after the connection opened is cut; 1 µs before, it is not")
    func headerDeadline() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("GET /hel".utf8))
        connection.now = Self.start + 10_000_000 - 1
        connection.tick()
        #expect(connection.closed == false)
        connection.now += 1
        connection.tick()
        #expect(connection.closed == true)
        #expect(setup.server.slowConnectionsClosed.timedOut == 1)
        #expect(setup.completions.all.isEmpty, "no request began")
    }

    @Test("a head that arrived before the deadline while the loop was busy is served, not cut")
    func loopLate() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("GET /hello HT".utf8))
        // The rest arrives; the loop has not polled since before the deadline.
        connection.now = Self.start + 12_000_000
        connection.polledAt = Self.start + 9_000_000
        connection.arrive(Array("TP/1.1\r\nHost: a\r\n\r\n".utf8))
        connection.tick()
        #expect(connection.closed == false)
        #expect(Self.answers(connection.output) == [Self.ok("hello")])
        // With nothing unread, the same lateness is the client's.
        var idle = setup.connection()
        idle.now = Self.start + 12_000_000
        idle.polledAt = Self.start + 9_000_000
        idle.tick()
        #expect(idle.closed == true)
    }

    @Test("an idle keep-alive connection gets the header deadline from its last answer")
    func keepAliveDeadline() {
        let setup = Setup()
        var connection = setup.connection()
        connection.now = Self.start + 5_000_000
        connection.send(Array("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        connection.now = Self.start + 14_999_999
        connection.tick()
        #expect(connection.closed == false)
        connection.now = Self.start + 15_000_000
        connection.tick()
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.outcome) == [.sent])
    }

    /// Issue 31 item 3: the server gave up on the body and closed without a word (the request
    /// ended as a timeout, status 0), which a proxy answers `502` for a request it cannot
    /// resend. It now answers `408` problem+json, `Connection: close`, and lingers as after any
    /// refusal mid-body.
    @Test("a body below 512 B/s once 10 s have passed is answered 408 problem+json, then the connection closes")
    func minimumBodyRate() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n".utf8) + [UInt8](repeating: 0x61, count: 5_200))
        connection.now = Self.start + 9_000_000
        connection.tick()
        #expect(connection.closed == false, "within the grace period")
        connection.now = Self.start + 10_000_000
        connection.tick()
        #expect(connection.closed == false, "5,200 bytes in 10 s: 520 B/s")
        #expect(Self.answers(connection.output).isEmpty)
        connection.now = Self.start + 10_200_000
        connection.tick()
        let answers = Self.answers(connection.output)
        #expect(answers.map(\.status) == [408])
        #expect(answers.first?.fields["connection"] == "close")
        #expect(answers.first?.fields["content-type"] == "application/problem+json")
        #expect(String(decoding: connection.output.prefix(30), as: UTF8.self).hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        #expect(answers.first?.body.contains(#""title":"Request Timeout""#) == true)
        #expect(connection.writesShut == true)
        connection.send([UInt8](repeating: 0x61, count: 1000))  // the rest, late: dropped
        connection.closeInput()
        #expect(connection.closed == true)
        #expect(setup.server.slowConnectionsClosed.slowBodies == 1)
        #expect(setup.completions.all.map(\.status) == [408])
        #expect(setup.completions.all.map(\.outcome) == [.sent])
        #expect(connection.violations.isEmpty)
    }

    @Test("a body with no minimum rate that stops for the idle timeout is answered 408 too, never closed without an answer")
    func bodyStopsForIdleTimeout() {
        let setup = Setup { $0.minimumBodyRate = 0 }
        var connection = setup.connection()
        connection.send(Array("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc".utf8))
        connection.now = Self.start + 29_000_000
        connection.tick()
        #expect(Self.answers(connection.output).isEmpty)
        connection.now = Self.start + 30_000_000
        connection.tick()
        #expect(Self.answers(connection.output).map(\.status) == [408])
        connection.closeInput()
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.status) == [408])
    }

    @Test("an answer the client does not read for the idle timeout ends as a timeout")
    func idleTimeout() {
        let setup = Setup()
        var connection = setup.connection()
        connection.clientReads = false
        connection.send(Array("GET /big HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        connection.now = Self.start + 29_999_999
        connection.tick()
        #expect(connection.closed == false)
        connection.now = Self.start + 30_000_000
        connection.tick()
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.outcome) == [.timeout])
    }

    // MARK: - Interim answers and refusals

    @Test("Expect: 100-continue is answered 100 before the body when the policy accepts the length, then the final answer")
    func continueAccepted() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n".utf8))
        #expect(connection.output == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        connection.send(Array("hello".utf8))
        #expect(
            Self.answers(connection.output) == [
                Answer(version: "HTTP/1.1", status: 100, fields: [:], body: ""), Self.ok("hello", type: "text/plain"),
            ])
    }

    @Test("a length the policy refuses: the final answer at once, no 100, the body never read; the connection closes after lingering")
    func continueRefused() {
        let setup = Setup { $0.maxBodySize = 4 }
        var connection = setup.connection()
        connection.send(Array("POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n".utf8))
        let answers = Self.answers(connection.output)
        #expect(answers.map(\.status) == [413])
        #expect(answers.first?.fields["connection"] == "close")
        #expect(connection.writesShut && !connection.closed)
        connection.send(Array("hello".utf8))  // sent anyway: dropped
        #expect(Self.answers(connection.output).count == 1)
        connection.closeInput()
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.status) == [413])
        #expect(connection.violations.isEmpty)
    }

    @Test("a refused body: answered at once with Connection: close; what follows is dropped for at most 256 KiB or 2 s")
    func refusalLingers() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("GET /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 400000\r\n\r\n".utf8) + [UInt8](repeating: 0x61, count: 1000))
        #expect(Self.answers(connection.output).map(\.status) == [413])
        #expect(connection.writesShut == true)
        connection.send([UInt8](repeating: 0x61, count: 200_000))
        #expect(connection.closed == false)
        connection.send([UInt8](repeating: 0x61, count: 100_000))
        #expect(connection.closed == true, "more than 256 KiB dropped")

        var slow = setup.connection()
        slow.send(Array("GET /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n".utf8))
        slow.now = Self.start + 1_999_999
        slow.tick()
        #expect(slow.closed == false)
        slow.now = Self.start + 2_000_000
        slow.tick()
        #expect(slow.closed == true)
        #expect(slow.violations.isEmpty && connection.violations.isEmpty)
    }

    // MARK: - Waiting on others

    @Test("a consumer that is behind stops the reading of its body, not counted against its rate; called back, the body is read to its end")
    func backPressure() {
        let setup = Setup()
        var connection = setup.connection()
        connection.readSize = 1000
        let size = 50_000
        let body = Self.oneFile(size: size)
        connection.send(
            Array("POST /gated HTTP/1.1\r\nHost: a\r\nContent-Type: \(Self.oneFileType)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        let atPause = setup.gate.state.withLock { $0.received }
        #expect(atPause > 0 && atPause < size)
        #expect(connection.unread > 0 && !connection.interest.read, "the body waits in the socket")
        connection.now = Self.start + 60_000_000
        connection.tick()
        #expect(connection.closed == false, "the pause is the server's, not the client's")
        setup.gate.release()
        #expect(connection.mail.bodyCalledBack == true)
        connection.now = Self.start + 60_000_001
        connection.bodyReady()
        #expect(Self.answers(connection.output) == [Self.ok("files [\(size)]")])
        #expect(setup.gate.state.withLock { $0.paused } == 1)
    }

    @Test("a consumer that asks to wait on a chunk parsed with more chunks and the body's end: they all still reach it, and the request is answered")
    func backPressureOnTheLastRead() {
        let setup = Setup()
        var connection = setup.connection()
        let boundary = "b"
        let head =
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        let body = Array((head + String(repeating: "a", count: 3000) + "\r\n--\(boundary)--\r\n").utf8)
        // Pieces of 500 bytes, each its own chunk: several body pieces and the end in one parse.
        var framed: [UInt8] = []
        var offset = 0
        while offset < body.count {
            let piece = body[offset..<min(body.count, offset + 500)]
            framed += Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10]
            offset += piece.count
        }
        framed += Array("0\r\n\r\n".utf8)
        connection.send(
            Array(
                "POST /gated HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; boundary=\(boundary)\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .utf8)
                + framed + Array("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(setup.gate.state.withLock { $0.paused } >= 1, "the writer asked to wait")
        #expect(Self.answers(connection.output) == [Self.ok("files [3000]"), Self.ok("hello")])
        #expect(setup.completions.all.map(\.status) == [200, 200])
        setup.gate.release()  // its late call back finds nothing to resume
        connection.bodyReady()
        #expect(connection.closed == false && connection.violations.isEmpty)
    }

    @Test("a later reply, with more requests pipelined behind it: nothing more is parsed until it is ready, then the answers go in order")
    func laterThenPipelined() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("GET /later HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(connection.output.isEmpty)
        #expect(!connection.interest.read)
        #expect(connection.machine.heldBufferBytes > 0, "the second request is kept")
        #expect(setup.completions.all.isEmpty)
        connection.send(Array("GET /items/3 HTTP/1.1\r\nHost: a\r\n\r\n".utf8))  // arrives meanwhile: left in the socket
        #expect(connection.unread > 0)
        let resumed = connection.resumeLater()
        #expect(resumed)
        #expect(Self.answers(connection.output) == [Self.ok("later"), Self.ok("hello"), Self.ok("item 3")])
        #expect(setup.completions.all.map(\.target) == ["/later", "/hello", "/items/3"])
        #expect(connection.machine.heldBufferBytes == 0)
    }

    // MARK: - Work on a route's executor

    @Test("a route on an executor: nothing more is parsed until its step lands; then its answer, then the requests behind it")
    func awayWithoutBody() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("GET /away HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(connection.output.isEmpty && !connection.interest.read)
        #expect(connection.machine.heldBufferBytes > 0, "the request behind is kept")
        #expect(connection.land() == false, "nothing ran yet")
        #expect(setup.executor.run() == 1, "a request without a body makes one trip")
        #expect(connection.land() == true)
        #expect(Self.answers(connection.output) == [Self.ok("away"), Self.ok("hello")])
        #expect(setup.completions.all.map(\.target) == ["/away", "/hello"])
        #expect(connection.violations.isEmpty)
    }

    @Test(
        "a route with a body on an executor: its head's trip, then its body read on the loop, then its end's trip; an interim sent there goes out when it reaches the loop, before the answer"
    )
    func awayWithBody() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("POST /away HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n".utf8))
        #expect(connection.output.isEmpty, "no 100 before the head phase, away, accepted the body")
        setup.executor.run()
        connection.land()
        #expect(connection.output == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        connection.send(Array("hello".utf8))
        #expect(Self.answers(connection.output).count == 1, "the handler waits for its trip")
        #expect(setup.executor.run() == 1)
        connection.interimsQueued()  // the loop took the interim posted from the executor
        let interim = Answer(version: "HTTP/1.1", status: 104, fields: ["upload-offset": "5"], body: "")
        #expect(Self.answers(connection.output).last == interim)
        connection.land()
        #expect(Self.answers(connection.output) == [Answer(version: "HTTP/1.1", status: 100, fields: [:], body: ""), interim, Self.ok("away 5")])
    }

    @Test("a client that hangs up while its request is away: completed once, when the step lands, as a client abort")
    func awayAbandoned() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("POST /away HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n".utf8))
        connection.abort(.clientAbort)
        #expect(connection.closed == true)
        #expect(setup.completions.all.isEmpty, "completion waits for the landing")
        setup.executor.run()
        connection.land()
        #expect(setup.completions.all.map(\.outcome) == [.clientAbort])

        var halfClosed = setup.connection()
        halfClosed.send(Array("POST /away HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n".utf8))
        halfClosed.closeInput()
        setup.executor.run()
        halfClosed.land()
        #expect(halfClosed.closed == true, "its body can never come")
        #expect(setup.completions.all.map(\.outcome) == [.clientAbort, .clientAbort])
        #expect(setup.server.requestsInFlight == 0)
    }

    @Test("quiesce: an idle connection closes at once; one with a request in flight answers it with Connection: close")
    func quiesce() {
        let setup = Setup()
        var idle = setup.connection()
        idle.quiesce()
        #expect(idle.closed == true)
        var busy = setup.connection()
        busy.send(Array("GET /later HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        busy.quiesce()
        #expect(busy.closed == false)
        busy.resumeLater()
        #expect(Self.answers(busy.output) == [Self.ok("later", close: true)])
        #expect(busy.writesShut == true)
        var answered = setup.connection()
        answered.send(Array("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        answered.quiesce()
        #expect(Self.answers(answered.output) == [Self.ok("hello")])
        #expect(answered.closed == true, "idle again after its request")
    }

    @Test("quiesce after the start of the HTTP/2 preface: closed at once, never handed over")
    func quiesceInPreface() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("PR".utf8))  // four bytes of it hand the connection over
        connection.quiesce()
        #expect(connection.closed == true)
        #expect(connection.handedOff == nil && connection.output.isEmpty && setup.completions.all.isEmpty)
    }

    // MARK: - Versions and methods

    @Test("HEAD: the length of the GET answer and no body; the next answer is framed right")
    func head() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(
            Array("HEAD /hello HTTP/1.1\r\nHost: a\r\n\r\nHEAD /big HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        let answers = Self.answers(connection.output, heads: [0, 1])
        #expect(answers.map(\.status) == [200, 200, 200])
        #expect(answers.map { $0.fields["content-length"] } == ["5", "10000", "5"])
        #expect(answers.map(\.body) == ["", "", "hello"])
        #expect(connection.output.count < 600, "no body was written for HEAD")
    }

    @Test("a head that cannot be parsed after a HEAD or an HTTP/1.0 request: its refusal is HTTP/1.1 with its body")
    func malformedAfterHead() {
        let setup = Setup()
        for first in ["HEAD /hello HTTP/1.1\r\nHost: a\r\n\r\n", "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"] {
            var connection = setup.connection()
            connection.send(Array((first + "PC\0\0 / HTTP/1.1\r\n\r\n").utf8))
            let answers = Self.answers(connection.output, heads: first.hasPrefix("HEAD") ? [0] : [])
            #expect(answers.count == 2, "after \(first.debugDescription)")
            #expect(answers.last?.version == "HTTP/1.1" && answers.last?.status == 400)
            #expect(
                answers.last.map { $0.body.utf8.count == Int($0.fields["content-length"] ?? "") && $0.body.contains("Bad Request") } == true,
                "the refusal's body is written")
        }
    }

    @Test("HTTP/1.0: answered in HTTP/1.0 and closed, unless it asks for keep-alive; never a 100")
    func http10() {
        let setup = Setup()
        var closing = setup.connection()
        closing.send(Array("GET /hello HTTP/1.0\r\n\r\nGET /hello HTTP/1.0\r\n\r\n".utf8))
        #expect(Self.answers(closing.output) == [Self.ok("hello", close: true, version: "HTTP/1.0")])
        #expect(closing.writesShut == true)

        var kept = setup.connection()
        kept.send(Array("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".utf8))
        var expected = Self.ok("hello", version: "HTTP/1.0")
        expected.fields["connection"] = "keep-alive"
        #expect(Self.answers(kept.output) == [expected])
        #expect(kept.writesShut == false)
        kept.send(Array("POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8))
        #expect(Self.answers(kept.output).count == 1, "no 100 to an HTTP/1.0 client")
        kept.send(Array("hi".utf8))
        #expect(Self.answers(kept.output).map(\.body) == ["hello", "hi"])
    }

    @Test("the HTTP/2 preface, split anywhere in it: handed over with every byte read")
    func http2Preface() {
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]
        for split in 1..<preface.count {
            let setup = Setup()
            var connection = setup.connection()
            connection.send(preface[..<split])
            connection.send(preface[split...])
            #expect(connection.handedOff != nil, "split at \(split)")
            #expect(connection.handedOff.map { preface.starts(with: $0) && $0.count >= 4 } == true, "split at \(split)")
            #expect(connection.output.isEmpty && setup.completions.all.isEmpty)
        }
        let setup = Setup()
        var other = setup.connection()
        other.send(Array("PRX".utf8))
        other.send(Array(" / HTTP/1.1\r\n\r\n".utf8))
        #expect(other.handedOff == nil)
        #expect(Self.answers(other.output).first?.status == 400)
    }

    @Test("a client that hangs up mid-request: the request ends as a client abort and the connection closes")
    func hangUpMidBody() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc".utf8))
        connection.closeInput()
        #expect(connection.closed == true)
        #expect(connection.output.isEmpty)
        #expect(setup.completions.all.map(\.outcome) == [.clientAbort])
        #expect(setup.server.requestsInFlight == 0)
    }

    @Test("a client that shuts its write side after a request still gets the answer of a later reply")
    func halfClose() {
        let setup = Setup()
        var connection = setup.connection()
        connection.send(Array("GET /later HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        connection.closeInput()
        #expect(connection.closed == false)
        connection.resumeLater()
        // Reading had stopped while the reply was awaited: the end of the input is seen after the answer.
        #expect(Self.answers(connection.output) == [Self.ok("later")])
        #expect(connection.closed == true)
        #expect(setup.completions.all.map(\.outcome) == [.sent])
    }

    // MARK: - Time

    @Test(
        "every duration of a request is read from its connection's clock, whether it stands far ahead of the system's monotonic clock (a machine booted a minute ago) or behind it: exact, never a trap"
    )
    func durationsFromTheConnectionsClock() {
        let system = MachineClock.system.now()
        for start in [system &+ 1_000_000_000_000, 1, Self.start] {
            let setup = Setup()
            var connection = setup.connection(now: start)
            connection.send(Array("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            connection.send(Array("GET /later HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            connection.now += 2_500
            let resumed = connection.resumeLater()
            #expect(resumed)
            connection.send(Array("GET /away HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            connection.now += 1_000
            #expect(setup.executor.run() == 1, "the answer is made on the executor's thread, at the connection's time")
            connection.now += 300
            let landed = connection.land()
            #expect(landed)
            #expect(Self.answers(connection.output) == [Self.ok("hello"), Self.ok("later"), Self.ok("away")])
            let durations = setup.durations.all
            #expect(durations.map(\.target) == ["/hello", "/later", "/away"])
            #expect(durations.map(\.total) == [0, 2_500, 1_300], "start \(start)")
            #expect(durations.map(\.answered) == [0, 2_500, 1_000], "start \(start)")
            #expect(connection.violations.isEmpty)
        }
    }

    @Test("a duration between two readings of one clock is never negative and never traps")
    func durationsSaturate() {
        // MonotonicClock's own arithmetic: JotterSystemTests.
        let clock = MachineClock.manual(ManualClock(5))
        #expect(clock.elapsed(since: 9) == 0)
        #expect(clock.elapsed(since: 2) == 3)
    }
}
