import Foundation
import Testing
import JotterClient
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// The SDK against an HTTPS server whose certificate a private CA signed.
@Suite("SDK over HTTPS with a private CA")
struct SDKTLSTests {
    @Test("trust: .certificateAuthorities and .insecure reach the server (JSON, an upload, its download); .system fails as .tls, not retried")
    func privateCA() async throws {
        let authority = try PrivateCA()
        defer { authority.remove() }
        try await TestApp.with(configure: {
            $0.tlsCertificatePath = authority.certificate.path
            $0.tlsKeyPath = authority.key.path
        }) { app in
            let url = try #require(URL(string: "https://127.0.0.1:\(app.port)"))
            let untrusted = JotterClient(baseURL: url)
            do throws(JotterClientError) {
                _ = try await untrusted.hello(name: "Bob")
                Issue.record("an untrusted certificate was accepted")
            } catch {
                #expect(error.isTLS, "\(error)")
                #expect(!error.isTransport)
                #expect(error.message.hasPrefix("TLS: "), "\(error.message)")
            }
            var configuration = JotterClient.Configuration()
            configuration.trust = .certificateAuthorities(authority.authority)
            let client = JotterClient(baseURL: url, configuration: configuration)
            #expect(try await client.hello(name: "Bob") == "Hello Bob!")
            let note = try await client.notes.create("over TLS")
            #expect(try await client.notes.get(note.id).body == "over TLS")
            let file = authority.folder.appendingPathComponent("a.txt")
            try Data("upload over TLS".utf8).write(to: file)
            let upload = try await client.uploads.upload(fileAt: file)
            let copy = authority.folder.appendingPathComponent("copy.txt")
            try await client.uploads.download(upload.id, to: copy)
            #expect(try Data(contentsOf: copy) == Data("upload over TLS".utf8))

            var insecure = JotterClient.Configuration()
            insecure.trust = .insecure
            #expect(try await JotterClient(baseURL: url, configuration: insecure).notes.get(note.id).body == "over TLS")

            var wrong = JotterClient.Configuration()
            wrong.trust = .certificateAuthorities(authority.key)
            do throws(JotterClientError) {
                _ = try await JotterClient(baseURL: url, configuration: wrong).hello(name: "Bob")
                Issue.record("a file with no authority in it was accepted")
            } catch {
                #expect(error.isTLS, "\(error)")
            }
        }
    }
}
