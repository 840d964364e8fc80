// libFuzzer targets for Jotter's parsers, one executable: `JOTTER_FUZZ` names the parser.
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
        _ = FramingCheck.check(method: line.first ?? "", target: line.count > 1 ? line[1] : "", version: line.count > 2 ? line[2] : "",
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
    case "connection":
        ConnectionFuzz.shared.drive(bytes, prefix: [])
    case "http2":
        ConnectionFuzz.shared.drive(bytes, prefix: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8))
    default:
        fatalError("JOTTER_FUZZ must be one of: multipart, form, framing, range, etag, event-stream, connection, http2")
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
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt
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
    let files = isFolder.boolValue
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
