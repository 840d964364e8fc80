import Foundation
import Testing
import JotterClient
import JotterServer
import JotterTestSupport

/// The SDK's values as a Swift developer expects them: times are `Date`s, a client that signs
/// in is signed in, a new token's secret stays out of logs.
@Suite("JotterClient: dates, signing in, secrets")
struct SDKShapeTests {
    /// The wire's times, read once where the JSON is decoded: a note's, an upload's, a
    /// token's and a user's are `Date`s within the second the server wrote them.
    @Test("every time the SDK returns is a Date of the moment the server gave, decoded once")
    func timesAreDates() async throws {
        try await withClient(configure: { $0.auth = .required }) { client, app in
            _ = try app.addUser("ann", password: "ann's password")
            let before = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let issued = try await client.signIn(name: "ann", password: "ann's password")
            let note = try await client.notes.create("dated")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-dated-\(UUID().uuidString).txt")
            try Data("x".utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let upload = try await client.uploads.upload(fileAt: file)
            let after = Date().addingTimeInterval(1)
            let created: Date = note.createdAt, updated: Date = note.updatedAt, stored: Date = upload.createdAt
            for date in [created, updated, stored, issued.info.createdAt, issued.user.createdAt] {
                #expect(date >= before && date <= after, "\(date) is not between \(before) and \(after)")
                #expect(date.timeIntervalSince1970 == date.timeIntervalSince1970.rounded(.down), "whole seconds, as the wire has them")
            }
            let tokens = try await client.tokens()
            #expect(tokens.first?.createdAt == issued.info.createdAt)
            let revokedAt: Date? = try await client.revokeToken(issued.info.id).revokedAt
            #expect(revokedAt.map { $0 >= before && $0 <= Date().addingTimeInterval(1) } == true)
        }
    }

    @Test("a wire time decodes to its Date and encodes back to the same text; a malformed one is a decoding error")
    func wireTimes() throws {
        let json = #"{"id":"7","body":"x","created_at":"2026-11-30 14:35:40","updated_at":"2026-11-30 14:35:41","version":2,"attachments":[]}"#
        let note = try JSONDecoder().decode(Note.self, from: Data(json.utf8))
        #expect(note.createdAt == Date(timeIntervalSince1970: 1_796_049_340))
        #expect(note.updatedAt == Date(timeIntervalSince1970: 1_796_049_341))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(
            String(decoding: try encoder.encode(note), as: UTF8.self)
                == #"{"attachments":[],"body":"x","created_at":"2026-11-30 14:35:40","id":"7","updated_at":"2026-11-30 14:35:41","version":2}"#)
        let token = #"{"id":"3","label":"ci","created_at":"2026-12-01 10:00:00","expires_at":"2026-12-31 10:00:00"}"#
        let info = try JSONDecoder().decode(TokenInfo.self, from: Data(token.utf8))
        #expect(info.expiresAt == Date(timeIntervalSince1970: 1_798_711_200) && info.lastUsedAt == nil && info.revokedAt == nil)
        #expect(
            String(decoding: try encoder.encode(info), as: UTF8.self)
                == #"{"created_at":"2026-12-01 10:00:00","expires_at":"2026-12-31 10:00:00","id":"3","label":"ci"}"#)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Note.self, from: Data(json.replacingOccurrences(of: "2026-11-30 14:35:40", with: "yesterday").utf8))
        }
    }

    @Test("a deleted note's event carries when it was deleted, as a Date")
    func deletionTime() async throws {
        try await withClient { client, _ in
            let note = try await client.notes.create("to go")
            let before = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            _ = try await client.notes.delete(note.id)
            var deletedAt: Date?
            for try await event in client.notes.events(lastEventID: 0) {
                if case .deleted = event.change { deletedAt = event.deletedAt; break }
            }
            #expect(deletedAt.map { $0 >= before && $0 <= Date().addingTimeInterval(1) } == true, "\(String(describing: deletedAt))")
        }
    }

    @Test("signIn signs that client in (token set, requests authorised); signOut revokes the token and signs it out")
    func signInSignsIn() async throws {
        try await withClient(configure: { $0.auth = .required }) { client, app in
            _ = try app.addUser("ann", password: "ann's password")
            #expect(client.token == nil)
            await #expect(throws: JotterClientError.self) { try await client.signIn(name: "ann", password: "wrong") }
            #expect(client.token == nil, "a failed sign-in leaves the client as it was")
            let issued = try await client.signIn(name: "ann", password: "ann's password")
            #expect(client.token == issued.token)
            #expect(try await client.me().name == "ann")
            _ = try await client.notes.create("signed in")

            try await client.signOut()
            #expect(client.token == nil)
            do {
                _ = try await client.notes.list()
                Issue.record("listed after signOut")
            } catch {
                #expect((error as? JotterClientError)?.isUnauthorized == true)
            }
            // The token itself was revoked, not only forgotten.
            let kept = JotterClient(baseURL: app.baseURL)
            kept.token = issued.token
            do {
                _ = try await kept.me()
                Issue.record("the token still works after signOut")
            } catch {
                #expect((error as? JotterClientError)?.isUnauthorized == true)
            }
        }
    }

    @Test("a configuration's token is the client's first; setting client.token changes what every later request sends")
    func tokenIsTheClients() async throws {
        try await withClient(configure: { $0.auth = .required }) { anonymous, app in
            _ = try app.addUser("ann", password: "ann's password")
            _ = try app.addUser("bob", password: "bob's password")
            let ann = try await anonymous.signIn(name: "ann", password: "ann's password").token
            let bob = try await JotterClient(baseURL: app.baseURL).signIn(name: "bob", password: "bob's password").token
            var configuration = JotterClient.Configuration()
            configuration.token = ann
            let client = JotterClient(baseURL: app.baseURL, configuration: configuration)
            #expect(try await client.me().name == "ann")
            client.token = bob
            #expect(try await client.me().name == "bob")
        }
    }

    @Test("print, interpolation, debugPrint and dump of an IssuedToken never show its secret")
    func issuedTokenRedacted() throws {
        let secret = "jot_s3cretS3cretS3cretS3cretS3cretS3cret0000"
        let date = Date(timeIntervalSince1970: 1_796_049_340)
        let issued = IssuedToken(
            token: secret, info: TokenInfo(id: "3", label: "laptop", createdAt: date, lastUsedAt: nil, expiresAt: nil, revokedAt: nil),
            user: UserInfo(id: "1", name: "ann", admin: false, createdAt: date))
        var dumped = ""
        dump(issued, to: &dumped)
        let shown = ["\(issued)", String(describing: issued), String(reflecting: issued), dumped, "\([issued])"]
        for text in shown {
            #expect(!text.contains("s3cret"), "\(text)")
        }
        #expect("\(issued)".contains("jot_…") && "\(issued)".contains("laptop") && "\(issued)".contains("ann"))
        #expect(issued.token == secret, "the secret itself is still there to keep")
    }
}
