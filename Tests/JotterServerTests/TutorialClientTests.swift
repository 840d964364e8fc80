import Foundation
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// What the tutorials' original clients send, read as their own servers (PHP, Laravel, WEBrick) read it.
@Suite("The tutorials' clients")
struct TutorialClientTests {
    static let form = ("Content-Type", "application/x-www-form-urlencoded")

    func note(_ response: WireResponse) throws -> [String: Any] {
        try #require(try response.json()["note"] as? [String: Any], "\(response.status) \(response.text)")
    }

    @Test("a % without two hex digits is read literally in form bodies and queries: 100% is 100%")
    func literalPercent() throws {
        try TestApp.with { app in
            let created = try app.request("POST", "/notes", headers: [Self.form], body: "body=100% done")
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(try note(created)["id"] as? String)
            #expect(try note(created)["body"] as? String == "100% done")
            let updated = try app.request("POST", "/notes/\(id)", headers: [Self.form], body: "_method=PUT&body=50%+left%")
            #expect(try note(updated)["body"] as? String == "50% left%")
            #expect(try app.request("GET", "/hello?name=100%").text == "Hello 100%!")
            #expect(try app.request("POST", "/hello", headers: [Self.form], body: "name=100%").text == "Hello 100%!")
            let echoed = try app.request("POST", "/echo?q=%zz", headers: [Self.form], body: "a=%4")
            #expect((try echoed.json()["args"] as? [String: String])?["q"] == "%zz")
            #expect((try echoed.json()["form"] as? [String: String])?["a"] == "%4")
        }
    }

    @Test("a repeated key takes the last value, as PHP and Laravel do")
    func lastValueWins() throws {
        try TestApp.with { app in
            #expect(try app.request("POST", "/hello", headers: [Self.form], body: "name=Bob&name=Eve").text == "Hello Eve!")
            #expect(try app.request("GET", "/hello?name=Bob&name=Eve").text == "Hello Eve!")
            let created = try app.request("POST", "/notes", headers: [Self.form], body: "body=first&body=second")
            #expect(try note(created)["body"] as? String == "second")
        }
    }

    @Test("saving an untouched note (the edit screen sends body=) leaves it unchanged: No Body Sent")
    func emptyFormBodyIsNoBody() throws {
        try TestApp.with { app in
            let id = try #require(try note(try app.request("POST", "/notes", headers: [Self.form], body: "body=keep me"))["id"] as? String)
            for (method, body) in [("POST", "_method=PUT&body="), ("POST", "_method=PATCH&body="), ("PUT", "body="), ("PATCH", "body=")] {
                let saved = try app.request(method, "/notes/\(id)", headers: [Self.form], body: body)
                #expect(saved.status == 200, "\(method) \(body)")
                #expect(try saved.json()["message"] as? String == "No Body Sent", "\(method) \(body)")
                #expect(try note(saved)["body"] as? String == "keep me")
            }
            let shown = try note(try app.request("GET", "/notes/\(id)"))
            #expect(shown["body"] as? String == "keep me")
            #expect(shown["version"] as? Int == 1)
        }
    }

    @Test("the recipe's WEBrick servlet path: form and file POSTs on /post are echoed as on /echo")
    func postPath() throws {
        try TestApp.with { app in
            let formEcho = try app.request("POST", "/post", headers: [Self.form], body: "name=Bob")
            #expect(formEcho.status == 200, "\(formEcho.text)")
            #expect((try formEcho.json()["form"] as? [String: String])?["name"] == "Bob")
            var parts = MultipartBuilder()
            parts.field("title", "a file")
            parts.file("file", filename: "a.txt", contentType: "text/plain", body: Array("hey".utf8))
            let fileEcho = try RawHTTP(port: app.port).request(
                "POST", "/post", headers: [("Content-Type", parts.contentType)],
                body: parts.finished(), close: true)
            #expect(fileEcho.status == 200, "\(fileEcho.text)")
            let files = try #require(try fileEcho.json()["files"] as? [String: Any])
            #expect(files["file"] != nil)
            #expect((try fileEcho.json()["form"] as? [String: String])?["title"] == "a file")
        }
    }
}
