import Foundation
import Testing
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// What a page of another site may make a browser do: no unsafe request it marks cross-site
/// (as Go 1.25's `CrossOriginProtection`), and nothing at all through a rebound DNS name.
@Suite("Browser protection: cross-origin writes and DNS rebinding")
struct BrowserProtectionTests {
    static let form = ("Content-Type", "application/x-www-form-urlencoded")

    /// One request with exactly this `Host` (RawHTTP's `request` sends 127.0.0.1).
    func request(
        _ app: TestApp, _ method: String, _ target: String, host: String, headers: [(String, String)] = [],
        body: String = ""
    ) throws -> WireResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        let connection = try RawHTTP(port: app.port)
        try connection.send(text + "\r\n" + body)
        return try connection.readResponse(head: method == "HEAD")
    }

    func noteID(_ response: WireResponse) throws -> String {
        try #require((try response.json()["note"] as? [String: Any])?["id"] as? String)
    }

    @Test("auth off on loopback: a cross-site form POST with _method=DELETE, a planted note and a sign-in are 403; nothing changes")
    func crossSiteWritesRefused() throws {
        try TestApp.with { app in
            let id = try noteID(try app.request("POST", "/notes", headers: [Self.form], body: "body=mine"))
            try app.addUser("ann", password: "correct horse")
            let foreign: [[(String, String)]] = [
                [("Origin", "http://evil.example")],
                [("Sec-Fetch-Site", "cross-site")],
                [("Sec-Fetch-Site", "same-site"), ("Origin", "http://sub.127.0.0.1")],
                [("Sec-Fetch-Site", "cross-site"), ("Origin", "http://127.0.0.1")],
                [("Origin", "null")],
            ]
            for headers in foreign {
                for (target, body) in [
                    ("/notes/\(id)", "_method=DELETE"), ("/notes", "body=planted"),
                    ("/auth/sessions", "name=ann&password=correct+horse&kind=token"), ("/echo", "a=1"),
                ] {
                    let refused = try app.request("POST", target, headers: [Self.form] + headers, body: body)
                    #expect(refused.status == 403, "\(target) \(headers): \(refused.text)")
                    #expect(refused.header("Content-Type") == "application/problem+json")
                }
                #expect(try app.request("DELETE", "/notes/\(id)", headers: headers).status == 403)
                #expect(try app.request("PUT", "/notes/\(id)", headers: [Self.form] + headers, body: "body=changed").status == 403)
            }
            let notes = try #require(try app.request("GET", "/notes").json()["notes"] as? [[String: Any]])
            #expect(notes.compactMap { $0["body"] as? String } == ["mine"])
            // Reading stays possible cross-site (what a page may read is CORS's business).
            #expect(try app.request("GET", "/notes/\(id)", headers: [("Sec-Fetch-Site", "cross-site")]).status == 200)
        }
    }

    @Test("same-origin browsers, --cors-origin pages and clients that send neither header are unaffected")
    func othersUnaffected() throws {
        try TestApp.with(configure: { $0.corsOrigins = ["https://app.example.com"] }) { app in
            let allowed: [[(String, String)]] = [
                [],
                [("Sec-Fetch-Site", "same-origin"), ("Origin", "http://127.0.0.1")],
                [("Sec-Fetch-Site", "none")],
                [("Origin", "http://127.0.0.1")],
                [("Origin", "https://app.example.com")],
                [("Origin", "https://app.example.com"), ("Sec-Fetch-Site", "cross-site")],
            ]
            for headers in allowed {
                let created = try app.request("POST", "/notes", headers: [Self.form] + headers, body: "body=ok")
                #expect(created.status == 201, "\(headers): \(created.text)")
                let id = try noteID(created)
                #expect(try app.request("POST", "/notes/\(id)", headers: [Self.form] + headers, body: "_method=DELETE").status / 100 == 2)
            }
        }
    }

    @Test("loopback listener: a foreign Host is 421 problem+json; localhost, 127.0.0.1, [::1] (with a port) and --allowed-host are served")
    func dnsRebinding() throws {
        try TestApp.with(configure: { $0.allowedHosts = ["notes.example.com"] }) { app in
            for host in ["evil.example", "evil.example:\(app.port)", "127.0.0.1.evil.example", "localhost.evil.example:80", "10.0.0.1"] {
                for (method, target) in [("GET", "/notes"), ("GET", "/"), ("GET", "/hello?name=a"), ("GET", "/nowhere"), ("POST", "/notes")] {
                    let refused = try request(app, method, target, host: host, headers: [Self.form], body: method == "POST" ? "body=x" : "")
                    #expect(refused.status == 421, "\(host) \(method) \(target): \(refused.text)")
                    #expect(refused.header("Content-Type") == "application/problem+json")
                }
            }
            let notes = try app.request("GET", "/notes").json()["notes"] as? [Any]
            #expect(notes?.isEmpty == true)
            for host in [
                "localhost", "localhost:\(app.port)", "LOCALHOST:\(app.port)", "127.0.0.1", "127.0.0.1:\(app.port)",
                "[::1]", "[::1]:\(app.port)", "notes.example.com", "notes.example.com:443",
            ] {
                let served = try request(app, "GET", "/notes", host: host)
                #expect(served.status == 200, "\(host)")
            }
        }
    }

    @Test(
        "a framing refusal wins over a head phase's and closes: one answer, then the end of the connection",
        arguments: [
            ("POST /notes HTTP/1.1\r\nHost: 127.0.0.1\r\nSec-Fetch-Site: cross-site\r\nTransfer-Encoding: identity\r\n\r\n", 501),
            ("POST /notes HTTP/1.1\r\nHost: evil.example\r\nTransfer-Encoding: identity\r\n\r\n", 501),
            ("GET /notes HTTP/1.1\r\nHost: u@a\r\n\r\n", 400),
            ("GET /notes HTTP/1.1\r\nHost: example.com/\\:552\r\n\r\n", 400),
            ("POST /notes HTTP/1.1\r\nHost: evil.example\r\nSec-Fetch-Site: cross-site\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nab", 400),
        ] as [(String, Int)])
    func framingRefusalWins(_ request: String, _ status: Int) throws {
        try TestApp.with { app in
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(request + "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let text = String(decoding: connection.readToEnd(), as: UTF8.self)
            let statusLines = text.components(separatedBy: "\r\n").filter { $0.hasPrefix("HTTP/1.1 ") }
            #expect(statusLines.count == 1 && statusLines.first?.hasPrefix("HTTP/1.1 \(status) ") == true, "\(text)")
            #expect(text.lowercased().contains("connection: close"), "\(text)")
            #expect(text.contains("application/problem+json"), "\(text)")
        }
    }

    @Test("an absolute-form target names the host instead of Host (RFC 9112 §3.2.2): a foreign one is 421, an allowed one served")
    func absoluteFormHost() throws {
        try TestApp.with { app in
            let refused = try request(app, "GET", "http://evil.example/notes", host: "localhost")
            #expect(refused.status == 421, "\(refused.text)")
            let served = try request(app, "GET", "http://localhost:\(app.port)/hello?name=a", host: "evil.example")
            #expect(served.status == 200, "\(served.text)")
            #expect(served.text == "Hello a!")
        }
    }

    @Test("a listener on another address serves any Host (a proxy or DNS name in front of it)")
    func anyHostElsewhere() throws {
        try TestApp.with(configure: { $0.host = "0.0.0.0" }) { app in
            let served = try request(app, "GET", "/hello?name=a", host: "notes.example.com")
            #expect(served.status == 200)
        }
    }
}
