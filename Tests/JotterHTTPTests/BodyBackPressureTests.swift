import Foundation
import Glibc
import Synchronization
import Testing
@testable import JotterHTTP
import JotterTestSupport

/// Back-pressure from a request body's consumer (`MultipartFileWriter.mustWait`,
/// `RequestBodyStream.mustWait`): while a file writer or a raw body's receiver is behind, the
/// engine reads no more of that body — and, on one event loop, goes on
/// serving other connections; when the writer calls back, the body is read to its end.
@Suite("Body back-pressure")
struct BodyBackPressureTests {
    /// The consumer a test gates: a multipart body's file writer, or a raw body's receiver.
    enum Consumer: String, CaseIterable, CustomTestStringConvertible {
        case multipartWriter = "multipart file writer", rawReceiver = "raw body's receiver"
        var testDescription: String { rawValue }
    }

    @Test(
        "a consumer that is behind stops the reading of its body, not the loop; released, the body is read to its end",
        arguments: Consumer.allCases)
    func pausesAndResumes(_ consumer: Consumer) throws {
        let gate = BodyGate()
        var routes = RouterBuilder()
        routes.get("/hello") { _, _ in "hello" }
        routes.post("/gated", body: .multipart(files: GatedStore(gate: gate))) { request, _ in
            "received \(request.files.map(\.size))"
        }
        routes.put("/gated", body: .stream { _, _ in GatedStream(gate: gate) }) { _, _ in
            "received [\(gate.state.withLock { $0.received })]"
        }
        let server = HTTPServer(
            configuration: HTTPServer.Configuration(port: 0, threads: 1, shutdownGracePeriod: 3),
            router: routes.build(), log: Logger(accessLog: false))
        try server.start()
        defer { server.shutdown() }

        let size = 16 << 20
        let boundary = "gate-boundary"
        let (head, tail) =
            switch consumer {
            case .multipartWriter:
                (
                    "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n"
                        + "Content-Type: application/octet-stream\r\n\r\n", "\r\n--\(boundary)--\r\n"
                )
            case .rawReceiver: ("", "")
            }
        let upload = try RawHTTP(port: server.port, timeout: 20)
        try upload.send(
            (consumer == .multipartWriter
                ? "POST /gated HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=\(boundary)\r\n"
                : "PUT /gated HTTP/1.1\r\n")
                + "Host: x\r\nContent-Length: \(head.utf8.count + size + tail.utf8.count)\r\n\r\n" + head)
        // The client writes its body from a thread of its own (its send blocks while the server reads nothing).
        nonisolated(unsafe) let sending = upload
        let sender = Thread {
            try? sending.send([UInt8](repeating: 0x61, count: size))
            try? sending.send(tail)
        }
        sender.start()

        // Paused after the first bytes: what the consumer has stays the same while it is behind,
        // though the client has far more to send.
        let deadline = Date().addingTimeInterval(10)
        while gate.state.withLock({ $0.ready == nil }), Date() < deadline { usleep(5_000) }
        let atPause = gate.state.withLock { $0.received }
        #expect(atPause > 0 && atPause < size, "\(atPause) bytes at the pause")
        usleep(300_000)
        #expect(gate.state.withLock { $0.received } == atPause, "bytes were read while the consumer was behind")
        // The one loop still serves another connection.
        let other = try RawHTTP(port: server.port, timeout: 5).request("GET", "/hello", close: true)
        #expect(other.status == 200)

        gate.release()
        let answer = try upload.readResponse()
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == "received [\(size)]")
        #expect(gate.state.withLock { $0.paused } == 1)
    }
}
