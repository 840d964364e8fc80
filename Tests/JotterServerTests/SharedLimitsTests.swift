import Foundation
import Testing
import JotterServer
import JotterServerTestSupport

/// On PostgreSQL the limits are the database's, not each instance's: guesses or requests spread
/// over two instances hit the limit after as many as on one.
@Suite("Limits shared by instances", .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
struct SharedLimitsTests {
    let backend: SharedBackend

    init() throws {
        backend = try SharedBackend()
    }

    func configure(_ configuration: inout ServerConfiguration) {
        backend.configure(&configuration)
        configuration.auth = .required
        // One attempt back per 10 minutes: nothing refills while the test runs.
        configuration.signInRefillSeconds = 600
        configuration.requestsPerMinute = 4
    }

    @Test("sign-in guesses spread over two instances hit the limit after the same number as on one")
    func signInGuesses() throws {
        try TestApp.with(configure: configure) { first in
            try TestApp.with(configure: configure) { second in
                try first.addUser("ann", password: "right one")
                let form = [("Content-Type", "application/x-www-form-urlencoded")]
                for index in 0..<10 {
                    let app = index % 2 == 0 ? first : second
                    #expect(try app.request("POST", "/auth/sessions", headers: form, body: "name=ann&password=guess").status == 401)
                }
                for app in [first, second] {
                    let limited = try app.request("POST", "/auth/sessions", headers: form, body: "name=ann&password=right%20one")
                    #expect(limited.status == 429, "\(limited.text)")
                    #expect(Int(limited.header("Retry-After") ?? "") ?? 0 >= 1)
                }
            }
        }
    }

    @Test("a token's requests a minute are counted across instances")
    func requestsPerToken() throws {
        try TestApp.with(configure: configure) { first in
            try TestApp.with(configure: configure) { second in
                try first.addUser("bob")
                let token = try first.token("bob")
                var remaining: [String] = []
                for app in [first, second, first, second] {
                    let answer = try app.request("GET", "/notes", token: token)
                    #expect(answer.status == 200, "\(answer.text)")
                    remaining.append(answer.header("RateLimit") ?? "")
                }
                #expect(remaining.map { $0.contains("remaining=") } == [true, true, true, true])
                #expect(remaining.last?.contains("remaining=0") == true, "\(remaining)")
                let limited = try second.request("GET", "/notes", token: token)
                #expect(limited.status == 429, "\(limited.text)")
                #expect(try first.request("GET", "/notes", token: token).status == 429)
            }
        }
    }
}
