import Foundation
import Synchronization
import Testing
import JotterServerTestSupport
import JotterTestSupport
import JotterAPI
@testable import JotterClient
import JotterHTTP

/// A server that fails the first `failures` requests with `status` and `Retry-After`, then
/// answers as Jotter would; it counts every attempt.
final class FlakyServer: Sendable {
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    let server: HTTPServer
    let attempts = Counter()

    init(failures: Int, status: HTTPStatus = .serviceUnavailable, retryAfter: String? = "1") throws {
        var routes = RouterBuilder()
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        let attempts = self.attempts
        let note = Note(
            id: "1", body: "x", createdAt: Timestamp.date("2026-11-30 14:35:40")!, updatedAt: Timestamp.date("2026-11-30 14:35:40")!, version: 1)
        let answer = { @Sendable (success: Response) -> Response in
            guard attempts.value.add(1, ordering: .relaxed).newValue > failures else {
                var headers = HTTPHeaders([("Content-Type", "application/problem+json")])
                if let retryAfter { headers.add("Retry-After", retryAfter) }
                let problem = #"{"type":"about:blank","title":"Service Unavailable","status":\#(status.code),"detail":"busy"}"#
                return Response(status: status, headers: headers, body: Array(problem.utf8))
            }
            return success
        }
        let envelope = try JSONEncoder().encode(NoteEnvelope(note: note))
        let noteResponse = Response(status: .ok, contentType: "application/json", body: Array(envelope))
        routes.get("/hello") { _, _ in answer(Response(status: .ok, contentType: "application/json", body: Array(#"{"message":"Hello!"}"#.utf8))) }
        routes.post("/notes") { _, _ in answer(noteResponse) }
        routes.put("/notes/:id") { _, _ in answer(noteResponse) }
        routes.delete("/notes/:id") { _, _ in answer(noteResponse) }
        server = HTTPServer(configuration: .init(port: 0, threads: 1), router: routes.build(), log: Logger(accessLog: false))
        try server.start()
    }

    func client(_ policy: RetryPolicy = RetryPolicy()) -> JotterClient {
        var configuration = JotterClient.Configuration()
        configuration.retry = policy
        return JotterClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, configuration: configuration)
    }

    var count: Int { attempts.value.load(ordering: .relaxed) }

    deinit { server.shutdown() }
}

@Suite("JotterClient: retries", .tags(.timing), .serialized)
struct RetryTests {
    let clock = ContinuousClock()

    @Test("GET after 503 + Retry-After: waits what the server asked, then succeeds")
    func retryAfter503() async throws {
        let flaky = try FlakyServer(failures: 1, retryAfter: "1")
        let start = clock.now
        let greeting = try await flaky.client().hello(name: "x")
        #expect(greeting == "Hello!")
        #expect(flaky.count == 2)
        #expect(clock.now - start >= .seconds(1))
    }

    @Test("429 is retried too; PUT and DELETE are idempotent")
    func tooManyRequests() async throws {
        let flaky = try FlakyServer(failures: 2, status: 429, retryAfter: "0")
        _ = try await flaky.client().notes.update("1", body: "y")
        #expect(flaky.count == 3)
        let again = try FlakyServer(failures: 1, retryAfter: "0")
        _ = try await again.client().notes.delete("1")
        #expect(again.count == 2)
    }

    @Test("POST is retried only with an Idempotency-Key (the SDK sends one); without, the error says how long to wait")
    func postRetriedWithItsKey() async throws {
        let flaky = try FlakyServer(failures: 1, retryAfter: "0")
        _ = try await flaky.client().notes.create("x")
        #expect(flaky.count == 2)
        #expect(RetryPolicy().delay(after: .http(status: 503, body: Data(), response: nil), attempt: 1, method: "POST") == nil)
        #expect(RetryPolicy().delay(after: .http(status: 503, body: Data(), response: nil), attempt: 1, method: "POST", idempotencyKey: true) != nil)
        #expect(RetryPolicy().delay(after: .http(status: 503, body: Data(), response: nil), attempt: 1, method: "PATCH", idempotencyKey: true) == nil)
    }

    @Test("a Retry-After over the cap is not waited for; attempts are capped")
    func limits() async throws {
        let patient = try FlakyServer(failures: 1, retryAfter: "120")
        let start = clock.now
        await #expect(throws: JotterClientError.self) { try await patient.client().hello(name: "x") }
        #expect(patient.count == 1)
        #expect(clock.now - start < .seconds(60))  // it would have waited 120 s

        let down = try FlakyServer(failures: 100, retryAfter: nil)
        let error = await #expect(throws: JotterClientError.self) {
            try await down.client(RetryPolicy(maximumAttempts: 3, initialDelay: 0.01)).hello(name: "x")
        }
        #expect(error?.status == 503)
        #expect(down.count == 3)
    }

    @Test("connection refused: GET is retried with backoff, and so is POST, which carries its Idempotency-Key")
    func refused() async throws {
        let base = URL(string: "http://127.0.0.1:\(try TestApp.unusedPort())")!
        var configuration = JotterClient.Configuration()
        configuration.retry = RetryPolicy(maximumAttempts: 3, initialDelay: 0.2)
        let client = JotterClient(baseURL: base, configuration: configuration)
        var start = clock.now
        let error = await #expect(throws: JotterClientError.self) { try await client.hello(name: "x") }
        #expect(error?.isTransport == true)
        #expect(clock.now - start >= .milliseconds(300))  // 0.1–0.2 s, then 0.2–0.4 s
        start = clock.now
        await #expect(throws: JotterClientError.self) { try await JotterClient(baseURL: base, configuration: configuration).notes.create("x") }
        #expect(clock.now - start >= .milliseconds(300))
    }

    @Test("the policy: which requests, which failures, how long")
    func policy() {
        let policy = RetryPolicy(maximumAttempts: 4, initialDelay: 1, maximumDelay: 3)
        let busy = JotterClientError(kind: .httpStatus, status: 503, message: "busy")
        let refused = JotterClientError(kind: .transport, urlErrorCode: .cannotConnectToHost, message: "refused")
        #expect(policy.delay(after: busy, attempt: 1, method: "POST") == nil)
        #expect(policy.delay(after: busy, attempt: 1, method: "PATCH") == nil)
        #expect(policy.delay(after: busy, attempt: 4, method: "GET") == nil)
        #expect(policy.delay(after: JotterClientError(kind: .httpStatus, status: 500, message: ""), attempt: 1, method: "GET") == nil)
        #expect(policy.delay(after: JotterClientError(kind: .transport, urlErrorCode: .badURL, message: ""), attempt: 1, method: "GET") == nil)
        #expect(policy.delay(after: JotterClientError.cancelled, attempt: 1, method: "GET") == nil)
        for (attempt, range) in [(1, 0.5...1), (2, 1...2), (3, 1.5...3)] {
            #expect(range.contains(policy.delay(after: refused, attempt: attempt, method: "PUT")!))
        }
        #expect(policy.delay(after: JotterClientError(kind: .httpStatus, status: 429, retryAfter: 7, message: ""), attempt: 1, method: "DELETE") == 7)
        #expect(RetryPolicy.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
    }

    /// Issue 35 item 5 (and 31 item 3): behind a proxy, an instance that dies mid-request is a
    /// `502` (or `504`) for the client, a body the server stopped waiting for a `408`: each was
    /// thrown, though every POST carries its key. A key still running elsewhere is `409` with
    /// `Retry-After`.
    @Test("a keyed POST and idempotent methods are retried on 408, 502, 504, and a keyed POST on 409 with Retry-After")
    func proxyStatuses() {
        let policy = RetryPolicy(maximumAttempts: 4, initialDelay: 1, maximumDelay: 3)
        for status in [408, 502, 504] {
            let error = JotterClientError(kind: .httpStatus, status: status, message: "")
            #expect(policy.delay(after: error, attempt: 1, method: "POST", idempotencyKey: true) != nil, "\(status)")
            #expect(policy.delay(after: error, attempt: 1, method: "GET") != nil, "\(status)")
            #expect(policy.delay(after: error, attempt: 1, method: "POST") == nil, "\(status) without a key")
            #expect(policy.delay(after: error, attempt: 1, method: "PATCH", idempotencyKey: true) == nil, "\(status) PATCH")
        }
        let running = JotterClientError(kind: .httpStatus, status: 409, retryAfter: 1, message: "")
        #expect(policy.delay(after: running, attempt: 1, method: "POST", idempotencyKey: true) == 1)
        #expect(policy.delay(after: running, attempt: 1, method: "POST") == nil)
        #expect(
            policy.delay(after: JotterClientError(kind: .httpStatus, status: 409, message: ""), attempt: 1, method: "POST", idempotencyKey: true)
                == nil,
            "a 409 without Retry-After is a conflict, not a wait")
        #expect(RetryPolicy.httpDate("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
    }

    @Test("a connection closed with no answer (Linux: URLError -1011) is retried for PUT, DELETE and a keyed POST, not for PATCH")
    func emptyReplyRetried() async throws {
        #expect(
            RetryPolicy().delay(
                after: JotterClientError(kind: .transport, urlErrorCode: .badServerResponse, message: ""), attempt: 1, method: "PATCH")
                == nil)
        try await TestApp.with { app in
            let proxy = try FaultProxy(upstream: app.port)
            defer { proxy.stop() }
            var configuration = JotterClient.Configuration()
            configuration.retry = RetryPolicy(maximumAttempts: 3, initialDelay: 0.05)
            // A client (a URLSession) per write, whose first connection is the one cut: on Linux,
            // a request with a body cut on a *reused* keep-alive connection is resent by libcurl
            // itself, and swift-corelibs-foundation can't rewind the body for it — the resend's
            // head goes without its body, and the server answers 408 after its 10 s body
            // timeout (which then took one of these three attempts, and under load the test
            // failed). That is another failure than this test's, left open for now.
            func client() -> JotterClient { JotterClient(baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!, configuration: configuration) }
            proxy.arm(FaultProxy.Fault(at: .arrived) {})
            let note = try await client().notes.create("x")
            #expect(proxy.disarm() != nil, "the first POST was cut")
            proxy.arm(FaultProxy.Fault(at: .arrived) {})
            #expect(try await client().notes.update(note.id, body: "y").body == "y")
            #expect(proxy.disarm() != nil, "the first PUT was cut")
            proxy.arm(FaultProxy.Fault(at: .arrived) {})
            _ = try await client().notes.delete(note.id)
            #expect(proxy.disarm() != nil, "the first DELETE was cut")
            #expect(try await client().notes.allTrash().map(\.id) == [note.id])
        }
    }
}
