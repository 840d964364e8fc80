// libFuzzer targets for Jotter's parsers and its HTTP/1.1 and HTTP/2 connections, one executable: `JOTTER_FUZZ` names the target.
//
//   scripts/fuzz               (or `make fuzz`): each target for 60 s on its corpus, fuzz/corpus/<name>
//   JOTTER_FUZZ=range .build/debug/jotter-fuzz fuzz/corpus/range
//
// Built with `-sanitize=fuzzer,address` and `-DFUZZING`, it hands over to libFuzzer's driver; built plainly (as `swift build` does), it replays the files it is given
// through the same target, so a crash found once stays a regression check.
// Debug builds only: the parsers are internal, reached with `@testable import`, which a release
// build (`make test` builds one) does not allow.
#if DEBUG
import Foundation
import Glibc
@testable import JotterClient
@testable import JotterHTTP
import JotterHTTPTesting

/// One input to one parser. A parser may refuse an input (throw); it must never crash.
func fuzzOne(_ target: String, _ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    switch target {
    case "multipart":
        // The first byte picks the chunking, so boundaries fall anywhere.
        let step = max(1, Int(bytes.first ?? 1))
        var parser = MultipartParser(boundary: "XyZ")
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + step)
            var failed = false
            bytes[start..<end].withUnsafeBytes { chunk in
                do throws(HTTPError) { try parser.feed(chunk) { _ in } } catch { failed = true }
            }
            if failed { return }
            start = end
        }
        try? parser.finish()
        _ = try? MultipartParser.boundary(of: text)
        _ = try? MultipartParser.parseHeaders(bytes[...])
        _ = cleanFilename(text)
    case "form":
        _ = try? FormFields(decoding: bytes, context: "the body")
    case "framing":
        // Request head as text: "METHOD TARGET VERSION\nName: value\n…"
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let line = (lines.first ?? "").split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        var headers = HTTPHeaders()
        for field in lines.dropFirst() {
            let pair = field.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            headers.add(String(pair[0]), pair.count > 1 ? String(pair[1]) : "")
        }
        _ = FramingCheck.check(
            method: line.first ?? "", target: line.count > 1 ? line[1] : "", version: line.count > 2 ? line[2] : "",
            headers: headers, folded: bytes.count % 7 == 0)
        _ = FramingCheck.isValidHost(text)
    case "range":
        let size = UInt64(bytes.first ?? 0) * 1_000
        _ = ByteRange(text, size: size)
        _ = ByteRange(text, size: .max)
        _ = ByteRange(text, size: 0)
    case "etag":
        let condition = EntityTagCondition(text)
        _ = condition.matches(#""3""#, weak: true)
        _ = condition.matches(text, weak: false)
    case "event-stream":
        var parser = EventStreamParser()
        let step = max(1, Int(bytes.last ?? 1))
        var start = 0
        while start < bytes.count {
            _ = parser.feed(bytes[start..<min(bytes.count, start + step)])
            start += step
        }
    case "machine":
        MachineFuzz.shared.drive(bytes)
    case "machine2":
        MachineFuzz.shared.drive2(bytes)
    case "connection":
        ConnectionFuzz.shared.drive(bytes, prefix: [])
    case "http2":
        ConnectionFuzz.shared.drive(bytes, prefix: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8))
    default:
        fatalError("JOTTER_FUZZ must be one of: multipart, form, framing, range, etag, event-stream, machine, machine2, connection, http2")
    }
}

/// The `machine` and `machine2` targets: the HTTP/1.1 and the HTTP/2 connection's state machine
/// driven directly, with no socket and no thread (`MemoryConnection`). The input is what the
/// client sends (over HTTP/2: after the client preface, which is sent first), in reads and
/// writes of sizes its first two bytes pick; a byte 0xFF followed by an operation byte is an
/// event instead of data: time passes (and the sweep runs), a later reply is ready, the
/// client stops or starts reading, a stream has bytes, a body's consumer catches up, quiesce,
/// a route's executor runs what it was given and its steps land (0xFF 0xFF is a 0xFF byte).
/// At the end the client reads everything, every reply and step is handed back and the client
/// closes. Checked, whatever the bytes: no action after the connection
/// ended, no write after its write side was shut, no wait for bytes that are there while
/// nothing is read (a spin); the connection ends; no request stays in flight and none is
/// completed twice (`RequestLifecycle.completed` asserts it). HTTP/1.1: the answers written are,
/// in order, those of the requests completed as sent. HTTP/2: the output is frames, SETTINGS
/// first, and no more streams end in it than requests were completed as sent.
final class MachineFuzz: @unchecked Sendable {
    static let shared = MachineFuzz()

    /// What every completed request reported, in order.
    final class Record: Middleware, @unchecked Sendable {
        var exchanges: [(status: Int, method: String?, outcome: CompletedExchange.Outcome)] = []
        func completed(_ exchange: CompletedExchange) {
            exchanges.append((exchange.status, exchange.head?.method.rawValue, exchange.outcome))
        }
    }

    /// A streaming body that gives one piece for each wake the input asks for, then ends.
    final class Drip: StreamingBody, @unchecked Sendable {
        var pieces = 0
        var ended = false
        /// The wakers of the streams it was given to (several over HTTP/2).
        var wakers: [ConnectionWaker] = []
        func start(waker: ConnectionWaker) { wakers.append(waker) }
        func wake() { for waker in wakers { waker.wake() } }
        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> StreamRead {
            if pieces > 0 {
                pieces -= 1
                let count = min(buffer.count, 3 + Int(offset % 5))
                buffer.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0x64, count: count)
                return .bytes(count)
            }
            return ended ? .end : .wait
        }
        func finish() {}
    }

    /// A file writer that is behind after its first bytes until the input says it caught up.
    final class Valve: MultipartFileStore, MultipartFileWriter, @unchecked Sendable {
        var behind = false
        var ready: (@Sendable () -> Void)?
        var received = 0
        func open(field: String, filename: String, contentType: String, temporaryDirectory: String) throws(HTTPError) -> any MultipartFileWriter {
            self
        }
        var location: String { "valve" }
        func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) { received += bytes.count }
        func finish() throws(HTTPError) -> (size: Int64, sha256: String) { (Int64(received), "") }
        func discard() {}
        func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
            guard !behind, received > 0 else { return false }
            behind = true
            self.ready = ready
            return true
        }
        /// Calls back; true when it was behind.
        func catchUp() -> Bool {
            guard behind, let ready else { return false }
            behind = false
            self.ready = nil
            received = 0
            ready()
            return true
        }
    }

    /// A route's executor whose work waits until the input says it runs (on this thread).
    final class Executor: JotterHTTP.Executor, @unchecked Sendable {
        var work: [@Sendable () -> Void] = []
        func execute(_ work: @escaping @Sendable () -> Void) { self.work.append(work) }
        func run() {
            while !work.isEmpty { work.removeFirst()() }
        }
    }

    let record = Record()
    let streams = Drip()
    let valve = Valve()
    let executor = Executor()
    let server: HTTPServer
    let file: String

    private init() {
        file = NSTemporaryDirectory() + "jotter-fuzz-machine-\(getpid())"
        _ = FileManager.default.createFile(atPath: file, contents: Data("0123456789abcdef".utf8))
        var routes = RouterBuilder()
        routes.add(middleware: record)
        routes.get("/hello") { request, _ in "Hello \(try request.head.query()["name"] ?? "")!" }
        routes.post("/body") { request, _ in "\(request.rawBody.count)" }
        routes.post("/files", body: .multipart(files: valve)) { request, _ in "\(request.files.count)" }
        routes.put("/notes/:id") { request, context in "\(try context.parameters.require("id", as: Int.self))" }
        routes.get("/later") { request, _ in Reply.later { done in done { try "later".response(for: request) } } }
        routes.get("/away", runs: .executor(executor)) { _, _ in "away" }
        routes.post("/away", runs: .executor(executor)) { request, context in
            context.sendInterim(.uploadResumptionSupported)
            return Reply.later { done in done { try "\(request.rawBody.count)".response(for: request) } }
        }
        routes.get("/big") { _, _ in Response(status: .ok, contentType: "text/plain", body: [UInt8](repeating: 0x62, count: 5_000)) }
        let path = file
        routes.get("/file") { _, _ in Response.file(fd: Glibc.open(path, O_RDONLY), offset: 3, length: 9) }
        let streams = self.streams
        routes.get("/stream") { _, _ in Response.stream(streams) }
        var configuration = HTTPServer.Configuration(port: 0, threads: 1, maxBodySize: 4096, shutdownGracePeriod: 1)
        configuration.headerTimeout = 10
        server = HTTPServer(configuration: configuration, router: routes.build(), log: Logger(accessLog: false))
    }

    /// The `machine` target: HTTP/1.1.
    func drive(_ input: [UInt8]) {
        var connection = MemoryConnection<HTTP1StateMachine>(server: server, readBufferSize: 1 << 12)
        exercise(&connection, input, prefix: [])
        if connection.handedOff == nil {
            let sent = record.exchanges.filter { $0.outcome == .sent }
            let heads = Set(record.exchanges.indices.filter { record.exchanges[$0].method == "HEAD" })
            let written = Self.finalStatuses(connection.output, heads: heads)
            if Array(written.prefix(sent.count)) != sent.map(\.status) || written.count > sent.count + 1 {
                fatalError("answers written \(written) are not those of the requests completed as sent \(sent.map(\.status)), in order")
            }
        }
    }

    /// The `machine2` target: HTTP/2, the input's bytes after the client preface.
    func drive2(_ input: [UInt8]) {
        var connection = MemoryConnection<HTTP2StateMachine>(server: server, readBufferSize: 1 << 12)
        connection.begin()
        exercise(&connection, input, prefix: HTTP2StateMachine.preface)
        let frames = Self.frames(connection.output)
        if frames.first != 4 { fatalError("the connection's first frame is not SETTINGS but type \(frames.first.map(String.init) ?? "none")") }
        let sent = record.exchanges.filter { $0.outcome == .sent }.count
        if frames.ended.count > sent {
            fatalError("\(frames.ended.count) stream(s) ended in the frames written, \(sent) request(s) completed as sent")
        }
    }

    /// Runs `input` through `connection` (see the type's description), then ends it and checks
    /// what every connection must keep to.
    func exercise<Machine: ConnectionMachine & ~Copyable>(_ connection: inout MemoryConnection<Machine>, _ input: [UInt8], prefix: [UInt8]) {
        record.exchanges = []
        streams.pieces = 0
        streams.ended = false
        streams.wakers = []
        valve.behind = false
        valve.ready = nil
        executor.work = []
        connection.readSize = input.count > 0 && input[0] > 0 ? Int(input[0]) : .max
        connection.writeSize = input.count > 1 && input[1] > 0 ? Int(input[1]) : .max
        var pending = prefix
        var index = 2
        while index < input.count {
            let byte = input[index]
            index += 1
            guard byte == 0xFF, index < input.count else {
                pending.append(byte)
                continue
            }
            let operation = input[index]
            index += 1
            if operation == 0xFF {
                pending.append(0xFF)
                continue
            }
            connection.send(pending)
            pending = []
            switch operation % 9 {
            case 0: connection.now += 1_000_000 * UInt64(1 + operation / 8); connection.tick()
            case 1: connection.resumeLater()
            case 2: connection.clientReads.toggle(); connection.pump()
            case 3: streams.pieces += 1; streams.wake(); connection.deliverWakes()
            case 4: if valve.catchUp() { connection.bodyReady() }
            case 5: connection.quiesce()
            case 6: connection.polledAt = connection.now - 1; connection.now += 10_000_000; connection.tick(); connection.polledAt = nil
            case 7: streams.ended = true; streams.wake(); connection.deliverWakes()
            default: executor.run(); connection.interimsQueued(); while connection.land() {}
            }
        }
        connection.send(pending)
        // The end: the client reads, every reply and stream is let go, the client closes, time passes.
        // A body's consumer that falls behind after every read may let one read in each round
        // (as little as one byte): as many rounds as bytes, and 64 more.
        connection.clientReads = true
        streams.ended = true
        let rounds = 64 + input.count
        for _ in 0..<rounds where !connection.ended {
            executor.run()
            connection.interimsQueued()
            while connection.land() {}
            while connection.resumeLater() {}
            streams.wake()
            connection.deliverWakes()
            if valve.catchUp() { connection.bodyReady() }
            connection.closeInput()
            connection.now += 3_000_000
            connection.tick()
        }
        let violations = connection.violations
        if !violations.isEmpty { fatalError("the state machine broke a rule: \(violations)") }
        if !connection.ended { fatalError("the connection neither closed nor handed over after the client closed and \(rounds * 3) s passed") }
        // Steps still away when the connection ended land now; their requests complete then.
        executor.run()
        connection.deliverAll()
        if server.requestsInFlight != 0 { fatalError("\(server.requestsInFlight) request(s) still in flight after the connection ended") }
    }

    /// The HTTP/2 frames in `bytes`, as far as they are complete: the first one's type, and the
    /// streams a DATA or HEADERS frame ended (END_STREAM). Traps on a frame type the server
    /// never sends.
    static func frames(_ bytes: [UInt8]) -> (first: UInt8?, ended: Set<UInt32>) {
        var position = 0
        var first: UInt8?
        var ended: Set<UInt32> = []
        while position + 9 <= bytes.count {
            let length = Int(bytes[position]) << 16 | Int(bytes[position + 1]) << 8 | Int(bytes[position + 2])
            let type = bytes[position + 3], flags = bytes[position + 4]
            let stream =
                (UInt32(bytes[position + 5]) << 24 | UInt32(bytes[position + 6]) << 16 | UInt32(bytes[position + 7]) << 8
                    | UInt32(bytes[position + 8])) & 0x7FFF_FFFF
            if first == nil { first = type }
            if type > 9 { fatalError("the server wrote a frame of type \(type)") }
            if type <= 1, flags & 1 != 0 { ended.insert(stream) }
            position += 9 + length
        }
        return (first, ended)
    }

    /// The statuses of the final answers in `bytes`, in order, as far as they are complete;
    /// `heads`: positions of answers without a body (to HEAD).
    static func finalStatuses(_ bytes: [UInt8], heads: Set<Int>) -> [Int] {
        bytes.withUnsafeBytes { raw -> [Int] in
            var statuses: [Int] = []
            var position = 0
            func find(_ pattern: StaticString, from: Int) -> Int? {
                let count = pattern.utf8CodeUnitCount
                var start = from
                while start + count <= raw.count {
                    guard let hit = memchr(raw.baseAddress! + start, Int32(pattern.utf8Start.pointee), raw.count - start - count + 1) else {
                        return nil
                    }
                    let at = raw.baseAddress!.distance(to: UnsafeRawPointer(hit))
                    if memcmp(raw.baseAddress! + at, pattern.utf8Start, count) == 0 { return at }
                    start = at + 1
                }
                return nil
            }
            while let end = find("\r\n\r\n", from: position) {
                let head = String(decoding: raw[position..<end], as: UTF8.self).lowercased()
                let lines = head.components(separatedBy: "\r\n")
                let parts = lines[0].split(separator: " ")
                guard parts.count >= 2, let status = Int(parts[1]) else { return statuses }
                position = end + 4
                if status < 200 { continue }
                let length = lines.first { $0.hasPrefix("content-length:") }.flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) }
                if heads.contains(statuses.count) || status == 204 || status == 304 {
                } else if let length {
                    guard position + length <= raw.count else { return statuses }
                    position += length
                } else if lines.contains("transfer-encoding: chunked") {
                    while true {
                        guard let lineEnd = find("\r\n", from: position),
                            let size = Int(String(decoding: raw[position..<lineEnd], as: UTF8.self), radix: 16)
                        else { return statuses }
                        position = lineEnd + 2 + size + 2
                        guard position <= raw.count else { return statuses }
                        if size == 0 { break }
                    }
                } else {
                    position = raw.count
                }
                statuses.append(status)
            }
            return statuses
        }
    }
}

/// The connection targets: a real server in this process (one event loop, a few routes that
/// read bodies in each way), and the input written to a new connection in pieces of sizes the
/// first byte picks, then the write side shut. Whatever the bytes, the server answers and/or
/// closes within 5 s, and no request stays in flight — else the target traps.
final class ConnectionFuzz: @unchecked Sendable {
    static let shared = ConnectionFuzz()
    let server: HTTPServer

    private init() {
        var routes = RouterBuilder()
        routes.get("/hello") { request, _ in "Hello \(try request.head.query()["name"] ?? "")!" }
        routes.post("/body") { request, _ in "\(request.rawBody.count)" }
        routes.post("/files", body: .multipart()) { request, _ in "\(request.files.count)" }
        routes.put("/notes/:id") { request, context in "\(try context.parameters.require("id", as: Int.self))" }
        routes.get("/later") { request, _ in
            Reply.later { done in DispatchQueue.global().async { done { try "later".response(for: request) } } }
        }
        var configuration = HTTPServer.Configuration(port: 0, threads: 1, shutdownGracePeriod: 1)
        configuration.headerTimeout = 2
        server = HTTPServer(configuration: configuration, router: routes.build(), log: Logger(accessLog: false))
        do { try server.start() } catch { fatalError("the fuzz server did not start: \(error.description)") }
    }

    func drive(_ bytes: [UInt8], prefix: [UInt8]) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(server.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { fatalError("cannot connect to the fuzz server") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let input = prefix + bytes.dropFirst()
        let step = max(1, Int(bytes.first ?? 255))
        var start = 0
        while start < input.count {
            let end = min(input.count, start + step)
            let sent = input[start..<end].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { break }  // the server closed: it refused what it read
            start += sent
        }
        shutdown(fd, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) { break }
            if count < 0 { fatalError("the server neither answered nor closed within 5 s") }
        }
        let deadline = Date().addingTimeInterval(3)
        while server.requestsInFlight > 0, Date() < deadline { usleep(1_000) }
        if server.requestsInFlight > 0 { fatalError("\(server.requestsInFlight) request(s) still in flight after the connection closed") }
    }
}

let fuzzTarget = ProcessInfo.processInfo.environment["JOTTER_FUZZ"] ?? ""

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(fuzzTarget, data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt
#endif

// The entry point.
#if FUZZING
var arguments = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argv) { fuzzInput($0, $1) })
#else
// Replay: every file named (or every file in every folder named) through the target.
var replayed = 0
for argument in CommandLine.arguments.dropFirst() {
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: argument, isDirectory: &isFolder) else { continue }
    let files =
        isFolder.boolValue
        ? ((try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []).sorted().map { argument + "/" + $0 } : [argument]
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { continue }
        fuzzOne(fuzzTarget, Array(data))
        replayed += 1
    }
}
print("jotter-fuzz: \(fuzzTarget): \(replayed) input(s) replayed without a crash")
#endif
#else
print("jotter-fuzz: build it in debug (scripts/fuzz does)")
#endif
