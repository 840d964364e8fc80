import Foundation
import Glibc
import Synchronization
import Testing
import JotterAPI
@testable import JotterClient
import JotterTestSupport

/// What the SDK sends over a plain socket on Linux: event streams that sleep while idle, and
/// uploads a server can refuse before their bytes are sent.
@Suite("JotterClient: event streams and uploads over a plain socket")
struct SocketExchangeTests {
    /// User plus system CPU time of process `pid`, in clock ticks (`/proc/PID/stat`).
    static func cpuTicks(_ pid: Int32) throws -> Int {
        let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name, which is in parentheses: state is field 3, utime 14, stime 15.
        let fields = text[text.index(after: text.lastIndex(of: ")")!)...].split(separator: " ")
        return Int(fields[11])! + Int(fields[12])!
    }

    @Test("an idle event stream costs the client no CPU (jotter notes watch, a process of its own)")
    func idleStream() throws {
        let server = try ServerProcess(["--quiet"])
        defer { server.signal(SIGTERM); server.finish() }
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("watch.txt")
        let watcher = try ChildProgram(
            [ServerProcess.binary.path, "notes", "watch", "--server", "127.0.0.1:\(server.port)"], output: .file(output),
            errors: .discard)
        defer { watcher.stop() }
        // The stream is open once a change shows up.
        var seen = false
        for _ in 0..<500 where !seen {
            _ = try RawHTTP(port: server.port).request("POST", "/notes", body: Array("body=ping".utf8), close: true)
            usleep(20_000)
            seen = ((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("created note")
        }
        try #require(seen, "jotter notes watch printed no change")
        let before = try Self.cpuTicks(watcher.pid)
        sleep(3)
        let ticks = try Self.cpuTicks(watcher.pid) - before
        print("jotter notes watch on an idle stream: \(ticks) CPU ticks in 3 s (\(sysconf(Int32(_SC_CLK_TCK))) per second)")
        #expect(ticks < 30, "\(ticks) CPU ticks in 3 s while idle")
    }

    @Test("an upload over the server's limit is refused with its 413 before any of the body is sent")
    func refusedBeforeSending() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // 4 GiB, sparse: nothing is written to make it.
        let big = folder.appendingPathComponent("big.bin")
        _ = FileManager.default.createFile(atPath: big.path, contents: nil)
        try #require(truncate(big.path, 4 << 30) == 0)
        try await withClient(configure: { $0.maxUploadSize = 1 << 20 }) { client, _ in
            let sent = Mutex<Int64>(0)
            let refused = await #expect(throws: JotterClientError.self) {
                try await client.uploads.upload(fileAt: big) { progress in sent.withLock { $0 = max($0, progress.completed) } }
            }
            #expect(refused?.isTooLarge == true, "\(String(describing: refused))")
            #expect(refused?.detail?.contains("upload limit of 1048576 bytes") == true)
            #expect(sent.withLock { $0 } == 0, "\(sent.withLock { $0 }) bytes of the body were sent")
        }
    }

    @Test("a stream is read whatever its framing: chunked, Content-Length, to the end; cancelling ends it")
    func framing() async throws {
        try await withClient { client, _ in
            // Content-Length (a JSON answer) and chunked (the event stream) both go through it.
            let request = client.makeRequest("GET", "/hello", query: ["name": "Bob"])
            var body = Data()
            try await client.stream(request, response: { #expect($0.statusCode == 200) }) { body.append($0) }
            #expect(try JSONDecoder().decode(HelloMessage.self, from: body).message == "Hello Bob!")

            let events = Task { for try await _ in client.notes.events() {} }
            try await Task.sleep(for: .milliseconds(200))
            events.cancel()
            #expect(await events.result.isSuccess)
        }
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
