import Foundation
import Glibc
import JotterHTTP
import Synchronization
import Testing
import JotterServerTestSupport

/// Where the server's routes run: on SQLite every route's work is on the connection's loop
/// (reads are local and short); on PostgreSQL every route that reads the store — its
/// authentication (a credential read on a cache miss, the shared rate limit) included — runs on
/// the store's threads, so no engine thread waits for a database round trip.
@Suite("Where the store's routes run")
struct StoreWorkPlaceTests {
    /// The threads each request's head phase and handler ran on, against the loop's (where
    /// `completed` always runs), by path.
    final class Threads: Middleware, @unchecked Sendable {
        struct Seen { var head: pthread_t?; var handle: pthread_t?; var completed: pthread_t? }
        private let seen = Mutex<[String: Seen]>([:])

        private func key(_ head: RequestHead) -> String { "\(head.method) \(head.path)" }

        func head(_ head: RequestHead, context: inout RequestContext) throws {
            seen.withLock { $0[key(head), default: Seen()].head = pthread_self() }
        }

        func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
            seen.withLock { $0[key(request.head), default: Seen()].handle = pthread_self() }
            return try next(request, context)
        }

        func completed(_ exchange: CompletedExchange) {
            guard let head = exchange.head else { return }
            seen.withLock { $0[key(head), default: Seen()].completed = pthread_self() }
        }

        /// Whether `key`'s head phase and handler ran on the loop its request was completed on.
        func onLoop(_ key: String) throws -> (head: Bool, handle: Bool) {
            let deadline = Date().addingTimeInterval(5)
            while seen.withLock({ $0[key]?.completed }) == nil, Date() < deadline { usleep(5_000) }
            let entry = try #require(seen.withLock { $0[key] }, "no request \(key)")
            let loop = try #require(entry.completed)
            return (pthread_equal(try #require(entry.head), loop) != 0, pthread_equal(try #require(entry.handle), loop) != 0)
        }
    }

    /// Signs a user in, then reads and writes notes and lists uploads with its token.
    private func exercise(_ app: TestApp) throws -> String {
        try app.addUser("ann")
        let token = try app.token("ann")
        let created = try app.request("POST", "/notes", token: token, body: "body=hello")
        #expect(created.status == 201, "\(created.text)")
        let id = try #require((try created.json()["note"] as? [String: Any])?["id"] as? String)
        #expect(try app.request("GET", "/notes/\(id)", token: token).status == 200)
        #expect(try app.request("GET", "/notes", token: token).status == 200)
        #expect(try app.request("GET", "/uploads", token: token).status == 200)
        #expect(try app.request("GET", "/hello?name=Bob").text == "Hello Bob!")
        return id
    }

    @Test("SQLite: the notes routes, their authentication included, run on the connection's loop")
    func sqliteOnTheLoop() throws {
        let threads = Threads()
        try TestApp.with(configure: {
            $0.middleware = [threads]; $0.auth = .required
        }) { app in
            let id = try exercise(app)
            for key in ["POST /notes", "GET /notes/\(id)", "GET /notes", "GET /uploads", "GET /hello", "POST /auth/sessions"] {
                let (head, handle) = try threads.onLoop(key)
                #expect(head && handle, "\(key) left the loop")
            }
        }
    }

    @Test(
        "PostgreSQL: every route that reads the store runs on its threads, authentication included; hello stays on the loop",
        .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
    func postgresOffTheLoop() throws {
        let backend = try SharedBackend()
        let threads = Threads()
        try TestApp.with(configure: {
            backend.configure(&$0); $0.middleware = [threads]; $0.auth = .required
        }) { app in
            let id = try exercise(app)
            for key in ["POST /notes", "GET /notes/\(id)", "GET /notes", "GET /uploads", "POST /auth/sessions"] {
                let (head, handle) = try threads.onLoop(key)
                #expect(!head, "the head phase of \(key) (its authentication) ran on the loop")
                #expect(!handle, "the handler of \(key) ran on the loop")
            }
            let (head, handle) = try threads.onLoop("GET /hello")
            #expect(head && handle, "hello reads nothing: it stays on the loop")
        }
    }
}
