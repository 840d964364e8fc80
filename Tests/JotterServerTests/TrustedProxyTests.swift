import Foundation
import Glibc
import Testing
import JotterTestSupport

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

    @Test("HTTPS said by a trusted proxy: the session cookie is Secure and HSTS is sent; said by anyone else, neither")
    func httpsFromTheProxy() throws {
        for trusted in [true, false] {
            try TestApp.with(configure: { configuration in
                configuration.auth = .required
                if trusted { configuration.trustedProxies = ["127.0.0.0/8"] }
            }) { app in
                try app.addUser("ann")
                let https = ("X-Forwarded-Proto", "https")
                let signedIn = try app.request("POST", "/auth/sessions", headers: [("Content-Type", "application/json"), https],
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
