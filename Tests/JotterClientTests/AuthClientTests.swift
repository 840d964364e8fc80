import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import JotterClient
import JotterServer
import JotterTestSupport
import JotterHTTP

@Suite("JotterClient with accounts")
struct AuthClientTests {
    @Test("no token: isUnauthorized; signIn gives a token that the configuration sends; signOut revokes it")
    func token() async throws {
        try await withClient(configure: { $0.auth = .required }) { anonymous, app in
            try app.addUser("ann", password: "ann's password")
            do {
                _ = try await anonymous.notes.list()
                Issue.record("listed without a token")
            } catch {
                #expect((error as? JotterClientError)?.isUnauthorized == true)
            }
            do {
                _ = try await anonymous.signIn(name: "ann", password: "wrong")
                Issue.record("signed in with a wrong password")
            } catch {
                #expect((error as? JotterClientError)?.isUnauthorized == true)
            }
            let issued = try await anonymous.signIn(name: "ann", password: "ann's password", label: "tests")
            #expect(issued.token.hasPrefix("jot_") && issued.user.name == "ann" && issued.info.label == "tests")
            var configuration = JotterClient.Configuration()
            configuration.token = issued.token
            let client = JotterClient(baseURL: app.baseURL, configuration: configuration)
            #expect(try await client.me().name == "ann")
            _ = try await client.notes.create("with a token")
            #expect(try await client.notes.list().notes.map(\.body) == ["with a token"])
            try await client.signOut()
            do {
                _ = try await client.notes.list()
                Issue.record("the token still works after signOut")
            } catch {
                #expect((error as? JotterClientError)?.isUnauthorized == true)
            }
        }
    }

    @Test("adaptRequest changes every request, retries included: a token supplied per request")
    func adapter() async throws {
        let calls = Mutex(0)
        let current = Mutex("")
        try await withClient(configure: { $0.auth = .required }) { anonymous, app in
            try app.addUser("ann", password: "ann's password")
            current.withLock { $0 = "" }
            let token = try await anonymous.signIn(name: "ann", password: "ann's password").token
            current.withLock { $0 = token }
            var configuration = JotterClient.Configuration()
            configuration.adaptRequest = { request in
                var request = request
                calls.withLock { $0 += 1 }
                request.setValue("Bearer \(current.withLock { $0 })", forHTTPHeaderField: "Authorization")
                return request
            }
            let client = JotterClient(baseURL: app.baseURL, configuration: configuration)
            _ = try await client.notes.create("adapted")
            #expect(try await client.notes.list().notes.count == 1)
            #expect(calls.withLock { $0 } == 2)
        }
    }

    /// Lets the first `POST /notes` reach the handler (the note is stored) but loses its answer:
    /// a 503 instead, as a proxy that timed out would send. It notes every key it saw.
    final class LoseFirstAnswer: Middleware {
        let keys = Mutex<[String]>([])
        func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
            guard request.method == .post, request.path == "/notes" else { return try next(request, context) }
            let first = keys.withLock { keys in
                keys.append(request.headers["Idempotency-Key"] ?? "")
                return keys.count == 1
            }
            return try next(request, context).map { response in
                guard first else { return response }
                return Response(
                    status: .serviceUnavailable, headers: HTTPHeaders([("Retry-After", "0"), ("Content-Type", "application/problem+json")]),
                    body: Array(#"{"type":"about:blank","title":"Service Unavailable","status":503}"#.utf8))
            }
        }
    }

    @Test("a POST whose answer was lost is retried with the same Idempotency-Key: one note, the first answer")
    func retriedPostCreatesOnce() async throws {
        let lose = LoseFirstAnswer()
        try await withClient(configure: { $0.middleware = [lose] }) { client, app in
            let note = try await client.notes.create("exactly once")
            let keys = lose.keys.withLock { $0 }
            #expect(keys.count == 2 && keys[0] == keys[1] && !keys[0].isEmpty)
            #expect(try await client.notes.list().notes.map(\.id) == [note.id])
        }
    }
}
