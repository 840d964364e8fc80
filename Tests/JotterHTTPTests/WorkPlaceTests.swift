import Foundation
import Glibc
import Synchronization
import Testing
@testable import JotterHTTP
import JotterHTTPTesting
import JotterTestSupport

/// Routes that run on an executor (`WorkPlace`): their head phase, body reader, handler and
/// rendering run there, the bytes on the loop; the answer comes back to the connection in order.
@Suite("Where a route's work runs")
struct WorkPlaceTests {
    /// Threads of its own, as a store's are (never the loop's).
    struct ThreadExecutor: Executor {
        static let queue = DispatchQueue(label: "work-place-tests", attributes: .concurrent)
        func execute(_ work: @escaping @Sendable () -> Void) { Self.queue.async(execute: work) }
    }

    /// Where each phase of each request ran, by request id: the head and handle phases on the
    /// route's place, `completed` always on the connection's loop.
    final class Places: Middleware, @unchecked Sendable {
        struct Seen { var head: pthread_t?; var handle: pthread_t?; var completed: pthread_t?; var outcome: CompletedExchange.Outcome? }
        let seen = Mutex<[String: Seen]>([:])
        let completions = Atomic<Int>(0)

        func head(_ head: RequestHead, context: inout RequestContext) throws {
            let id = head.headers["X-Request-Id"] ?? "-"
            seen.withLock { $0[id, default: Seen()].head = pthread_self() }
            if head.headers["X-Refuse"] != nil { throw HTTPError(.unauthorized, detail: "refused in the head phase") }
        }

        func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
            let id = request.headers["X-Request-Id"] ?? "-"
            seen.withLock { $0[id, default: Seen()].handle = pthread_self() }
            return try next(request, context)
        }

        func completed(_ exchange: CompletedExchange) {
            let id = exchange.head?.headers["X-Request-Id"] ?? "-"
            seen.withLock {
                $0[id, default: Seen()].completed = pthread_self()
                $0[id, default: Seen()].outcome = exchange.outcome
            }
            completions.add(1, ordering: .relaxed)
        }

        subscript(id: String) -> Seen? { seen.withLock { $0[id] } }

        /// Waits until `count` requests were completed.
        func waitForCompletions(_ count: Int, seconds: Double = 5) {
            let deadline = Date().addingTimeInterval(seconds)
            while completions.load(ordering: .relaxed) < count, Date() < deadline { usleep(5_000) }
        }
    }

    final class Server {
        let server: HTTPServer
        let places = Places()
        /// `/away/hold` signals `holding`, then waits for `gate`.
        let gate: DispatchSemaphore
        let holding: DispatchSemaphore
        /// `/away/late-interim` answers, waits for `lateInterim`, sends a `104`, then signals `lateSent`.
        let lateInterim: DispatchSemaphore, lateSent: DispatchSemaphore

        init() throws {
            let gate = DispatchSemaphore(value: 0), holding = DispatchSemaphore(value: 0)
            self.gate = gate
            self.holding = holding
            let lateInterim = DispatchSemaphore(value: 0), lateSent = DispatchSemaphore(value: 0)
            self.lateInterim = lateInterim
            self.lateSent = lateSent
            var routes = RouterBuilder()
            routes.add(middleware: places)
            routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
            routes.get("/here") { _, _ in "on the loop" }
            routes.group { away in
                away.runs = .executor(ThreadExecutor())
                away.get("/away/hello") { _, _ in "away" }
                away.get("/away/slow/:ms") { _, context in
                    usleep(UInt32(try context.parameters.require("ms", as: Int.self)) * 1000)
                    return "slow \(context.parameters["ms"] ?? "")"
                }
                away.post("/away/body", body: .buffered(limit: 1000)) { request, _ in "got \(request.rawBody.count)" }
                away.get("/away/later") { request, _ in
                    Reply.later { done in
                        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { done { try "later".response(for: request) } }
                    }
                }
                away.get("/away/hints") { _, context in
                    let sent = context.sendInterim(103, headers: HTTPHeaders([("Link", "</a.css>; rel=preload")]))
                    return "hints \(sent)"
                }
                away.get("/away/late-interim") { [lateInterim, lateSent] request, context in
                    Reply.later { done in
                        DispatchQueue.global().async {
                            done { try "answered".response(for: request) }
                            // As a resumable upload's receiver may, once its request was answered.
                            lateInterim.wait()
                            _ = context.sendInterim(.uploadResumptionSupported, headers: HTTPHeaders([("Location", "/late")]))
                            lateSent.signal()
                        }
                    }
                }
                away.get("/away/hold") { _, _ in
                    holding.signal()
                    gate.wait()
                    return "released"
                }
            }
            server = HTTPServer(
                configuration: .init(port: 0, threads: 1, shutdownGracePeriod: 2), router: routes.build(),
                log: Logger(accessLog: false))
            try server.start()
        }

        deinit { server.shutdown() }

        func connect() throws -> RawHTTP { try RawHTTP(port: server.port, timeout: 5) }
    }

    @Test("a route on an executor: its head phase and handler run there, completed on the loop; a loop route stays on the loop")
    func placesOfPhases() throws {
        let server = try Server()
        let connection = try server.connect()
        let away = try connection.request("GET", "/away/hello", headers: [("X-Request-Id", "a")])
        #expect(away.status == 200 && away.text == "away")
        let here = try connection.request("GET", "/here", headers: [("X-Request-Id", "h")])
        #expect(here.text == "on the loop")
        server.places.waitForCompletions(2)
        let a = try #require(server.places["a"]), h = try #require(server.places["h"])
        let loop = try #require(h.completed)
        #expect(pthread_equal(try #require(a.completed), loop) != 0, "completed runs on the connection's loop")
        #expect(pthread_equal(try #require(a.head), loop) == 0, "the head phase ran on the loop")
        #expect(pthread_equal(try #require(a.handle), loop) == 0, "the handler ran on the loop")
        #expect(pthread_equal(try #require(h.head), loop) != 0)
        #expect(pthread_equal(try #require(h.handle), loop) != 0)
    }

    @Test("pipelined requests to executor and loop routes are answered in request order, slow ones included")
    func pipelinedInOrder() throws {
        let server = try Server()
        let connection = try server.connect()
        try connection.send(
            "GET /away/slow/150 HTTP/1.1\r\nHost: x\r\n\r\nGET /here HTTP/1.1\r\nHost: x\r\n\r\n"
                + "POST /away/body HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                + "GET /away/slow/10 HTTP/1.1\r\nHost: x\r\n\r\nGET /away/later HTTP/1.1\r\nHost: x\r\n\r\nGET /here HTTP/1.1\r\nHost: x\r\n\r\n")
        let texts = try (0..<6).map { _ in try connection.readResponse().text }
        #expect(texts == ["slow 150", "on the loop", "got 5", "slow 10", "later", "on the loop"])
    }

    @Test("in process: later replies and plain ones on an executor, 500 of each, each answered once")
    func inProcess() throws {
        var routes = RouterBuilder()
        routes.runs = .executor(ThreadExecutor())
        routes.get("/later") { request, _ in
            Reply.later { done in
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.001) { done { try "later".response(for: request) } }
            }
        }
        routes.post("/now", body: .buffered(limit: 100)) { request, _ in "now \(request.rawBody.count)" }
        let client = InProcessClient(router: routes.build())
        for _ in 0..<500 {
            #expect(client.send("GET", "/later").text == "later")
            #expect(client.send("POST", "/now", body: "abc").text == "now 3")
        }
    }

    @Test("Expect: 100-continue on an executor route: 100 only after its head phase accepted; a refusal there reads no body")
    func continueAfterTheHeadPhase() throws {
        let server = try Server()
        let connection = try server.connect()
        try connection.send("POST /away/body HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        let interim = try connection.readResponse()
        #expect(interim.status == 100)
        try connection.send("abcd")
        #expect(try connection.readResponse().text == "got 4")

        let refused = try server.connect()
        try refused.send("POST /away/body HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\nX-Refuse: 1\r\n\r\n")
        let answer = try refused.readResponse()
        #expect(answer.status == 401, "the head phase's refusal is the answer, no 100 before it")
        #expect(answer.header("Connection") == "close")

        let tooLarge = try server.connect()
        try tooLarge.send("POST /away/body HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
        #expect(try tooLarge.readResponse().status == 413)
    }

    @Test("a body sent at once behind a head whose phase runs elsewhere is read once the head is back, byte for byte")
    func bodyHeldDuringTheHeadStep() throws {
        let server = try Server()
        for split in [0, 1, 40, 70] {
            let connection = try server.connect()
            let request = Array("POST /away/body HTTP/1.1\r\nHost: x\r\nContent-Length: 300\r\n\r\n".utf8) + [UInt8](repeating: 0x61, count: 300)
            let cut = min(request.count, split == 0 ? request.count : split)
            try connection.send(Array(request[..<cut]))
            usleep(20_000)
            try connection.send(Array(request[cut...]))
            #expect(try connection.readResponse().text == "got 300")
        }
    }

    @Test("an interim response sent from the executor comes before the final answer")
    func interimFromTheExecutor() throws {
        let server = try Server()
        let connection = try server.connect()
        try connection.send("GET /away/hints HTTP/1.1\r\nHost: x\r\n\r\n")
        let interim = try connection.readResponse()
        #expect(interim.status == 103)
        #expect(interim.header("Link") == "</a.css>; rel=preload")
        #expect(try connection.readResponse().text == "hints true")
    }

    @Test("an interim response posted after its request was answered is dropped: it never lands on the next pipelined request")
    func lateInterimIsDropped() throws {
        let server = try Server()
        let connection = try server.connect()
        try connection.send(
            "GET /away/late-interim HTTP/1.1\r\nHost: x\r\n\r\nGET /away/hold HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try connection.readResponse()
        #expect(first.status == 200 && first.text == "answered")
        // The second request is being served (its exchange open) when the first one's 104 arrives.
        #expect(server.holding.wait(timeout: .now() + 5) == .success)
        server.lateInterim.signal()
        #expect(server.lateSent.wait(timeout: .now() + 5) == .success)
        usleep(100_000)  // the loop has taken the posted interim by now
        server.gate.signal()
        let second = try connection.readResponse()
        #expect(second.status == 200, "a stray \(second.status) \(second.header("Location") ?? "") on the next request")
        #expect(second.text == "released")
    }

    @Test("a client reset while its handler runs elsewhere: completed once, as client-abort, after the handler; the loop serves on")
    func clientGoneWhileAway() throws {
        let server = try Server()
        let connection = try server.connect()
        try connection.send("GET /away/hold HTTP/1.1\r\nHost: x\r\nX-Request-Id: gone\r\n\r\n")
        #expect(server.holding.wait(timeout: .now() + 5) == .success)
        connection.reset()
        // The loop sees the reset on the socket; a request on another connection is served meanwhile.
        usleep(50_000)
        let other = try server.connect()
        #expect(try other.request("GET", "/here", headers: [("X-Request-Id", "other")]).text == "on the loop")
        #expect(server.places["gone"]?.completed == nil, "completed before the handler had ended")
        server.gate.signal()
        server.places.waitForCompletions(2)
        let gone = try #require(server.places["gone"])
        #expect(gone.completed != nil)
        #expect(gone.outcome == .clientAbort)
        #expect(server.places.completions.load(ordering: .relaxed) == 2)
        #expect(server.server.requestsInFlight == 0)
    }
}
