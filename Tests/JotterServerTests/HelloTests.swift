import Testing
import JotterServerTestSupport
import JotterTestSupport

/// The Hello contract of API.md, including what the original iPhone client sends.
@Suite("Hello")
struct HelloTests {
    static let app = Result { try TestApp() }

    func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: String = "") throws -> WireResponse {
        try Self.app.get().request(method, target, headers: headers, body: body)
    }

    @Test("the original client: POST name=Bob to /echo_hello.php, no Content-Type")
    func originalClient() throws {
        let response = try request("POST", "/echo_hello.php", body: "name=Bob")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(response.text == "Hello Bob!")
    }

    @Test(
        "every body type and the query",
        arguments: [
            ("GET", "/hello?name=Bob", [(String, String)](), ""),
            ("POST", "/hello", [("Content-Type", "application/x-www-form-urlencoded")], "name=Bob"),
            ("POST", "/hello", [("Content-Type", "application/json")], #"{"name":"Bob"}"#),
            ("POST", "/hello?name=Alice", [], "name=Bob"),
            ("POST", "/hello?name=Bob", [], ""),
            ("GET", "/echo_hello.php?name=Bob", [], ""),
        ])
    func sources(_ method: String, _ target: String, _ headers: [(String, String)], _ body: String) throws {
        #expect(try request(method, target, headers: headers, body: body).text == "Hello Bob!")
    }

    @Test("plus and percent-escapes are decoded")
    func decoding() throws {
        #expect(try request("GET", "/hello?name=Bob+Smith").text == "Hello Bob Smith!")
        #expect(try request("POST", "/hello", body: "name=Bob%20Smith%26Co").text == "Hello Bob Smith&Co!")
        #expect(try request("GET", "/hello?name=%C3%89lise").text == "Hello Élise!")
    }

    @Test("Accept: application/json answers {\"message\":…}")
    func json() throws {
        let response = try request("GET", "/hello?name=Bob", headers: [("Accept", "application/json")])
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.text == #"{"message":"Hello Bob!"}"#)
        #expect(try request("GET", "/hello?name=Bob", headers: [("Accept", "text/html, application/json;q=0")]).text == "Hello Bob!")
    }

    @Test("empty name is Hello !, absent name is 422")
    func emptyAndAbsent() throws {
        #expect(try request("GET", "/hello?name=").text == "Hello !")
        let absent = try request("POST", "/hello", body: "other=1&")
        #expect(absent.status == 422)
        #expect(absent.header("Content-Type") == "application/problem+json")
        let errors = try #require(try absent.json()["errors"] as? [[String: String]])
        #expect(errors == [["field": "name", "message": "is required"]])
        #expect(try absent.json()["detail"] as? String == "the request body and query have invalid fields")
    }

    @Test("GET without name: the problem says the query lacks it, not a body there is none of", arguments: ["/hello", "/echo_hello.php"])
    func absentFromTheQuery(_ path: String) throws {
        let absent = try request("GET", path + "?other=1")
        #expect(absent.status == 422)
        #expect(try absent.json()["detail"] as? String == "the query has invalid fields")
        #expect(try absent.json()["errors"] as? [[String: String]] == [["field": "name", "message": "is required"]])
    }

    @Test(
        "bad input is a problem naming it",
        arguments: [
            ("GET", "/hello?name=%FF", [(String, String)](), "", 400, "invalid UTF-8 in the query"),
            ("POST", "/hello", [], "name=%E2%82", 400, "invalid UTF-8 in the form body"),
            ("POST", "/hello", [], "name=%ff", 400, "invalid UTF-8 in the form body"),
            ("POST", "/hello", [("Content-Type", "application/json")], "{\"name\":", 400, "malformed JSON body"),
            ("POST", "/hello", [("Content-Type", "application/json")], "[1]", 400, "the JSON body must be an object"),
            ("POST", "/hello", [("Content-Type", "application/json")], #"{"name":"Ann","name":"Bob"}"#, 400, #"the name "name" is repeated"#),
            ("POST", "/hello", [("Content-Type", "application/json")], #"{"name":"Ann","n\u0061me":"Bob"}"#, 400, #"the name "name" is repeated"#),
            ("POST", "/hello", [("Content-Type", "application/json")], #"{"name":5}"#, 422, "invalid fields"),
            ("POST", "/hello", [("Content-Type", "application/json")], #"{"name":null}"#, 422, "invalid fields"),
            ("POST", "/hello", [("Content-Type", "text/csv")], "name,Bob", 415, "unsupported Content-Type 'text/csv'"),
        ])
    func badInput(_ method: String, _ target: String, _ headers: [(String, String)], _ body: String, _ status: Int, _ detail: String) throws {
        let response = try request(method, target, headers: headers, body: body)
        #expect(response.status == status)
        #expect((try response.json()["detail"] as? String)?.contains(detail) == true, "\(response.text)")
    }

    @Test("HEAD, 405 with Allow, and health")
    func headAndHealth() throws {
        let head = try request("HEAD", "/hello?name=Bob")
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "10")
        let wrong = try request("DELETE", "/hello")
        #expect(wrong.status == 405)
        #expect(wrong.header("Allow") == "GET, HEAD, POST")
        let health = try request("GET", "/healthz")
        // {"status":"ok"} as before, with what was checked beside it (OperationsTests).
        #expect(try health.json()["status"] as? String == "ok")
        #expect(health.header("Content-Type") == "application/json")
    }
}
