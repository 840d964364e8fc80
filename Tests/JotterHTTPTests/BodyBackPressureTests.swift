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
    /// A writer that is behind after its first bytes until the test lets it go.
    final class Gate: @unchecked Sendable {
        let state = Mutex<(received: Int, ready: (@Sendable () -> Void)?, released: Bool, paused: Int)>((0, nil, false, 0))

        func release() {
            let ready = state.withLock { state -> (@Sendable () -> Void)? in
                state.released = true
                defer { state.ready = nil }
                return state.ready
            }
            ready?()
        }
    }

    struct GatedStore: MultipartFileStore {
        let gate: Gate
        func open(field: String, filename: String, contentType: String, temporaryDirectory: String) throws(HTTPError) -> any MultipartFileWriter {
            Writer(gate: gate)
        }
    }

    final class Writer: MultipartFileWriter {
        let gate: Gate
        init(gate: Gate) { self.gate = gate }
        var location: String { "gated" }
        func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) { gate.state.withLock { $0.received += bytes.count } }
        func finish() throws(HTTPError) -> (size: Int64, sha256: String) { (Int64(gate.state.withLock { $0.received }), "") }
        func discard() {}
        func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
            gate.state.withLock { state in
                guard !state.released, state.received > 0 else { return false }
                state.ready = ready
                state.paused += 1
                return true
            }
        }
    }

    @Test("a writer that is behind stops the reading of its body, not the loop; released, the body is read to its end")
    func pausesAndResumes() throws {
        let gate = Gate()
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

    /// A raw-body receiver whose store work runs elsewhere: not ready before the first byte
    /// until the test says, then ready (optionally refusing, with an interim answer sent from
    /// the test's thread first).
    final class Preparing: RequestBodyStream, @unchecked Sendable {
        struct State {
            var received = 0
            var ready: (@Sendable () -> Void)?
            var outcome: Result<Void, HTTPError>?
            var asked = 0
        }
        let state = Mutex(State())
        let context: RequestContext
        init(context: RequestContext) { self.context = context }

        func receive(_ chunk: UnsafeRawBufferPointer) throws { state.withLock { $0.received += chunk.count } }
        func finish() throws {}
        func abort() {}
        func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
            state.withLock { state in
                state.asked += 1
                guard state.outcome == nil else { return false }
                state.ready = ready
                return true
            }
        }
        func resumed() throws {
            if case .failure(let error) = state.withLock({ $0.outcome }) { throw error }
        }

        /// From the test's thread: the 104 (when asked), the outcome, then the engine reads on.
        func settle(_ outcome: Result<Void, HTTPError>, interim: Bool) {
            if interim { context.sendInterim(.uploadResumptionSupported, headers: HTTPHeaders([("Location", "/uploads/x")])) }
            let ready = state.withLock { state -> (@Sendable () -> Void)? in
                state.outcome = outcome
                defer { state.ready = nil }
                return state.ready
            }
            ready?()
        }
    }

    /// The receivers a server made, in order.
    final class Made: Sendable {
        let list = Mutex<[Preparing]>([])
    }

    /// A server with `POST /prepared`, whose receivers are handed to the test as they are made.
    func preparingServer(_ made: Made) throws -> HTTPServer {
        var routes = RouterBuilder()
        routes.post("/prepared", body: .stream { _, context in
            let receiver = Preparing(context: context)
            made.list.withLock { $0.append(receiver) }
            return receiver
        }) { request, _ in
            "received \((request.bodyStream as! Preparing).state.withLock { $0.received })"
        }
        let server = HTTPServer(configuration: HTTPServer.Configuration(port: 0, threads: 1, shutdownGracePeriod: 3),
                                router: routes.build(), log: Logger(accessLog: false))
        try server.start()
        return server
    }

    func receiver(_ made: Made) throws -> Preparing {
        let deadline = Date().addingTimeInterval(5)
        while made.list.withLock({ $0.isEmpty }), Date() < deadline { usleep(2_000) }
        return try #require(made.list.withLock { $0.first })
    }

    @Test("a raw body's receiver not ready yet is asked before the first byte: none is read until it is, then all, after the 104 it sent from another thread")
    func notReadyBeforeTheFirstByte() throws {
        let made = Made()
        let server = try preparingServer(made)
        defer { server.shutdown() }
        let connection = try RawHTTP(port: server.port, timeout: 5)
        let body = [UInt8](repeating: 0x62, count: 100_000)
        try connection.send(Array("POST /prepared HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        let preparing = try receiver(made)
        usleep(200_000)
        #expect(preparing.state.withLock { $0.received } == 0, "body bytes were read before the receiver was ready")
        #expect(preparing.state.withLock { $0.asked } == 1)
        preparing.settle(.success(()), interim: true)
        let interim = try connection.readResponse()
        #expect(interim.status == 104)
        #expect(interim.header("Location") == "/uploads/x")
        let answer = try connection.readResponse()
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == "received \(body.count)")
    }

    @Test("a receiver that fails while the engine waits refuses the request at once, its body unread — none sent yet, too")
    func refusedWhileWaiting() throws {
        let made = Made()
        let server = try preparingServer(made)
        defer { server.shutdown() }
        // Only the head: the client waits for an answer before it sends any of the body.
        let connection = try RawHTTP(port: server.port, timeout: 5)
        try connection.send("POST /prepared HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        let preparing = try receiver(made)
        preparing.settle(.failure(HTTPError(HTTPStatus(429), detail: "too many")), interim: false)
        let answer = try connection.readResponse()
        #expect(answer.status == 429)
        #expect(preparing.state.withLock { $0.received } == 0)
        #expect(connection.isClosedByServer())
    }
}
