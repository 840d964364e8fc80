import Foundation
import Testing
import JotterHTTP
import JotterServerTestSupport
import JotterTestSupport

/// A tour of the API against a real server: every answer must be documented by `/openapi.json`
/// for its route — the status, the Content-Type, the body against its schema, the required
/// headers.
@Suite("OpenAPI conformance")
struct OpenAPIConformanceTests {
    final class Tour {
        let app: TestApp
        let validator: SchemaValidator
        var problems: [String] = []

        init(_ app: TestApp) throws {
            self.app = app
            validator = try SchemaValidator(documentBytes: try app.request("GET", "/openapi.json").body)
        }

        /// Records an issue listing every answer the document does not describe.
        func expectNoProblems(sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))", sourceLocation: sourceLocation)
        }

        /// Sends the request, expects `status`, and checks the answer against the operation of
        /// `method` on `route` (an OpenAPI path, `/notes/{id}`).
        @discardableResult
        func check(
            _ method: String, _ target: String, route: String? = nil, headers: [(String, String)] = [],
            body: [UInt8] = [], expect status: Int, sourceLocation: SourceLocation = #_sourceLocation
        ) throws -> WireResponse {
            let response = try RawHTTP(port: app.port).request(method, target, headers: headers, body: body, close: true)
            #expect(response.status == status, "\(method) \(target): \(response.text)", sourceLocation: sourceLocation)
            let route = route ?? String(target.prefix { $0 != "?" })
            let name = "\(method) \(target) → \(response.status)"
            let pointer =
                "#/paths/" + route.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") + "/" + method.lowercased()
            guard case .object(let operation)? = validator.resolve(pointer) else {
                problems.append("\(name): no operation \(method) \(route)")
                return response
            }
            guard case .object(let responses)? = operation["responses"], case .object(let documented)? = responses[String(response.status)] else {
                problems.append("\(name): status not documented")
                return response
            }
            if case .object(let headers)? = documented["headers"] {
                for (header, spec) in headers where spec.field("required") == .bool(true) && response.header(header) == nil {
                    problems.append("\(name): the required header \(header) is absent")
                }
            }
            guard !response.body.isEmpty else { return response }
            guard case .object(let content)? = documented["content"] else {
                problems.append("\(name): a body, where none is documented")
                return response
            }
            let essence =
                (response.header("Content-Type") ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard let media = content[essence] ?? content["*/*"] else {
                problems.append("\(name): Content-Type \(essence) is not documented (\(content.keys.sorted()))")
                return response
            }
            if essence == "application/json" || essence.hasSuffix("+json"), let schema = media.field("schema") {
                do {
                    let value = try JSONDecoder().decode(JSONValue.self, from: Data(response.body))
                    let errors = validator.errors(value, against: schema)
                    if !errors.isEmpty { problems.append("\(name): \(errors)") }
                } catch {
                    problems.append("\(name): not JSON")
                }
            }
            return response
        }
    }

    static func json(_ response: WireResponse, _ path: String...) throws -> String {
        var value: Any = try response.json()
        for key in path { value = try #require((value as? [String: Any])?[key]) }
        return try #require(value as? String)
    }

    static let form = [("Content-Type", "application/x-www-form-urlencoded")]
    static let json = [("Content-Type", "application/json")]

    @Test("hello, health, metrics, the web app and the document itself")
    func service() throws {
        try TestApp.with { app in
            let tour = try Tour(app)
            try tour.check("GET", "/hello?name=Bob", expect: 200)
            try tour.check("GET", "/hello?name=Bob", headers: [("Accept", "application/json")], expect: 200)
            try tour.check("GET", "/hello", expect: 422)
            try tour.check("GET", "/hello?name=%FF", expect: 400)
            try tour.check("POST", "/hello", headers: Self.form, body: Array("name=Bob".utf8), expect: 200)
            try tour.check("POST", "/hello", headers: Self.json + [("Accept", "application/json")], body: Array(#"{"name":"Bob"}"#.utf8), expect: 200)
            try tour.check("POST", "/hello", headers: Self.json, body: Array(#"{"name":5}"#.utf8), expect: 422)
            try tour.check("POST", "/hello", headers: Self.json, body: Array("{".utf8), expect: 400)
            try tour.check("POST", "/hello", headers: [("Content-Type", "text/xml")], body: Array("<a/>".utf8), expect: 415)
            try tour.check("GET", "/echo_hello.php?name=Bob", expect: 200)
            try tour.check("POST", "/echo_hello.php", body: Array("name=Bob".utf8), expect: 200)
            try tour.check("GET", "/healthz", expect: 200)
            try tour.check("GET", "/metrics", expect: 200)
            try tour.check("GET", "/openapi.json", expect: 200)
            let page = try tour.check("GET", "/", expect: 200)
            try tour.check("GET", "/", headers: [("If-None-Match", try #require(page.header("ETag")))], expect: 304)
            let script = try tour.check("GET", "/assets/app.js", route: "/assets/{name}", expect: 200)
            try tour.check(
                "GET", "/assets/app.js", route: "/assets/{name}", headers: [("If-None-Match", try #require(script.header("ETag")))], expect: 304)
            try tour.check("GET", "/assets/style.css", route: "/assets/{name}", expect: 200)
            try tour.check("GET", "/assets/icon.svg", route: "/assets/{name}", expect: 200)
            try tour.check("GET", "/assets/nothing.js", route: "/assets/{name}", expect: 404)
            try tour.check("GET", "/assets/%zz", route: "/assets/{name}", expect: 400)
            try tour.check("GET", "/form.html", expect: 200)
            tour.expectNoProblems()
        }
    }

    @Test("notes: list, create, show, update, delete, and their errors")
    func notes() throws {
        try TestApp.with(configure: { $0.maxBodySize = 1024 }) { app in
            let tour = try Tour(app)
            let created = try tour.check("POST", "/notes", headers: Self.form, body: Array("body=Buy+milk".utf8), expect: 201)
            let id = try Self.json(created, "note", "id")
            try tour.check("POST", "/notes", headers: Self.json, body: Array(#"{"body":""}"#.utf8), expect: 201)
            try tour.check("POST", "/notes", headers: Self.json, body: Array("{}".utf8), expect: 422)
            try tour.check("POST", "/notes", headers: Self.json, body: Array(#"{"body":null}"#.utf8), expect: 422)
            try tour.check("POST", "/notes", headers: Self.json, body: Array("[1]".utf8), expect: 400)
            try tour.check("POST", "/notes", headers: Self.form, body: Array("body=%FF".utf8), expect: 400)
            try tour.check("POST", "/notes", headers: [("Content-Type", "text/plain")], body: Array("x".utf8), expect: 415)
            var withFile = MultipartBuilder()
            withFile.field("body", "x")
            withFile.file("file", filename: "a.txt", body: [1])
            try tour.check("POST", "/notes", headers: [("Content-Type", withFile.contentType)], body: withFile.finished(), expect: 415)
            var fields = MultipartBuilder()
            fields.field("body", "from multipart")
            try tour.check("POST", "/notes", headers: [("Content-Type", fields.contentType)], body: fields.finished(), expect: 201)
            try tour.check("POST", "/notes", headers: Self.form, body: Array(("body=" + String(repeating: "x", count: 2000)).utf8), expect: 413)
            try tour.check("GET", "/notes", expect: 200)
            try tour.check("GET", "/notes?limit=1", expect: 200)
            try tour.check("GET", "/notes?limit=1&order=asc&q=milk&after=0", expect: 200)
            try tour.check("GET", "/notes?limit=0&order=up&after=x", expect: 400)
            try tour.check("GET", "/notes?q=%FF", expect: 400)
            let shown = try tour.check("GET", "/notes/\(id)", route: "/notes/{id}", expect: 200)
            let etag = try #require(shown.header("ETag"))
            try tour.check("GET", "/notes/\(id)", route: "/notes/{id}", headers: [("If-None-Match", etag)], expect: 304)
            try tour.check("GET", "/notes/999", route: "/notes/{id}", expect: 404)
            try tour.check("GET", "/notes/abc", route: "/notes/{id}", expect: 404)
            try tour.check("GET", "/notes/%zz", route: "/notes/{id}", expect: 400)
            try tour.check(
                "PUT", "/notes/\(id)", route: "/notes/{id}", headers: Self.form + [("If-Match", etag)], body: Array("body=Oat+milk".utf8), expect: 200
            )
            try tour.check("PATCH", "/notes/\(id)", route: "/notes/{id}", expect: 200)
            try tour.check(
                "PUT", "/notes/\(id)", route: "/notes/{id}", headers: Self.form + [("If-Match", etag)], body: Array("body=x".utf8), expect: 412)
            try tour.check("PATCH", "/notes/\(id)", route: "/notes/{id}", headers: Self.json, body: Array(#"{"body":5}"#.utf8), expect: 422)
            try tour.check("PUT", "/notes/\(id)", route: "/notes/{id}", headers: Self.json, body: Array("nope".utf8), expect: 400)
            try tour.check("PUT", "/notes/\(id)", route: "/notes/{id}", headers: [("Content-Type", "text/plain")], body: Array("x".utf8), expect: 415)
            try tour.check(
                "PUT", "/notes/\(id)", route: "/notes/{id}", headers: Self.form, body: Array(("body=" + String(repeating: "x", count: 2000)).utf8),
                expect: 413)
            try tour.check("PUT", "/notes/999", route: "/notes/{id}", headers: Self.form, body: Array("body=x".utf8), expect: 404)
            try tour.check("DELETE", "/notes/\(id)", route: "/notes/{id}", headers: [("If-Match", etag)], expect: 412)
            try tour.check(
                "PATCH", "/notes/\(id)", route: "/notes/{id}", headers: Self.form + [("If-None-Match", "*")], body: Array("body=x".utf8), expect: 412)
            try tour.check(
                "PATCH", "/notes/\(id)", route: "/notes/{id}", headers: Self.form + [("If-Match", "3")], body: Array("body=x".utf8), expect: 400)
            try tour.check("DELETE", "/notes/\(id)", route: "/notes/{id}", headers: [("If-None-Match", "3")], expect: 400)
            try tour.check("GET", "/notes/0\(id)", route: "/notes/{id}", expect: 404)
            try tour.check("DELETE", "/notes/\(id)", route: "/notes/{id}", expect: 200)
            try tour.check("DELETE", "/notes/\(id)", route: "/notes/{id}", expect: 404)
            tour.expectNoProblems()
        }
    }

    @Test("uploads: store, list, show, download (ranges), delete, and their errors")
    func uploads() throws {
        try TestApp.with(configure: { $0.maxUploadSize = 4096 }) { app in
            let tour = try Tour(app)
            let note = try Self.json(try app.request("POST", "/notes", headers: Self.form, body: "body=x"), "note", "id")
            var multipart = MultipartBuilder()
            multipart.file("file", filename: "a.txt", contentType: "text/plain", body: Array("hello upload".utf8))
            multipart.field("note_id", note)
            let type = [("Content-Type", multipart.contentType)]
            let stored = try tour.check("POST", "/uploads", headers: type, body: multipart.finished(), expect: 201)
            let uploads = try #require(try stored.json()["uploads"] as? [[String: Any]])
            let id = try #require(uploads.first?["id"] as? String)
            var other = MultipartBuilder()
            other.file("picture", filename: "b.html", contentType: "text/html", body: Array("<p>".utf8))
            try tour.check("POST", "/upload", headers: [("Content-Type", other.contentType)], body: other.finished(), expect: 201)
            var fieldsOnly = MultipartBuilder()
            fieldsOnly.field("note_id", "")
            try tour.check("POST", "/uploads", headers: [("Content-Type", fieldsOnly.contentType)], body: fieldsOnly.finished(), expect: 422)
            var unknownNote = MultipartBuilder()
            unknownNote.file("file", filename: "a.txt", body: [1])
            unknownNote.field("note_id", "999")
            try tour.check("POST", "/uploads", headers: [("Content-Type", unknownNote.contentType)], body: unknownNote.finished(), expect: 404)
            var large = MultipartBuilder()
            large.file("file", filename: "big.bin", body: Array(repeating: 7, count: 8192))
            try tour.check("POST", "/uploads", headers: [("Content-Type", large.contentType)], body: large.finished(), expect: 413)
            try tour.check("POST", "/uploads", headers: Self.form, body: Array("a=b".utf8), expect: 415)
            try tour.check("POST", "/uploads", headers: type, body: Array("--nonsense\r\n".utf8), expect: 400)
            try tour.check("GET", "/uploads", expect: 200)
            try tour.check("GET", "/uploads?limit=1&note_id=\(note)", expect: 200)
            try tour.check("GET", "/uploads?note_id=&after=\(id)", expect: 200)
            try tour.check("GET", "/uploads?limit=0&note_id=x", expect: 400)
            try tour.check("PATCH", "/uploads/\(id)", route: "/uploads/{id}", headers: Self.form, body: Array("note_id=".utf8), expect: 200)
            try tour.check(
                "PATCH", "/uploads/\(id)", route: "/uploads/{id}", headers: Self.json, body: Array(#"{"note_id":"\#(note)"}"#.utf8), expect: 200)
            try tour.check("PATCH", "/uploads/\(id)", route: "/uploads/{id}", headers: Self.form, body: Array("note_id=999".utf8), expect: 404)
            try tour.check("PATCH", "/uploads/\(id)", route: "/uploads/{id}", headers: Self.form, body: Array("other=1".utf8), expect: 422)
            try tour.check(
                "PATCH", "/uploads/\(id)", route: "/uploads/{id}", headers: [("Content-Type", "text/plain")], body: Array("x".utf8), expect: 415)
            try tour.check("PATCH", "/uploads/\(id)", route: "/uploads/{id}", headers: Self.json, body: Array("{".utf8), expect: 400)
            try tour.check("GET", "/uploads/\(id)", route: "/uploads/{id}", expect: 200)
            try tour.check("GET", "/uploads/0123456789abcdef01234567", route: "/uploads/{id}", expect: 404)
            try tour.check("GET", "/notes/\(note)", route: "/notes/{id}", expect: 200)
            let content = "/uploads/{id}/content"
            let whole = try tour.check("GET", "/uploads/\(id)/content", route: content, expect: 200)
            let etag = try #require(whole.header("ETag"))
            try tour.check("GET", "/uploads/\(id)/content", route: content, headers: [("Range", "bytes=0-4")], expect: 206)
            try tour.check("GET", "/uploads/\(id)/content", route: content, headers: [("Range", "bytes=-3"), ("If-Range", etag)], expect: 206)
            try tour.check("GET", "/uploads/\(id)/content", route: content, headers: [("Range", "bytes=100-200")], expect: 416)
            try tour.check("GET", "/uploads/\(id)/content", route: content, headers: [("If-None-Match", etag)], expect: 304)
            try tour.check("GET", "/uploads/zz/content", route: content, expect: 404)
            try tour.check("DELETE", "/uploads/\(id)", route: "/uploads/{id}", expect: 200)
            try tour.check("DELETE", "/uploads/\(id)", route: "/uploads/{id}", expect: 404)
            tour.expectNoProblems()
        }
    }

    @Test("echo on every method")
    func echo() throws {
        try TestApp.with(configure: { $0.maxBodySize = 1024 }) { app in
            let tour = try Tour(app)
            var multipart = MultipartBuilder()
            multipart.field("name", "Bob")
            multipart.field("tag", "a")
            multipart.field("tag", "b")
            multipart.file("file", filename: "a.txt", contentType: "text/plain", body: Array("one".utf8))
            multipart.file("more", filename: "b.txt", body: Array("two".utf8))
            multipart.file("more", filename: "c.txt", body: Array("three".utf8))
            try tour.check("POST", "/echo?x=1&x=2&y=3", headers: [("Content-Type", multipart.contentType)], body: multipart.finished(), expect: 200)
            try tour.check("PUT", "/echo", headers: Self.json, body: Array(#"{"a":[1,null,true,"x",{"b":2.5}]}"#.utf8), expect: 200)
            try tour.check("PATCH", "/echo", headers: [("Content-Type", "application/octet-stream")], body: [0xFF, 0x00], expect: 200)
            try tour.check("POST", "/echo", headers: Self.form, body: Array("a=%FF".utf8), expect: 400)
            try tour.check("POST", "/echo", headers: [("Content-Type", "text/plain")], body: Array(repeating: 65, count: 2000), expect: 413)
            for method in ["GET", "DELETE", "OPTIONS"] {
                try tour.check(method, "/echo?q=1", expect: 200)
            }
            try tour.check("GET", "/echo?%FF", expect: 400)
            var many = MultipartBuilder()
            for index in 0...1000 { many.field("f\(index)", "") }
            try tour.check("POST", "/echo", headers: [("Content-Type", many.contentType)], body: many.finished(), expect: 422)
            try tour.check("POST", "/echo", headers: [("X-HTTP-Method-Override", "PATCH")], expect: 200, sourceLocation: #_sourceLocation)
            tour.expectNoProblems()
        }
    }
}

extension JSONValue {
    /// The named field of an object.
    func field(_ name: String) -> JSONValue? {
        if case .object(let fields) = self { fields[name] } else { nil }
    }
}
