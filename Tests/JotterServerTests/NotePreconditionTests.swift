import Foundation
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// Edges of the notes contract: ids exactly as the API writes them, conditional writes as
/// RFC 9110 says, bodies and queries that must be refused in words, never with a 500.
@Suite("Notes: ids, preconditions, malformed input")
struct NotePreconditionTests {
    func create(_ app: TestApp, _ body: String) throws -> String {
        let response = try app.request("POST", "/notes", body: "body=\(body)")
        try #require(response.status == 201, "\(response.text)")
        return try #require((try response.json()["note"] as? [String: Any])?["id"] as? String)
    }

    func detail(_ response: WireResponse) -> String { ((try? response.json())?["detail"] as? String) ?? response.text }

    @Test("a path id that is not exactly a note id is 404, whatever the method", arguments: ["01", "001", "+1", "1.0", "0x1", "1 "])
    func nonCanonicalIDs(_ id: String) throws {
        try TestApp.with { app in
            _ = try create(app, "first")
            let path = "/notes/" + id.replacingOccurrences(of: " ", with: "%20").replacingOccurrences(of: "+", with: "%2B")
            for method in ["GET", "PUT", "PATCH", "DELETE"] {
                let response = try app.request(
                    method, path, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: method == "PUT" || method == "PATCH" ? "body=changed" : "")
                #expect(response.status == 404, "\(method) \(path): \(response.text)")
            }
            #expect(try app.request("GET", "/notes/1").status == 200)
            #expect((try app.request("GET", "/notes/1").json()["note"] as? [String: Any])?["body"] as? String == "first")
        }
    }

    @Test(
        "If-None-Match: * or the current ETag on a write to an existing note is 412, nothing changed",
        arguments: ["PUT", "PATCH", "DELETE"])
    func ifNoneMatchOnWrites(_ method: String) throws {
        try TestApp.with { app in
            let id = try create(app, "kept")
            for header in ["*", "\"1\"", "W/\"1\"", "\"7\", \"1\""] {
                let response = try app.request(method, "/notes/\(id)", headers: [("If-None-Match", header)], body: "body=changed")
                #expect(response.status == 412, "If-None-Match: \(header) → \(response.text)")
                #expect(response.header("ETag") == "\"1\"")
            }
            let other = try app.request(method, "/notes/\(id)", headers: [("If-None-Match", "\"7\"")], body: "body=changed")
            #expect(other.status == 200, "\(other.text)")
            // A missing note is 404 whatever the preconditions.
            #expect(try app.request(method, "/notes/999", headers: [("If-None-Match", "*")], body: "body=x").status == 404)
        }
    }

    @Test(
        "an If-Match or If-None-Match that is not * or quoted entity tags is 400 naming the form",
        arguments: ["3", "1", "W/1", "\"1", "'1'", "\"1\", 2"])
    func malformedPreconditions(_ header: String) throws {
        try TestApp.with { app in
            let id = try create(app, "kept")
            for field in ["If-Match", "If-None-Match"] {
                let response = try app.request("PUT", "/notes/\(id)", headers: [(field, header)], body: "body=changed")
                #expect(response.status == 400, "\(field): \(header) → \(response.text)")
                #expect(detail(response).contains(#"entity tags in double quotes, such as "3""#), "\(detail(response))")
            }
            #expect((try app.request("GET", "/notes/\(id)").json()["note"] as? [String: Any])?["version"] as? Int == 1)
            // The quoted form works, and a stale one is still 412 saying the version.
            #expect(try app.request("PUT", "/notes/\(id)", headers: [("If-Match", "\"2\"")], body: "body=x").status == 412)
            #expect(try app.request("PUT", "/notes/\(id)", headers: [("If-Match", "\"1\"")], body: "body=x").status == 200)
        }
    }

    @Test("an empty If-Match or If-None-Match is an empty list: no condition, as if absent (RFC 9110 §5.6.1)")
    func emptyPreconditions() throws {
        try TestApp.with { app in
            let id = try create(app, "kept")
            for (field, body) in [("If-Match", "first"), ("If-None-Match", "second")] {
                let response = try app.request("PUT", "/notes/\(id)", headers: [(field, " ")], body: "body=\(body)")
                #expect(response.status == 200, "\(field) → \(response.text)")
            }
        }
    }

    @Test("invalid UTF-8 inside a JSON string is 400 saying so, with no Swift dump")
    func invalidUTF8InJSON() throws {
        try TestApp.with { app in
            for bytes in [
                Array(#"{"body":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8), Array(#"{"body":"a"#.utf8) + [0xFF] + Array(#""}"#.utf8),
                Array(#"{"b"#.utf8) + [0xED, 0xA0, 0x80] + Array(#"":"x"}"#.utf8),
            ] {
                let response = try RawHTTP(port: app.port).request(
                    "POST", "/notes", headers: [("Content-Type", "application/json")], body: bytes, close: true)
                #expect(response.status == 400)
                #expect(detail(response) == "malformed JSON body: it is not valid UTF-8", "\(detail(response))")
            }
            let mismatch = try app.request("POST", "/notes", headers: [("Content-Type", "application/json")], body: #"{"body":"x","n":1e999}"#)
            #expect(!detail(mismatch).contains("DecodingError") && !detail(mismatch).contains("Context"), "\(detail(mismatch))")
            #expect((try app.request("GET", "/notes").json()["notes"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("search matches prefixes while typing; control characters in q are never a 500")
    func searchPrefixesAndControlCharacters() throws {
        try TestApp.with { app in
            for body in ["Shopping+list", "apples", "milk"] { _ = try create(app, body) }
            for (q, expected) in [
                ("shop", ["Shopping list"]), ("app", ["apples"]), ("mil", ["milk"]), ("a%00", ["apples"]),
                ("%00", ["milk", "apples", "Shopping list"]), ("m%01i%7Fl", []),
            ] {
                let response = try app.request("GET", "/notes?q=\(q)")
                #expect(response.status == 200, "q=\(q): \(response.text)")
                let bodies = (try response.json()["notes"] as? [[String: Any]])?.compactMap { $0["body"] as? String }
                #expect(bodies == expected, "q=\(q)")
            }
        }
    }
}
