import Foundation
import Synchronization
import Testing
import JotterServer
import JotterStore
import JotterServerTestSupport
import JotterTestSupport

/// Authentication: tokens, sessions, `--auth required|off`, refusals before the body.
@Suite("Authentication")
struct AuthTests {
    static func required(_ configuration: inout ServerConfiguration) { configuration.auth = .required }

    @Test("the default: off on loopback, required on any other address")
    func defaults() {
        #expect(AuthMode.default(for: "127.0.0.1") == .off)
        #expect(AuthMode.default(for: "::1") == .off)
        #expect(AuthMode.default(for: "localhost") == .off)
        #expect(AuthMode.default(for: "0.0.0.0") == .required)
        #expect(AuthMode.default(for: "192.168.1.20") == .required)
        #expect(AuthMode.default(for: "::") == .required)
    }

    @Test("required: notes, uploads, events and /metrics answer 401 with WWW-Authenticate and problem+json; public routes stay public")
    func requiredRefuses() throws {
        try TestApp.with(configure: Self.required) { app in
            for (method, target) in [
                ("GET", "/notes"), ("POST", "/notes"), ("GET", "/notes/1"), ("DELETE", "/notes/1"),
                ("GET", "/notes/events"), ("GET", "/uploads"), ("GET", "/metrics"), ("GET", "/auth/me"),
            ] {
                let response = try app.request(method, target)
                #expect(response.status == 401, "\(method) \(target)")
                #expect(response.header("WWW-Authenticate") == "Bearer realm=\"jotter\"", "\(method) \(target)")
                #expect(response.header("Content-Type") == "application/problem+json", "\(method) \(target)")
                #expect(try response.json()["status"] as? Int == 401)
            }
            for target in ["/hello?name=Bob", "/echo_hello.php?name=Bob", "/healthz", "/form.html", "/", "/openapi.json"] {
                #expect(try app.request("GET", target).status == 200, "\(target)")
            }
            #expect(try app.request("POST", "/echo", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "a=1").status == 200)
        }
    }

    @Test("expires_in: the served document's pattern accepts exactly what sign-in accepts (its bounds are in the document)")
    func expiresInBoundsDocumented() throws {
        try TestApp.with(configure: Self.required) { app in
            let document = try app.request("GET", "/openapi.json").json()
            let paths = try #require(document["paths"] as? [String: Any])
            let post = try #require((paths["/auth/sessions"] as? [String: Any])?["post"] as? [String: Any])
            let content = try #require((post["requestBody"] as? [String: Any])?["content"] as? [String: Any])
            let schema = try #require((content["application/x-www-form-urlencoded"] as? [String: Any])?["schema"] as? [String: Any])
            let field = try #require((schema["properties"] as? [String: Any])?["expires_in"] as? [String: Any])
            let pattern = try NSRegularExpression(pattern: try #require(field["pattern"] as? String))
            try app.addUser("ann", password: "correct horse")
            for value in ["", "59", "60", "0060", "3600", "99999999", "315359999", "315360000", "315360001", "999999999", "1e3", "-60"] {
                let documented = pattern.firstMatch(in: value, range: NSRange(value.startIndex..., in: value)) != nil
                let answer = try app.request(
                    "POST", "/auth/sessions", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: "name=ann&password=correct+horse&kind=token&expires_in=\(value)")
                #expect((answer.status == 201) == documented, "expires_in=\(value): \(answer.status), document says \(documented)")
            }
        }
    }

    @Test("/metrics under --auth required is an administrator's: 403 for another user; under --auth off it stays open")
    func metricsForAdmins() throws {
        try TestApp.with(configure: Self.required) { app in
            try app.addUser("root", admin: true)
            try app.addUser("ann")
            #expect(try app.request("GET", "/metrics", token: try app.token("ann")).status == 403)
            #expect(try app.request("GET", "/metrics", token: try app.token("root")).status == 200)
        }
        try TestApp.with { app in
            let open = try app.request("GET", "/metrics")
            #expect(open.status == 200)
        }
    }

    @Test("an unknown method on a known path is 405 with Allow before authentication; _method still needs credentials")
    func methodNotAllowedBeforeAuth() throws {
        try TestApp.with(configure: Self.required) { app in
            for target in ["/auth/sessions/current", "/auth/tokens/1", "/notes/1", "/users/ann/password"] {
                for body in ["", "label=x"] {
                    let refused = try app.request("POST", target, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: body)
                    #expect(refused.status == 405, "POST \(target) \(body): \(refused.text)")
                    #expect(refused.header("Allow") != nil, "POST \(target)")
                    #expect(refused.header("WWW-Authenticate") == nil)
                }
                #expect(try app.request("TRACE", target).status == 405, "TRACE \(target)")
            }
            let overridden = try app.request(
                "POST", "/auth/tokens/1", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: "_method=DELETE")
            #expect(overridden.status == 401, "\(overridden.text)")
            try app.addUser("ann", password: "correct horse")
            let token = try app.token("ann", password: "correct horse")
            let created = try app.request("POST", "/notes", token: token, body: "body=x")
            let id = try #require((try created.json()["note"] as? [String: Any])?["id"] as? String)
            #expect(try app.request("POST", "/notes/\(id)", token: token, body: "_method=PATCH&body=y").status == 200)
            #expect(try app.request("POST", "/notes/\(id)", token: nil, body: "_method=PATCH&body=z").status == 401)
        }
    }

    @Test("required: a 100 MiB upload without a token is refused at its head; nothing reaches the data folder")
    func refusedBeforeTheBody() throws {
        try TestApp.with(configure: Self.required) { app in
            let connection = try RawHTTP(port: app.port, timeout: 10)
            try connection.send(
                "POST /uploads HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: \(100 << 20)\r\n\r\n")
            try connection.send(
                "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n\r\n" + String(repeating: "a", count: 65536))
            let response = try connection.readResponse()
            #expect(response.status == 401)
            #expect(connection.isClosedByServer())
            let tmp = (try? FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("tmp").path)) ?? []
            let uploads = (try? FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("uploads").path)) ?? []
            #expect(tmp.isEmpty && uploads.isEmpty)
        }
    }

    @Test("a token works; malformed, wrong-prefix, bad-checksum, unknown, revoked and expired ones are 401 invalid_token")
    func tokens() throws {
        try TestApp.with(configure: Self.required) { app in
            try app.addUser("ann")
            let token = try app.token("ann")
            #expect(token.hasPrefix("jot_"))
            #expect(try app.request("GET", "/notes", token: token).status == 200)
            #expect(try app.request("GET", "/auth/me", token: token).json()["user"].flatMap { ($0 as? [String: Any])?["name"] as? String } == "ann")

            var flipped = Array(token)
            flipped[8] = flipped[8] == "x" ? "y" : "x"
            let unknown = Secret.make(prefix: Secret.tokenPrefix)
            for bad in ["nonsense", "ghp_" + token.dropFirst(4), String(flipped), String(token.dropLast()), unknown] {
                let response = try app.request("GET", "/notes", token: bad)
                #expect(response.status == 401, "\(bad)")
                #expect(response.header("WWW-Authenticate")?.contains("error=\"invalid_token\"") == true)
            }
            #expect(try app.request("GET", "/notes", headers: [("Authorization", "Basic YW5uOnB3")]).status == 401)

            // Revoked through the API: refused on the very next request.
            let other = try app.token("ann")
            let listed = try app.request("GET", "/auth/tokens", token: token).json()["tokens"] as? [[String: Any]]
            #expect(listed?.count == 2)
            let id = try #require(listed?.first?["id"] as? String)
            #expect(try app.request("DELETE", "/auth/tokens/\(id)", token: token).status == 200)
            #expect(try app.request("GET", "/notes", token: other).status == 401)
            #expect(try app.request("GET", "/notes", token: token).status == 200)

            // Expired: issued with an expiry already past.
            let expired = Secret.make(prefix: Secret.tokenPrefix)
            let ann = try #require(try app.app.accounts.store.user(named: "ann"))
            _ = try app.app.accounts.store.perform(.issue(userID: ann.id, kind: .token, label: "old", digest: Secret.digest(expired), expiresAt: 1))
            let response = try app.request("GET", "/notes", token: expired)
            #expect(response.status == 401)
            #expect(try response.json()["detail"] as? String == "the credential has expired")
        }
    }

    @Test("a wrong password, an unknown name and a missing field do not sign in")
    func wrongPasswords() throws {
        try TestApp.with(configure: Self.required) { app in
            try app.addUser("ann", password: "right one")
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            for body in ["name=ann&password=wrong", "name=nobody&password=right%20one", "name=ANN&password=right%20on"] {
                let response = try app.request("POST", "/auth/sessions", headers: form, body: body)
                #expect(response.status == 401, "\(body)")
                #expect(response.header("Set-Cookie") == nil)
                #expect(!response.text.contains("right one"))
            }
            #expect(try app.request("POST", "/auth/sessions", headers: form, body: "name=ann").status == 422)
            #expect(try app.request("POST", "/auth/sessions", headers: form, body: "name=ann&password=right%20one").status == 201)
        }
    }

    @Test(
        "a malformed sign-in is 422 and takes nothing from the limiter: an unknown kind, an expires_in that is no number, a label that is no string")
    func malformedSignIn() throws {
        try TestApp.with(configure: Self.required) { app in
            try app.addUser("ann", password: "right one")
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            for _ in 0..<6 {
                #expect(try app.request("POST", "/auth/sessions", headers: form, body: "name=ann&password=guess&kind=AAA").status == 422)
                #expect(try app.request("POST", "/auth/sessions", headers: form, body: "name=ann&password=guess&expires_in=%C2%84").status == 422)
            }
            for _ in 0..<12 {
                let json = try app.request(
                    "POST", "/auth/sessions", headers: [("Content-Type", "application/json")],
                    body: #"{"name":"ann","password":"guess","label":{}}"#)
                #expect([400, 422].contains(json.status), "\(json.status)")
            }
            #expect(try app.request("POST", "/auth/sessions", headers: form, body: "name=ann&password=right%20one&kind=session").status == 201)
        }
    }

    @Test("adding a user: admin is true/1/yes/on or false/0/no/off in any case, anything else 422")
    func adminField() throws {
        try TestApp.with(configure: Self.required) { app in
            try app.addUser("root", password: "root password", admin: true)
            let token = try app.token("root", password: "root password")
            for (index, (value, admin)) in [("YES", true), ("on", true), ("1", true), ("off", false), ("False", false)].enumerated() {
                let response = try app.request("POST", "/users", token: token, body: "name=u\(index)&password=xxxxxxxxxx&admin=\(value)")
                #expect(response.status == 201, "\(value)")
                #expect(try response.json()["admin"] as? Bool == admin, "\(value)")
            }
            for value in ["AAA", "", "2"] {
                let response = try app.request("POST", "/users", token: token, body: "name=x\(value)&password=xxxxxxxxxx&admin=\(value)")
                #expect(response.status == 422, "'\(value)'")
            }
        }
    }

    static var backends: [String] { SharedBackend.available ? ["sqlite", "postgres"] : ["sqlite"] }

    @Test(
        "DELETE /users/{me} by the last administrator is 409 problem+json, nothing changed; two administrators removing each other at once leave one",
        arguments: backends)
    func lastAdministrator(backend: String) throws {
        let shared = backend == "postgres" ? try SharedBackend() : nil
        try TestApp.with(configure: {
            $0.auth = .required
            if let shared { $0.database = .postgres(url: shared.databaseURL, poolSize: 4) }
        }) { app in
            try app.addUser("root", password: "root password", admin: true)
            try app.addUser("ann")
            let root = try app.token("root", password: "root password")
            #expect(try app.request("POST", "/notes", token: root, body: "body=kept").status == 201)
            let refused = try app.request("DELETE", "/users/root", token: root)
            #expect(refused.status == 409)
            #expect(refused.header("Content-Type") == "application/problem+json")
            #expect(
                try refused.json()["detail"] as? String
                    == "root is the last administrator: add another administrator before removing them; nothing changed")
            #expect(try app.request("GET", "/notes", token: root).text.contains("kept"))
            #expect(try app.request("DELETE", "/users/ann", token: root).status == 204)

            // Two administrators, each removing the other at once: one removal goes, the other is 409.
            let added = try app.request("POST", "/users", token: root, body: "name=eve&password=eve%27s%20password&admin=true")
            #expect(added.status == 201)
            let eve = try app.token("eve", password: "eve's password")
            let statuses = Mutex<[Int]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                let (token, target) = side == 0 ? (root, "/users/eve") : (eve, "/users/root")
                let status = (try? app.request("DELETE", target, token: token).status) ?? 0
                statuses.withLock { $0.append(status) }
            }
            let sorted = statuses.withLock { $0.sorted() }
            // The loser may also find its token's user gone already (401).
            #expect(sorted == [204, 401] || sorted == [204, 409], "\(sorted)")
            #expect(try app.app.accounts.store.users().filter(\.isAdmin).count == 1)
        }
    }

    @Test("sign-in attempts are limited per name (and per address): 429 with Retry-After, before any password is checked")
    func signInLimit() throws {
        // One attempt back per 10 minutes: the ten failed sign-ins (Argon2 each, slow on a loaded
        // machine) cannot earn one back before the eleventh, however long they take.
        try TestApp.with(configure: {
            Self.required(&$0); $0.signInRefillSeconds = 600
        }) { app in
            try app.addUser("ann", password: "right one")
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            for _ in 0..<10 {
                #expect(try app.request("POST", "/auth/sessions", headers: form, body: "name=ann&password=guess").status == 401)
            }
            let limited = try app.request("POST", "/auth/sessions", headers: form, body: "name=ann&password=right%20one")
            #expect(limited.status == 429)
            #expect(Int(limited.header("Retry-After") ?? "") ?? 0 >= 1)
            #expect(limited.header("Content-Type") == "application/problem+json")
            // The address's bucket is spent too: another name from here is refused as well.
            try app.addUser("bob")
            #expect(try app.request("POST", "/auth/sessions", headers: form, body: "name=bob&password=x").status == 429)
        }
    }

    /// A form sign-in from loopback address `source` (the server listens on 127.0.0.1).
    static func signIn(_ app: TestApp, from source: String, name: String, password: String) throws -> WireResponse {
        let client = try RawHTTP(port: app.port, sourceAddress: source)
        return try client.request(
            "POST", "/auth/sessions", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("name=\(name)&password=\(FormEscape.escape(password))".utf8), close: true)
    }

    @Test(
        "one guesser cannot lock a user out: failures count per (name, address), and per name only at ten times that; an address the name signed in from stays open"
    )
    func signInLockout() throws {
        // Two attempts per address and pair, twenty failures per name, nothing refilled during the test.
        try TestApp.with(configure: {
            Self.required(&$0); $0.signInBurst = 2; $0.signInRefillSeconds = 600
        }) { app in
            try app.addUser("ann", password: "right one")
            #expect(try Self.signIn(app, from: "127.0.0.3", name: "ann", password: "right one").status == 201)
            // The guesser spends its pair's attempts...
            for _ in 0..<2 { #expect(try Self.signIn(app, from: "127.0.0.2", name: "ann", password: "guess").status == 401) }
            let held = try Self.signIn(app, from: "127.0.0.2", name: "ann", password: "right one")
            #expect(held.status == 429)
            #expect(Int(held.header("Retry-After") ?? "") ?? 0 >= 1)
            // ...and ann, from anywhere else, still signs in.
            #expect(try Self.signIn(app, from: "127.0.0.4", name: "ann", password: "right one").status == 201)
            // Twenty failures from ten addresses spend the name: a new address is held...
            for index in 10..<19 {
                for _ in 0..<2 { #expect(try Self.signIn(app, from: "127.0.0.\(index)", name: "ann", password: "guess").status == 401) }
            }
            let spent = try Self.signIn(app, from: "127.0.0.5", name: "ann", password: "right one")
            #expect(spent.status == 429)
            #expect(spent.header("Content-Type") == "application/problem+json")
            // ...but the addresses ann signed in from are not.
            #expect(try Self.signIn(app, from: "127.0.0.3", name: "ann", password: "right one").status == 201)
            #expect(try Self.signIn(app, from: "127.0.0.4", name: "ann", password: "right one").status == 201)
        }
    }

    @Test("password hashing is bounded: one at a time and one waiting here, the rest 503 with Retry-After before any hash; then sign-in works again")
    func signInHashingBounded() throws {
        try TestApp.with(configure: {
            Self.required(&$0); $0.passwordHashingWidth = 1; $0.passwordHashingQueue = 1
        }) { app in
            try app.addUser("ann", password: "right one")
            let clients = try (0..<8).map { _ in try RawHTTP(port: app.port, timeout: 30) }
            for (index, client) in clients.enumerated() {
                let body = "name=nobody\(index)&password=guess"
                try client.send(
                    "POST /auth/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                        + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
            }
            let answers = try clients.map { try $0.readResponse() }
            let refused = answers.filter { $0.status == 503 }
            let statuses = answers.map { String($0.status) }.joined(separator: " ")
            let checked = answers.filter { $0.status == 401 }.count
            #expect(checked + refused.count == 8, "\(statuses)")
            // The first is hashed, one waits; the others arrive while the first is still hashing.
            #expect(refused.count >= 1, "\(statuses)")
            #expect(refused.count <= 6, "\(statuses)")
            for answer in refused {
                #expect(answer.header("Retry-After") == "1")
                #expect(answer.header("Content-Type") == "application/problem+json")
            }
            #expect(
                try app.request(
                    "POST", "/auth/sessions", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: "name=ann&password=right%20one"
                ).status == 201)
        }
    }

    @Test("a session cookie: HttpOnly, SameSite=Lax, with an expiry; writes need same-origin and the CSRF token; sign-out ends it")
    func sessions() throws {
        try TestApp.with(configure: Self.required) { app in
            try app.addUser("ann")
            let response = try app.request(
                "POST", "/auth/sessions", headers: [("Content-Type", "application/json")],
                body: #"{"name":"ann","password":"password of ann"}"#)
            #expect(response.status == 201)
            let setCookie = try #require(response.header("Set-Cookie"))
            #expect(setCookie.hasPrefix("jotter_session=jots_"))
            #expect(setCookie.contains("; HttpOnly") && setCookie.contains("; SameSite=Lax") && setCookie.contains("; Max-Age=1209600"))
            #expect(!setCookie.contains("Secure"))
            let csrf = try #require(try response.json()["csrf_token"] as? String)
            let cookie = ("Cookie", String(setCookie.split(separator: ";")[0]))
            let form = ("Content-Type", "application/x-www-form-urlencoded")

            #expect(try app.request("GET", "/notes", headers: [cookie]).status == 200)
            #expect(try app.request("GET", "/auth/me", headers: [cookie]).json()["csrf_token"] as? String == csrf)
            // CSRF: no token; a token but from another site; another origin; a wrong token.
            #expect(try app.request("POST", "/notes", headers: [cookie, form], body: "body=x").status == 403)
            #expect(
                try app.request("POST", "/notes", headers: [cookie, form, ("X-CSRF-Token", csrf), ("Sec-Fetch-Site", "cross-site")], body: "body=x")
                    .status == 403)
            #expect(
                try app.request("POST", "/notes", headers: [cookie, form, ("X-CSRF-Token", csrf), ("Origin", "http://evil.example")], body: "body=x")
                    .status == 403)
            #expect(
                try app.request("POST", "/notes", headers: [cookie, form, ("X-CSRF-Token", String(csrf.reversed()))], body: "body=x").status == 403)
            #expect(try app.request("GET", "/notes", headers: [cookie]).json()["notes"].map { ($0 as? [Any])?.count } == 0)
            let created = try app.request(
                "POST", "/notes",
                headers: [
                    cookie, form, ("X-CSRF-Token", csrf), ("Sec-Fetch-Site", "same-origin"),
                    ("Origin", "http://127.0.0.1"),
                ], body: "body=x")
            #expect(created.status == 201)
            // The session is not a bearer token for the cookie's kind check, and a token is not a cookie.
            let token = try app.token("ann")
            #expect(try app.request("GET", "/notes", headers: [("Cookie", "jotter_session=\(token)")]).status == 401)

            let out = try app.request("DELETE", "/auth/sessions/current", headers: [cookie, ("X-CSRF-Token", csrf)])
            #expect(out.status == 204)
            #expect(out.header("Set-Cookie")?.contains("Max-Age=0") == true)
            #expect(try app.request("GET", "/notes", headers: [cookie]).status == 401)
        }
    }

    @Test("off: requests without credentials reach the first user's notes; bad credentials are still 401; /auth/me needs a user")
    func off() throws {
        try TestApp.with(configure: { $0.auth = .off }) { app in
            let created = try app.request("POST", "/notes", body: "body=before%20accounts")
            #expect(created.status == 201)
            try app.addUser("ann")
            try app.addUser("bob")
            #expect(try app.request("GET", "/notes").text.contains("before accounts"))
            #expect(try app.request("GET", "/notes", token: try app.token("ann")).text.contains("before accounts"))
            #expect(!(try app.request("GET", "/notes", token: try app.token("bob")).text.contains("before accounts")))
            #expect(try app.request("GET", "/notes", token: "jot_nonsense").status == 401)
            #expect(try app.request("GET", "/auth/me").status == 401)
        }
    }

    @Test("a token revoked and a user removed on the store directly (as with --data): their open streams end within the refresh interval")
    func revocationElsewhereEndsStreams() throws {
        try TestApp.with(configure: {
            $0.auth = .required; $0.credentialRefreshInterval = 2
        }) { app in
            try app.addUser("ann")
            let bob = try app.addUser("bob")
            let doomed = try app.token("ann"), kept = try app.token("ann"), bobs = try app.token("bob")
            func open(_ token: String) throws -> RawHTTP {
                let connection = try RawHTTP(port: app.port, timeout: 8)
                try connection.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n\r\n")
                _ = try connection.readStream(until: "retry: 3000\n\n")
                return connection
            }
            let stream = try open(doomed), other = try open(kept), removed = try open(bobs)
            let tokens = try app.request("GET", "/auth/tokens", token: kept).json()["tokens"] as? [[String: Any]]
            let text = try #require(tokens?.last?["id"] as? String)
            let id = try #require(Int64(text))
            // Straight to the store, as `jotter tokens revoke --data` and `users remove --data` do: the server is not told.
            _ = try app.app.accounts.store.perform(.revoke(id: id, userID: nil))
            _ = try app.app.accounts.store.perform(.removeUser(userID: bob.id))
            let started = Date()
            #expect(try stream.readStream(until: "0\r\n\r\n").hasSuffix("0\r\n\r\n"))
            #expect(try removed.readStream(until: "0\r\n\r\n").hasSuffix("0\r\n\r\n"))
            #expect(Date().timeIntervalSince(started) < 6, "the streams ended only after \(Date().timeIntervalSince(started)) s")
            #expect(try app.request("POST", "/notes", token: kept, body: "body=still%20here").status == 201)
            #expect(try other.readStream(until: "still here").contains("note.created"))
        }
    }

    @Test("revoking a token ends the event streams opened with it, and only those")
    func revocationEndsStreams() throws {
        try TestApp.with(configure: Self.required) { app in
            try app.addUser("ann")
            let doomed = try app.token("ann"), kept = try app.token("ann")
            func open(_ token: String) throws -> RawHTTP {
                let connection = try RawHTTP(port: app.port, timeout: 5)
                try connection.send("GET /notes/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n\r\n")
                _ = try connection.readStream(until: "retry: 3000\n\n")
                return connection
            }
            let stream = try open(doomed), other = try open(kept)
            let tokens = try app.request("GET", "/auth/tokens", token: kept).json()["tokens"] as? [[String: Any]]
            let id = try #require(tokens?.last?["id"] as? String)  // newest first: the last is the first issued
            #expect(try app.request("DELETE", "/auth/tokens/\(id)", token: kept).status == 200)
            // The response ends: its last chunk arrives (the connection may stay open).
            #expect(try stream.readStream(until: "0\r\n\r\n").hasSuffix("0\r\n\r\n"))
            #expect(try app.request("POST", "/notes", token: kept, body: "body=still%20here").status == 201)
            #expect(try other.readStream(until: "still here").contains("note.created"))
        }
    }
}

/// `Idempotency-Key` on `POST /notes` and `POST /uploads`.
@Suite("Idempotency keys")
struct IdempotencyTests {
    @Test("a retried POST /notes with the same key creates one note and gets the first answer; another body is 422; keys are per user")
    func notes() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            try app.addUser("ann")
            try app.addUser("bob")
            let ann = try app.token("ann"), bob = try app.token("bob")
            let key = [("Idempotency-Key", "retry-7f3a")]
            let first = try app.request("POST", "/notes", token: ann, headers: key, body: "body=once")
            #expect(first.status == 201)
            let again = try app.request("POST", "/notes", token: ann, headers: key, body: "body=once")
            #expect(again.status == 201)
            #expect(again.text == first.text)
            #expect(again.header("Location") == first.header("Location"))
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect((try app.request("GET", "/notes", token: ann).json()["notes"] as? [Any])?.count == 1)
            #expect(try app.request("POST", "/notes", token: ann, headers: key, body: "body=twice").status == 422)
            // Bob's same key is Bob's own.
            #expect(try app.request("POST", "/notes", token: bob, headers: key, body: "body=once").header("Idempotent-Replayed") == nil)
            #expect(try app.request("POST", "/notes", token: ann, headers: [("Idempotency-Key", "")], body: "body=x").status == 400)
            // Without a key, every POST creates.
            _ = try app.request("POST", "/notes", token: ann, body: "body=once")
            #expect((try app.request("GET", "/notes", token: ann).json()["notes"] as? [Any])?.count == 2)
        }
    }

    @Test("a retried upload with the same key stores the file once, even with another multipart boundary")
    func uploads() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            try app.addUser("ann")
            let ann = try app.token("ann")
            var answers: [WireResponse] = []
            for boundary in ["first-boundary", "second-boundary"] {
                var parts = MultipartBuilder(boundary: boundary)
                parts.file("file", filename: "a.txt", contentType: "text/plain", body: Array("same bytes".utf8))
                answers.append(
                    try app.request(
                        "POST", "/uploads", token: ann, headers: [("Content-Type", parts.contentType), ("Idempotency-Key", "up-1")],
                        body: String(decoding: parts.finished(), as: UTF8.self)))
            }
            #expect(answers.map(\.status) == [201, 201])
            #expect(answers[0].text == answers[1].text)
            #expect((try app.request("GET", "/uploads", token: ann).json()["uploads"] as? [Any])?.count == 1)
        }
    }
}

/// Per-token request limits and CORS.
@Suite("Request limits and CORS")
struct LimitsAndCORSTests {
    @Test(
        "a token's requests are limited per minute: RateLimit headers on each answer, 429 with Retry-After beyond; the user's other tokens share the user's limit, other users are unaffected"
    )
    func perToken() throws {
        try TestApp.with(configure: {
            $0.auth = .required; $0.requestsPerMinute = 5
        }) { app in
            try app.addUser("ann")
            try app.addUser("bob")
            let first = try app.token("ann"), second = try app.token("ann"), bobs = try app.token("bob")
            var remaining: [String] = []
            for _ in 0..<5 {
                let response = try app.request("GET", "/notes", token: first)
                #expect(response.status == 200)
                #expect(response.header("RateLimit-Policy") == "5;w=60")
                remaining.append(String(response.header("RateLimit")?.split(separator: ",")[1].split(separator: "=")[1] ?? ""))
            }
            #expect(remaining == ["4", "3", "2", "1", "0"])
            let refused = try app.request("POST", "/notes", token: first, body: "body=too%20many")
            #expect(refused.status == 429)
            #expect(Int(refused.header("Retry-After") ?? "") ?? 0 >= 1)
            #expect(refused.header("RateLimit")?.contains("remaining=0") == true)
            // More tokens give no more requests: ann's second is refused by her own limit.
            let theirs = try app.request("GET", "/notes", token: second)
            #expect(theirs.status == 429)
            #expect(theirs.text.contains("this user"))
            #expect(try app.request("GET", "/notes", token: bobs).status == 200)
            #expect((try app.request("GET", "/notes", token: bobs).json()["notes"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("per user and per token: --user-rate-limit above --rate-limit lets a second token use the rest, and the headers name the nearer limit")
    func perUser() throws {
        try TestApp.with(configure: {
            $0.auth = .required; $0.requestsPerMinute = 5; $0.requestsPerUserMinute = 8
        }) { app in
            try app.addUser("ann")
            let first = try app.token("ann"), second = try app.token("ann")
            for _ in 0..<5 { #expect(try app.request("GET", "/notes", token: first).status == 200) }
            let byToken = try app.request("GET", "/notes", token: first)
            #expect(byToken.status == 429)
            #expect(byToken.text.contains("with this token"))
            var policies: [String] = []
            for _ in 0..<3 {
                let response = try app.request("GET", "/notes", token: second)
                #expect(response.status == 200)
                policies.append(response.header("RateLimit-Policy") ?? "")
            }
            #expect(policies == ["8;w=60", "8;w=60", "8;w=60"])
            let byUser = try app.request("GET", "/notes", token: second)
            #expect(byUser.status == 429)
            #expect(byUser.header("RateLimit-Policy") == "8;w=60")
            #expect(byUser.text.contains("this user"))
        }
    }

    @Test(
        "failed bearer checks are throttled per address: unknown or malformed tokens past the burst are 429 before any look-up; known tokens and other addresses go on"
    )
    func failedTokensThrottled() throws {
        try TestApp.with(configure: {
            $0.auth = .required; $0.failedCredentialBurst = 5; $0.failedCredentialRefillSeconds = 600
        }) { app in
            try app.addUser("ann")
            let token = try app.token("ann")
            #expect(try app.request("GET", "/notes", token: token).status == 200)
            for index in 0..<5 {
                let guess = index % 2 == 0 ? "jot_0000000000000000000000000000000000000000000\(index)" : "nonsense\(index)"
                #expect(try app.request("GET", "/notes", token: guess).status == 401, "\(guess)")
            }
            let held = try app.request("GET", "/notes", token: "jot_guess")
            #expect(held.status == 429)
            #expect(Int(held.header("Retry-After") ?? "") ?? 0 >= 500)
            #expect(held.header("Content-Type") == "application/problem+json")
            // A token verified before is not a guess.
            #expect(try app.request("GET", "/notes", token: token).status == 200)
            // Another address has its own count.
            let other = try RawHTTP(port: app.port, sourceAddress: "127.0.0.2")
            #expect(try other.request("GET", "/notes", headers: [("Authorization", "Bearer jot_guess")]).status == 401)
        }
    }

    @Test(
        "a user holds at most --max-tokens-per-user tokens: one more is 409 (sign-in for a token too) and stores nothing; revoked ones do not count")
    func tokensCapped() throws {
        try TestApp.with(configure: {
            $0.auth = .required; $0.tokensPerUser = 3
        }) { app in
            try app.addUser("ann")
            let token = try app.token("ann")
            #expect(try app.request("POST", "/auth/tokens", token: token, body: "label=two").status == 201)
            let third = try app.request("POST", "/auth/tokens", token: token, body: "label=three")
            #expect(third.status == 201)
            let refused = try app.request("POST", "/auth/tokens", token: token, body: "label=four")
            #expect(refused.status == 409)
            #expect(refused.header("Content-Type") == "application/problem+json")
            let signIn = try app.request(
                "POST", "/auth/sessions", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: "name=ann&password=password%20of%20ann&kind=token")
            #expect(signIn.status == 409)
            #expect((try app.request("GET", "/auth/tokens", token: token).json()["tokens"] as? [Any])?.count == 3)
            // A session is no token: the web app can still sign in.
            #expect(
                try app.request(
                    "POST", "/auth/sessions", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: "name=ann&password=password%20of%20ann"
                ).status == 201)
            let id = try #require((try third.json()["info"] as? [String: Any])?["id"] as? String)
            #expect(try app.request("DELETE", "/auth/tokens/\(id)", token: token).status == 200)
            #expect(try app.request("POST", "/auth/tokens", token: token, body: "label=again").status == 201)
        }
    }

    @Test("CORS: nothing allowed by default; a configured origin gets its preflight answered and Access-Control-Allow-Origin")
    func cors() throws {
        let preflight = [
            ("Origin", "https://app.example.com"), ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization, content-type"),
        ]
        try TestApp.with(configure: { $0.auth = .required }) { app in
            let response = try app.request("OPTIONS", "/notes", headers: preflight)
            #expect(response.header("Access-Control-Allow-Origin") == nil)
            #expect(
                try app.request("GET", "/hello?name=a", headers: [("Origin", "https://app.example.com")]).header("Access-Control-Allow-Origin") == nil
            )
        }
        try TestApp.with(configure: {
            $0.auth = .required; $0.corsOrigins = ["https://app.example.com"]
        }) { app in
            let response = try app.request("OPTIONS", "/notes", headers: preflight)
            #expect(response.status == 204)
            #expect(response.header("Access-Control-Allow-Origin") == "https://app.example.com")
            #expect(response.header("Access-Control-Allow-Methods")?.contains("PUT") == true)
            #expect(response.header("Access-Control-Allow-Headers")?.contains("Authorization") == true)
            #expect(response.header("Access-Control-Allow-Credentials") == nil)
            try app.addUser("ann")
            // What a tus or draft upload client and a merging client send, and read back.
            let allowed = Set((response.header("Access-Control-Allow-Headers") ?? "").lowercased().split(separator: ", ").map(String.init))
            for field in [
                "base-version", "content-disposition", "tus-resumable", "upload-offset", "upload-length", "upload-metadata", "upload-checksum",
                "upload-complete", "upload-draft-interop-version", "repr-digest",
            ] {
                #expect(allowed.contains(field), "\(field) is not allowed cross-origin")
            }
            // And every header field the OpenAPI document declares a request may carry.
            let document = try app.request("GET", "/openapi.json", token: try app.token("ann")).json()
            let parameters = (document["paths"] as? [String: [String: Any]] ?? [:]).values.flatMap { operations in
                operations.values.compactMap { $0 as? [String: Any] }.flatMap { $0["parameters"] as? [[String: Any]] ?? [] }
            }
            let declared = Set(parameters.filter { $0["in"] as? String == "header" }.compactMap { ($0["name"] as? String)?.lowercased() })
            #expect(declared.count >= 5, "\(declared)")
            #expect(declared.subtracting(allowed).isEmpty, "declared but not allowed cross-origin: \(declared.subtracting(allowed))")
            let created = try app.request(
                "POST", "/uploads", token: try app.token("ann"),
                headers: [("Origin", "https://app.example.com"), ("Tus-Resumable", "1.0.0"), ("Upload-Length", "3")])
            #expect(created.status == 201)
            let exposed = Set((created.header("Access-Control-Expose-Headers") ?? "").lowercased().split(separator: ", ").map(String.init))
            for field in ["location", "tus-resumable", "upload-offset", "upload-expires", "upload-limit", "content-range"] {
                #expect(exposed.contains(field), "\(field) is not exposed cross-origin")
            }
            let refused = try app.request("GET", "/notes", headers: [("Origin", "https://app.example.com")])
            #expect(refused.status == 401)
            #expect(refused.header("Access-Control-Allow-Origin") == "https://app.example.com")
            let other = try app.request(
                "OPTIONS", "/notes", headers: [("Origin", "https://evil.example"), ("Access-Control-Request-Method", "POST")])
            #expect(other.header("Access-Control-Allow-Origin") == nil)
        }
    }
}
