import Foundation
import Glibc
import Synchronization
import Testing
@testable import JotterHTTP
import JotterTestSupport

/// Interim (1xx) responses on the wire: `100 Continue` only when the body is wanted, and a
/// route's own (`RequestContext.sendInterim`), in order before the final answer.
@Suite("Interim responses")
struct InterimResponseTests {
    final class Counter: RequestBodyStream {
        let count = Atomic<Int>(0)
        func receive(_ chunk: UnsafeRawBufferPointer) throws { count.add(chunk.count, ordering: .relaxed) }
        func finish() throws {}
        func abort() {}
    }

    final class Server {
        let server: HTTPServer
        init() throws {
            var routes = RouterBuilder()
            routes.add(middleware: RequestIDMiddleware())
            routes.post(
                "/upload",
                body: .stream(limit: 1000) { _, context in
                    context.sendInterim(
                        .uploadResumptionSupported, headers: HTTPHeaders([("Location", "/uploads/x"), ("Upload-Draft-Interop-Version", "6")]))
                    return Counter()
                }
            ) { request, _ in
                "received \((request.bodyStream as? Counter)?.count.load(ordering: .relaxed) ?? -1)"
            }
            routes.get("/hints") { _, context in
                let sent = context.sendInterim(103, headers: HTTPHeaders([("Link", "</app.css>; rel=preload")]))
                let switching = context.sendInterim(101)
                let final = context.sendInterim(200)
                return "hints \(sent) \(switching) \(final)"
            }
            server = HTTPServer(
                configuration: .init(port: 0, threads: 1, shutdownGracePeriod: 1), router: routes.build(), log: Logger(accessLog: false))
            try server.start()
        }
        deinit { server.shutdown() }
    }

    /// Everything the server sent until it closed.
    private func exchange(_ server: Server, _ request: String) throws -> String {
        let connection = try RawHTTP(port: server.server.port, timeout: 3)
        try connection.send(request)
        return String(decoding: connection.readToEnd(), as: UTF8.self)
    }

    @Test("a route's 104 with its fields comes before the body is read, then the final answer")
    func uploadResumption() throws {
        let server = try Server()
        let connection = try RawHTTP(port: server.server.port, timeout: 3)
        try connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
        // The body has not been sent: the interim answer is already there.
        let interim = try connection.readResponse()
        #expect(interim.status == 104)
        #expect(interim.header("Location") == "/uploads/x")
        #expect(interim.header("Upload-Draft-Interop-Version") == "6")
        try connection.send("0123456789")
        let final = try connection.readResponse()
        #expect(final.status == 200)
        #expect(final.text == "received 10")
    }

    @Test("byte for byte: the interim answer, then the final one")
    func bytes() throws {
        let server = try Server()
        let text = try exchange(server, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
        #expect(
            text.hasPrefix(
                "HTTP/1.1 104 Upload Resumption Supported\r\nLocation: /uploads/x\r\nUpload-Draft-Interop-Version: 6\r\n\r\nHTTP/1.1 200 OK\r\n"),
            "\(text)")
        #expect(text.hasSuffix("\r\n\r\nreceived 3"))
        #expect(text.components(separatedBy: "HTTP/1.1 ").count == 3)
    }

    @Test("only 1xx other than 101 is sent, and none to an HTTP/1.0 client")
    func onlyInterim() throws {
        let server = try Server()
        let text = try exchange(server, "GET /hints HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(text.hasPrefix("HTTP/1.1 103 Early Hints\r\nLink: </app.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n"), "\(text)")
        #expect(text.hasSuffix("hints true false false"))
        let old = try exchange(server, "GET /hints HTTP/1.0\r\n\r\n")
        #expect(old.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(old)")
        #expect(old.hasSuffix("hints false false false"))
    }

    @Test("100 Continue only when the body policy accepts the declared length")
    func expectContinue() throws {
        let server = try Server()
        let accepted = try RawHTTP(port: server.server.port, timeout: 3)
        try accepted.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        // The route's 104 is sent while its body policy opens the receiver; 100 once it has.
        #expect(try accepted.readResponse().status == 104)
        #expect(try accepted.readResponse().status == 100)
        try accepted.send("hello")
        #expect(try accepted.readResponse().text == "received 5")
        // Over the route's limit: the final answer at once, no 100, and the body is never read.
        let refused = try exchange(server, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
        #expect(refused.hasPrefix("HTTP/1.1 413 "), "\(refused)")
        #expect(!refused.contains("100 Continue"))
    }
}
