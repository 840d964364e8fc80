import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import JotterClient
import JotterServer
import JotterTestSupport

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
}
