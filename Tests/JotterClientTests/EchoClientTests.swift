import Foundation
import Testing
import JotterTestSupport
import JotterAPI
@testable import JotterClient

/// `client.echo` shows what the SDK really puts on the wire.
@Suite("JotterClient: echo and percent-encoding")
struct EchoClientTests {
    static let hostile = [
        "a&b=c", "1+1=2", "100% sure", "%41", "  spaced  ", "line\nbreak\r\nend", "tab\t", "😀 émoji 日本",
        "?#/;:@$,[]'\"<>\\^`{|}", "\u{1}\u{1F}\u{7F}", "+", "=", "&", "",
    ]

    @Test("hostile strings round-trip as query, form fields and multipart fields, names included")
    func roundTrips() async throws {
        try await withClient { client, _ in
            var pairs: [(String, String)] = []
            for (index, text) in Self.hostile.enumerated() { pairs.append(("k\(index)\(text)", text)) }
            let expected = Dictionary(uniqueKeysWithValues: pairs.map { ($0.0, [$0.1]) })

            let query = try await client.echo(query: FormURLEncodedBody(pairs))
            #expect(query.args == expected)
            let form = try await client.echo(method: "POST", body: .form(FormURLEncodedBody(pairs)))
            #expect(form.form == expected)
            #expect(form.method == "POST")
            var multipart = MultipartFormData()
            for (name, value) in pairs where !name.contains("\"") && !name.contains("\r") && !name.contains("\n") {
                multipart.append(value, name: name)
            }
            let parts = try await client.echo(method: "PUT", body: .multipart(multipart))
            #expect(parts.form == expected.filter { !$0.key.contains("\"") && !$0.key.contains("\r") && !$0.key.contains("\n") })
        }
    }

    @Test("repeated keys, JSON, raw bodies, headers, methods")
    func shapes() async throws {
        try await withClient { client, _ in
            let repeated = try await client.echo(
                query: [("tag", "a"), ("tag", "b"), ("one", "1")].reduce(into: FormURLEncodedBody()) { $0.append($1.0, $1.1) })
            #expect(repeated.args == ["tag": ["a", "b"], "one": ["1"]])
            #expect(repeated.url == "/echo?tag=a&tag=b&one=1")
            #expect(repeated.method == "GET")

            let json = try await client.echo(method: "patch", body: .json(Data(#"{"n":1.5,"ok":true,"list":["x",null],"o":{}}"#.utf8)))
            #expect(json.method == "PATCH")
            #expect(json.json == .object(["n": .number(1.5), "ok": .bool(true), "list": .array([.string("x"), .null]), "o": .object([:])]))

            let raw = try await client.echo(
                method: "DELETE", body: .raw(Data("plain text ✓".utf8), contentType: "text/plain"),
                headers: ["X-Custom": "yes"])
            #expect(raw.data == "plain text ✓")
            #expect(raw.json == nil)
            #expect(raw.headers["X-Custom"] == "yes")
            #expect(raw.headers["User-Agent"]?.hasPrefix("JotterClient/") == true)
        }
    }

    @Test("multipart files are streamed and described: size and SHA-256; repeated file fields")
    func files() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = pattern(70_000), second = Array("second".utf8)
        var form = MultipartFormData()
        form.append("Bob", name: "name")
        try form.append(fileAt: try makeFile(folder, "one.bin", first), name: "file")
        try form.append(fileAt: try makeFile(folder, "two.txt", second), name: "file", filename: "renamed.txt", contentType: "text/x-custom")
        try await withClient { client, _ in
            let echo = try await client.echo(method: "POST", body: .multipart(form))
            #expect(echo.form == ["name": ["Bob"]])
            #expect(
                echo.files["file"] == [
                    EchoResponse.File(filename: "one.bin", contentType: "application/octet-stream", size: 70_000, sha256: sha256(first)),
                    EchoResponse.File(filename: "renamed.txt", contentType: "text/x-custom", size: 6, sha256: sha256(second)),
                ])
        }
        // The declared length is the real one, byte for byte.
        let body = folder.appendingPathComponent("body")
        try form.writeBody(to: body)
        #expect(Int64(try Data(contentsOf: body).count) == form.contentLength)
    }

    @Test("errors in words: a body on GET is refused before sending; an answer without the JSON names what is missing")
    func errorsInWords() async throws {
        try await withClient { client, _ in
            let get = await #expect(throws: JotterClientError.self) { try await client.echo(method: "GET", body: .form(["a": "1"])) }
            #expect(get?.kind == .invalidRequest)
            #expect(get?.message.hasPrefix("a GET request can't carry a body here") == true)
            let head = await #expect(throws: JotterClientError.self) { try await client.echo(method: "HEAD") }
            #expect(head?.message == "unexpected answer from the server: an empty body where JSON was expected")
            #expect(head?.message.contains("DecodingError") == false)
        }
        #expect(throws: JotterClientError.self) { try JotterClient.decode(EchoResponse.self, from: Data(#"{"method":5}"#.utf8)) }
        do {
            _ = try JotterClient.decode(NoteEnvelope.self, from: Data(#"{"note":{"id":"1","body":7}}"#.utf8))
            Issue.record("a note with a number for its body was decoded")
        } catch {
            #expect(error.message == "unexpected answer from the server: the JSON is not what the API promises: 'note.body' is not a String")
        }
    }
}
