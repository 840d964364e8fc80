import Foundation
import Synchronization
import Testing
import JotterAPI
import JotterClient
import JotterHTTP
import JotterServerTestSupport
import JotterTestSupport

/// What CLIENT-NOTES measured about URLSession on Linux, and the SDK's answer to each, checked.
/// (Events through the delegate and resumed downloads are tested in their own suites.)
@Suite("JotterClient: URLSession on Linux, worked around", .tags(.timing), .serialized)
struct URLSessionWorkaroundTests {
    /// Requests being answered at once, and the most there were.
    final class Concurrency: Sendable {
        private let counts = Mutex((now: 0, most: 0))
        func begin() {
            counts.withLock {
                $0.now += 1; $0.most = max($0.most, $0.now)
            }
        }
        func end() { counts.withLock { $0.now -= 1 } }
        func reset() -> Int {
            counts.withLock { counts in
                defer { counts.most = 0 }
                return counts.most
            }
        }
    }

    /// A server whose `/hello` answers after `delay` seconds without holding an engine thread.
    static func slowServer(delay: Double, concurrency: Concurrency = Concurrency()) throws -> HTTPServer {
        var routes = RouterBuilder()
        routes.get("/hello") { _, _ in
            concurrency.begin()
            return Reply.later { done in
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                    concurrency.end()
                    done { Response(status: .ok, contentType: "application/json", body: Array(#"{"message":"Hi"}"#.utf8)) }
                }
            }
        }
        let server = HTTPServer(
            configuration: .init(port: 0, threads: 1, shutdownGracePeriod: 0.2), router: routes.build(),
            log: Logger(accessLog: false))
        try server.start()
        return server
    }

    /// 32 concurrent calls with `connections` per host.
    func concurrentCalls(connections: Int, server: HTTPServer) async throws {
        var configuration = JotterClient.Configuration()
        configuration.maximumConnectionsPerHost = connections
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, configuration: configuration)
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<32 { group.addTask { try await client.hello(name: "x") } }
            for try await greeting in group { #expect(greeting == "Hi") }
        }
    }

    @Test("URLSession allows 6 connections per host by default; the SDK's 16 are used at once")
    func connectionsPerHost() async throws {
        let concurrency = Concurrency()
        let server = try Self.slowServer(delay: 0.5, concurrency: concurrency)
        defer { server.shutdown() }
        #expect(JotterClient.Configuration().maximumConnectionsPerHost == 16)
        try await concurrentCalls(connections: 16, server: server)
        let sixteen = concurrency.reset()
        try await concurrentCalls(connections: 6, server: server)
        let six = concurrency.reset()
        #expect(sixteen > 6 && sixteen <= 16, "\(sixteen) at once")
        #expect(six <= 6, "\(six) at once")
    }

    @Test("cancelling the task ends the request at once and is .cancelled, not a transport error")
    func cancellation() async throws {
        let server = try Self.slowServer(delay: 5)
        defer { server.shutdown() }
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)
        let call = Task<String, any Error> { try await client.hello(name: "x") }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        call.cancel()
        let result = await call.result
        #expect(ContinuousClock.now - start < .seconds(3))  // the server would answer after 5 s
        guard case .failure(let error) = result else { Issue.record("the call was not cancelled"); return }
        #expect((error as? JotterClientError)?.isCancelled == true, "\(error)")
    }

    @Test("calls cancelled just as their answers arrive each end at once: URLSession's cancel, which can deadlock then, is not used")
    func cancellationAsTheAnswerArrives() async throws {
        try await TestApp.with { app in
            let client = JotterClient(baseURL: app.baseURL)
            _ = try await client.hello(name: "warm")
            var late = 0
            for _ in 0..<400 where late == 0 {
                let call = Task<String, any Error> { try await client.hello(name: "x") }
                try await Task.sleep(nanoseconds: UInt64.random(in: 0...1_500_000))
                if await !call.cancelAndEnds(within: 5) { late += 1 }
            }
            try #require(late == 0, "a cancelled call did not end within 5 s")
            #expect(try await client.hello(name: "after") == "Hello after!", "the session still answers")
        }
    }

    @Test("an upload body goes with its Content-Length, not chunked (so a server can refuse it before it is sent)")
    func uploadLength() async throws {
        var form = MultipartFormData()
        form.append("x", name: "field")
        try await TestApp.with { app in
            let echo = try await JotterClient(baseURL: app.baseURL).echo(method: "POST", body: .multipart(form))
            #expect(echo.headers["Transfer-Encoding"] == nil)
            #expect(echo.headers["Content-Length"] == String(form.contentLength))
            #expect(echo.form == ["field": ["x"]])
        }
    }
}
