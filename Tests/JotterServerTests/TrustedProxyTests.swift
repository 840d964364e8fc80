import Foundation
import Glibc
import Testing
import JotterServerTestSupport
import JotterTestSupport
@testable import JotterServer

/// `--trusted-proxy`: through nginx the log shows the client's address and HTTPS from the
/// proxy makes cookies `Secure` and adds HSTS; from any other peer the same headers change nothing.
@Suite("Trusted proxies", .serialized)
struct TrustedProxyTests {
    /// Lines of the access log naming `target`, once at least one is there.
    func logLines(_ server: ServerProcess, _ target: String) -> [String] {
        let deadline = Date().addingTimeInterval(5)
        while true {
            let lines = server.stderrText.split(separator: "\n").map(String.init).filter { $0.contains("\"GET \(target) ") }
            if !lines.isEmpty || Date() > deadline { return lines }
            usleep(20_000)
        }
    }

    @Test("through nginx the log shows the client's address; a spoofed X-Forwarded-For from another peer changes nothing")
    func throughNginx() throws {
        let server = try ServerProcess(["--trusted-proxy", "127.0.0.1"])
        defer { server.signal(SIGTERM); server.finish() }
        let nginx = try NginxProcess(instances: [server.port])
        defer { nginx.stop() }
        // The client comes from 127.0.0.2; nginx connects from 127.0.0.1, which is trusted.
        let proxied = try RawHTTP(port: nginx.port, sourceAddress: "127.0.0.2").request("GET", "/hello?name=vianginx", close: true)
        #expect(proxied.status == 200)
        let viaNginx = logLines(server, "/hello?name=vianginx")
        #expect(viaNginx.count == 1 && viaNginx[0].contains(" 127.0.0.2 \""), "\(viaNginx)")
        // Straight from 127.0.0.3 (not trusted), claiming another address: its own is logged.
        let spoofed = try RawHTTP(port: server.port, sourceAddress: "127.0.0.3").request(
            "GET", "/hello?name=spoofed", headers: [("X-Forwarded-For", "198.51.100.7"), ("Forwarded", "for=198.51.100.8")], close: true)
        #expect(spoofed.status == 200)
        let direct = logLines(server, "/hello?name=spoofed")
        #expect(direct.count == 1 && direct[0].contains(" 127.0.0.3 \"") && !direct[0].contains("198.51.100"), "\(direct)")
    }

    @Test("through nginx a resumable upload's Location names the host and port the client asked, as contrib/nginx passes Host on")
    func locationThroughNginx() throws {
        try TestApp.with(configure: { $0.trustedProxies = ["127.0.0.1"] }) { app in
            let nginx = try NginxProcess(instances: [app.port])
            defer { nginx.stop() }
            let client = try RawHTTP(port: nginx.port, timeout: 10)
            try client.send(
                "POST /uploads HTTP/1.1\r\nHost: 127.0.0.1:\(nginx.port)\r\nTus-Resumable: 1.0.0\r\nUpload-Length: 3\r\n"
                    + "Content-Length: 0\r\nConnection: close\r\n\r\n")
            let created = try client.readResponse()
            #expect(created.status == 201, "\(created.text)")
            let location = try #require(created.header("Location"))
            #expect(location.hasPrefix("http://127.0.0.1:\(nginx.port)/uploads/"), "\(location)")
        }
    }

    @Test("through nginx the per-address connection limit leaves nginx alone, and still holds for a direct client")
    func connectionLimitThroughNginx() throws {
        try TestApp.with(configure: { configuration in
            configuration.trustedProxies = ["127.0.0.1"]
            configuration.connectionsPerAddress = 4
        }) { app in
            let nginx = try NginxProcess(instances: [app.port])
            defer { nginx.stop() }
            // Eight clients' event streams: nginx holds eight connections to the instance, from 127.0.0.1.
            var streams: [RawHTTP] = []
            for client in 2...9 {
                let stream = try RawHTTP(port: nginx.port, sourceAddress: "127.0.0.\(client)", timeout: 10)
                try stream.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let head = try stream.readStream(until: "\r\n\r\n")
                #expect(head.hasPrefix("HTTP/1.1 200"), "client 127.0.0.\(client): \(head.prefix(200))")
                streams.append(stream)
            }
            // A client straight to the instance still has its four.
            var direct: [RawHTTP] = []
            for _ in 0..<4 {
                let stream = try RawHTTP(port: app.port, sourceAddress: "127.0.0.10", timeout: 10)
                try stream.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
                #expect(try stream.readStream(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200"))
                direct.append(stream)
            }
            let fifth = try RawHTTP(port: app.port, sourceAddress: "127.0.0.10", timeout: 5)
            #expect(fifth.isClosedByServer())
        }
    }

    /// Accounts required, sign-in attempts refilled slowly (one per 10 minutes), and 127.0.0.1
    /// trusted to name the client: the sign-in limiter's tests.
    static func signInBehindLocalProxy(_ configuration: inout ServerConfiguration) {
        configuration.trustedProxies = ["127.0.0.1"]
        configuration.auth = .required
        configuration.signInRefillSeconds = 600
    }

    @Test(
        "through nginx the sign-in limiter counts each client's guesses, not nginx's; a spoofed X-Forwarded-For from another peer does not escape it")
    func signInLimiterThroughNginx() throws {
        try TestApp.with(configure: Self.signInBehindLocalProxy) { app in
            try app.addUser("ann")
            try app.addUser("bob")
            let nginx = try NginxProcess(instances: [app.port])
            defer { nginx.stop() }
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            func signIn(_ port: Int, from source: String, _ body: String, headers: [(String, String)] = []) throws -> Int {
                try RawHTTP(port: port, sourceAddress: source).request(
                    "POST", "/auth/sessions", headers: form + headers,
                    body: Array(body.utf8), close: true
                ).status
            }
            // One client through nginx spends its address's attempts (a burst of 10)…
            for _ in 0..<10 { #expect(try signIn(nginx.port, from: "127.0.0.2", "name=ann&password=guess") == 401) }
            #expect(try signIn(nginx.port, from: "127.0.0.2", "name=bob&password=password%20of%20bob") == 429)
            // …another client through the same nginx still has all of its own.
            #expect(try signIn(nginx.port, from: "127.0.0.3", "name=bob&password=password%20of%20bob") == 201)
            // Straight from an untrusted peer, a new X-Forwarded-For each time changes nothing.
            for guess in 0..<10 {
                #expect(
                    try signIn(app.port, from: "127.0.0.4", "name=ann&password=guess", headers: [("X-Forwarded-For", "198.51.100.\(guess)")]) == 401)
            }
            #expect(
                try signIn(app.port, from: "127.0.0.4", "name=bob&password=password%20of%20bob", headers: [("X-Forwarded-For", "198.51.100.99")])
                    == 429)
        }
    }

    @Test("the sign-in limiter counts an IPv6 client by its /64: a new address in the same block each time does not escape it")
    func signInLimiterCountsIPv6Blocks() throws {
        try TestApp.with(configure: Self.signInBehindLocalProxy) { app in
            try app.addUser("ann")
            func signIn(for client: String, _ body: String) throws -> Int {
                try RawHTTP(port: app.port, sourceAddress: "127.0.0.1").request(
                    "POST", "/auth/sessions",
                    headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Forwarded", "for=\"[\(client)]\"")],
                    body: Array(body.utf8), close: true
                ).status
            }
            for n in 1...10 { #expect(try signIn(for: "2001:db8:0:7::\(n)", "name=ann&password=guess") == 401) }
            #expect(try signIn(for: "2001:db8:0:7:ffff::1", "name=ann&password=password%20of%20ann") == 429)
            // Another /64 has its own allowance.
            #expect(try signIn(for: "2001:db8:0:8::1", "name=ann&password=password%20of%20ann") == 201)
        }
        #expect(SignInLimiter.limitKey("2001:db8:0:7:1:2:3:4") == "2001:db8:0:7::/64")
        #expect(SignInLimiter.limitKey("::ffff:198.51.100.7") == "198.51.100.7")
        #expect(SignInLimiter.limitKey("198.51.100.7") == "198.51.100.7")
    }

    @Test("HTTPS said by a trusted proxy: the session cookie is Secure and HSTS is sent; said by anyone else, neither")
    func httpsFromTheProxy() throws {
        for trusted in [true, false] {
            try TestApp.with(configure: { configuration in
                configuration.auth = .required
                if trusted { configuration.trustedProxies = ["127.0.0.0/8"] }
            }) { app in
                try app.addUser("ann")
                let https = ("X-Forwarded-Proto", "https")
                let signedIn = try app.request(
                    "POST", "/auth/sessions", headers: [("Content-Type", "application/json"), https],
                    body: #"{"name":"ann","password":"password of ann"}"#)
                #expect(signedIn.status == 201)
                #expect(signedIn.header("Set-Cookie")?.contains("; Secure") == trusted, "\(trusted)")
                #expect((signedIn.header("Strict-Transport-Security") != nil) == trusted)
                #expect((try app.request("GET", "/hello", headers: [https]).header("Strict-Transport-Security") != nil) == trusted)
                // Plain HTTP through the proxy: no HSTS, no Secure.
                #expect(try app.request("GET", "/hello", headers: [("X-Forwarded-Proto", "http")]).header("Strict-Transport-Security") == nil)
            }
        }
    }

    @Test("jotter serve refuses a --trusted-proxy that is no address or block")
    func badBlock() throws {
        let run = try runProgram([ServerProcess.binary.path, "serve", "--trusted-proxy", "10.0.0.0/40"])
        #expect(run.status == 2, "\(run.output)")
        #expect(run.output.contains("--trusted-proxy"), "\(run.output)")
    }
}
