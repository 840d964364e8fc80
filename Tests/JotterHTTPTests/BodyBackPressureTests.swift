import Foundation
import Glibc
import Synchronization
import Testing
@testable import JotterHTTP
import JotterTestSupport

/// Back-pressure from a request body's consumer (`MultipartFileWriter.mustWait`): while a file
/// writer is behind, the engine reads no more of that body — and, on one event loop, goes on
/// serving other connections; when the writer calls back, the body is read to its end.
@Suite("Body back-pressure")
struct BodyBackPressureTests {
    @Test("a writer that is behind stops the reading of its body, not the loop; released, the body is read to its end")
    func pausesAndResumes() throws {
        let gate = BodyGate()
        var routes = RouterBuilder()
        routes.get("/hello") { _, _ in "hello" }
        routes.post("/gated", body: .multipart(files: GatedStore(gate: gate))) { request, _ in
            "files \(request.files.map(\.size))"
        }
        let server = HTTPServer(configuration: HTTPServer.Configuration(port: 0, threads: 1, shutdownGracePeriod: 3),
                                router: routes.build(), log: Logger(accessLog: false))
        try server.start()
        defer { server.shutdown() }

        let size = 16 << 20
        let boundary = "gate-boundary"
        let head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n"
            + "Content-Type: application/octet-stream\r\n\r\n"
        let tail = "\r\n--\(boundary)--\r\n"
        let upload = try RawHTTP(port: server.port, timeout: 20)
        try upload.send("POST /gated HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=\(boundary)\r\n"
                        + "Content-Length: \(head.utf8.count + size + tail.utf8.count)\r\n\r\n" + head)
        // The client writes its body from a thread of its own (its send blocks while the server reads nothing).
        nonisolated(unsafe) let sending = upload
        let sender = Thread {
            try? sending.send([UInt8](repeating: 0x61, count: size))
            try? sending.send(tail)
        }
        sender.start()

        // Paused after the first bytes: what the writer has stays the same while it is behind,
        // though the client has far more to send.
        let deadline = Date().addingTimeInterval(10)
        while gate.state.withLock({ $0.ready == nil }), Date() < deadline { usleep(5_000) }
        let atPause = gate.state.withLock { $0.received }
        #expect(atPause > 0 && atPause < size, "\(atPause) bytes at the pause")
        usleep(300_000)
        #expect(gate.state.withLock { $0.received } == atPause, "bytes were read while the writer was behind")
        // The one loop still serves another connection.
        let other = try RawHTTP(port: server.port, timeout: 5).request("GET", "/hello", close: true)
        #expect(other.status == 200)

        gate.release()
        let answer = try upload.readResponse()
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == "files [\(size)]")
        #expect(gate.state.withLock { $0.paused } == 1)
    }
}
