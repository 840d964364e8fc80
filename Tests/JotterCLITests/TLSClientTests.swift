import Foundation
import Testing
import JotterCLICore
import JotterTestSupport

/// `jotter` against `jotter serve --tls-cert/--tls-key` with a certificate of a private CA.
@Suite("jotter over HTTPS with a private CA")
struct TLSClientTests {
    @Test("--cacert trusts the private CA, --insecure trusts anything; without either the failure is named a TLS error, not a server that is down")
    func privateCA() throws {
        let authority = try PrivateCA()
        defer { authority.remove() }
        let server = try ServerProcess(["--tls-cert", authority.certificate.path, "--tls-key", authority.key.path, "--quiet"])
        defer { _ = server.signal(SIGTERM); _ = server.finish() }
        let url = "https://127.0.0.1:\(server.port)"

        let refused = try BinaryTests.jotter(["notes", "list", "--server", url], environment: [:])
        #expect(refused.status == ExitCode.unreachable)
        // In the README's words, whether URLSession or the SDK's own TLS made the connection.
        #expect(refused.err.contains("TLS: the certificate of 127.0.0.1 is not trusted ("), "\(refused.err)")
        #expect(refused.err.contains("--cacert"), "\(refused.err)")
        #expect(!refused.err.contains("is the Jotter server running there"), "\(refused.err)")

        let added = try BinaryTests.jotter(["notes", "add", "over TLS", "--server", url, "--cacert", authority.authority.path], environment: [:])
        #expect(added.status == 0, "\(added.err)")
        let listed = try BinaryTests.jotter(["notes", "list", "--server", url], environment: ["JOTTER_CACERT": authority.authority.path])
        #expect(listed.status == 0, "\(listed.err)")
        #expect(listed.out.contains("over TLS"))
        let file = authority.folder.appendingPathComponent("upload.txt")
        try Data("bytes over TLS\n".utf8).write(to: file)
        let uploaded = try BinaryTests.jotter(["upload", file.path, "--server", url, "--insecure"], environment: [:])
        #expect(uploaded.status == 0, "\(uploaded.err)")
        // "uploaded PATH as ID  SIZE  in …"
        let words = uploaded.out.split(separator: " ")
        let id = try #require(words.firstIndex(of: "as").map { String(words[$0 + 1]) })
        let copy = authority.folder.appendingPathComponent("copy.txt")
        let downloaded = try BinaryTests.jotter(
            ["download", id, "--output", copy.path, "--server", url, "--cacert", authority.authority.path],
            environment: [:])
        #expect(downloaded.status == 0, "\(downloaded.err)")
        #expect(try String(contentsOf: copy, encoding: .utf8) == "bytes over TLS\n")

        // The server's own certificate is no authority: still a TLS error, with OpenSSL's reason.
        let wrong = try BinaryTests.jotter(["notes", "list", "--server", url, "--cacert", authority.key.path], environment: [:])
        #expect(wrong.status == ExitCode.unreachable)
        #expect(wrong.err.contains("TLS: "), "\(wrong.err)")
        let both = try BinaryTests.jotter(["notes", "list", "--server", url, "--cacert", authority.authority.path, "--insecure"], environment: [:])
        #expect(both.status == ExitCode.usage)
        let missing = try BinaryTests.jotter(["notes", "list", "--server", url, "--cacert", "/nonexistent/ca.pem"], environment: [:])
        #expect(missing.status == ExitCode.usage)

        // login trusts the same CA: past TLS, the server itself answers (it has no such user).
        let home = authority.folder.appendingPathComponent("home")
        for trust in [["--cacert", authority.authority.path], ["--insecure"]] {
            let login = try AccountCommandTests.jotter(
                ["login", "--name", "nobody", "--server", url] + trust, input: "password\n",
                environment: ["HOME": home.path])
            #expect(login.status == ExitCode.failure && !login.err.contains("TLS"), "\(trust): \(login.err)")
        }
    }

    @Test("https:// to a plain-HTTP port says the port serves http:// (URLSession's TLS and the SDK's own alike)", arguments: [[], ["--insecure"]])
    func plainHTTPPort(_ extra: [String]) throws {
        let server = try ServerProcess(["--quiet"])
        defer { _ = server.signal(SIGTERM); _ = server.finish() }
        let result = try BinaryTests.jotter(["notes", "list", "--server", "https://127.0.0.1:\(server.port)"] + extra, environment: [:])
        #expect(result.status == ExitCode.unreachable)
        #expect(
            result.err.contains(
                "the server answered in plain HTTP, not TLS: that port serves http://, not https://; use http://127.0.0.1:\(server.port)"),
            "\(result.err)")
        #expect(!result.err.contains("0A00010B") && !result.err.contains("--cacert"), "\(result.err)")
    }

    @Test("a server URL with a path the server does not serve: the error asks whether the URL is right")
    func wrongServerPath() throws {
        let server = try ServerProcess(["--quiet"])
        defer { _ = server.signal(SIGTERM); _ = server.finish() }
        let result = try BinaryTests.jotter(["notes", "list", "--server", "127.0.0.1:\(server.port)/nope"], environment: [:])
        #expect(result.status == ExitCode.notFound)
        #expect(result.err.hasPrefix("error: no resource at /nope/notes: is the server URL right? (--server URL or JOTTER_SERVER"), "\(result.err)")
        // A missing note is still just that.
        let note = try BinaryTests.jotter(["notes", "show", "99", "--server", "127.0.0.1:\(server.port)"], environment: [:])
        #expect(note.err == "error: note 99 does not exist\n", "\(note.err)")
    }
}
