import Foundation
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// `GET /` and `/assets/…`: the embedded web app, its caching headers and its security policy.
@Suite("Web app")
struct WebTests {
    static let app = Result { try TestApp() }
    /// The package root, found from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let appFolder = root.appendingPathComponent("Sources/JotterServer/Web/app")

    func get(_ target: String, headers: [(String, String)] = []) throws -> WireResponse {
        try Self.app.get().request("GET", target, headers: headers)
    }

    @Test(
        "every file of Web/app is served byte for byte with its Content-Type",
        arguments: [
            ("index.html", "text/html; charset=utf-8"), ("app.js", "text/javascript; charset=utf-8"),
            ("style.css", "text/css; charset=utf-8"), ("icon.svg", "image/svg+xml"), ("icon-192.png", "image/png"),
            ("manifest.webmanifest", "application/manifest+json"),
        ])
    func served(_ name: String, _ contentType: String) throws {
        let response = try get(name == "index.html" ? "/" : "/assets/\(name)")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == contentType)
        var file = String(decoding: try Data(contentsOf: Self.appFolder.appendingPathComponent(name)), as: UTF8.self)
        if name.hasSuffix(".png") { file = "" }  // bytes: compared below as they are
        // The page says the server's auth mode (loopback: off) and that nobody can sign in (no user yet), and nothing else changes.
        if name == "index.html" {
            file = file.replacing("<body data-view=\"list\">", with: "<body data-view=\"list\" data-auth=\"off\" data-sign-in=\"none\">")
        }
        #expect(
            response.body == (name.hasSuffix(".png") ? Array(try Data(contentsOf: Self.appFolder.appendingPathComponent(name))) : Array(file.utf8)))
        #expect(response.header("Cache-Control") == "no-cache")
        #expect(response.header("X-Content-Type-Options") == "nosniff")
    }

    @Test("the page names the server's auth mode (the app asks nothing before it knows), with an ETag of its own per mode")
    func authMode() throws {
        let off = try get("/")
        #expect(off.text.contains("<body data-view=\"list\" data-auth=\"off\" data-sign-in=\"none\">"))
        try TestApp.with(configure: { $0.auth = .required }) { app in
            _ = try app.addUser("ann", password: "ann's password")
            let required = try app.request("GET", "/")
            #expect(required.text.contains("<body data-view=\"list\" data-auth=\"required\">"))
            #expect(required.header("ETag") != off.header("ETag"))
            // Still the documented form (hex in quotes), under either mode.
            for page in [off, required] { #expect(page.header("ETag")?.wholeMatch(of: /"[0-9a-f]+"/) != nil, "\(page.header("ETag") ?? "")") }
        }
    }

    @Test(
        "either mode: the page says nobody can sign in while there is no user, and stops saying so once there is one",
        arguments: ["off", "required"])
    func signInOnlyWithUsers(_ mode: String) throws {
        try TestApp.with(configure: {
            $0.credentialRefreshInterval = 0
            if mode == "required" { $0.auth = .required }
        }) { app in
            let before = try app.request("GET", "/")
            // (Under --auth required, all an anonymous visitor learns: no account exists yet.)
            #expect(before.text.contains("<body data-view=\"list\" data-auth=\"\(mode)\" data-sign-in=\"none\">"))
            _ = try app.addUser("ann", password: "ann's password")
            let after = try app.request("GET", "/")
            #expect(after.text.contains("<body data-view=\"list\" data-auth=\"\(mode)\">"), "\(after.text.prefix(800))")
            #expect(after.header("ETag") != before.header("ETag"))
            #expect(after.header("ETag")?.wholeMatch(of: /"[0-9a-f]+"/) != nil && before.header("ETag")?.wholeMatch(of: /"[0-9a-f]+"/) != nil)
        }
    }

    @Test("every file of Web/app is embedded and served, byte for byte (the page at /, the others under /assets/)")
    func everyFileServed() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.appFolder.path).filter { !$0.hasPrefix(".") }
        #expect(files.count >= 10)
        for name in files where name != "index.html" && name != "sw.js" {  // the worker is filled in: serviceWorker()
            let response = try get("/assets/\(name)")
            #expect(response.status == 200, "\(name)")
            #expect(response.body == Array(try Data(contentsOf: Self.appFolder.appendingPathComponent(name))), "\(name)")
        }
    }

    @Test("installable: the manifest, the icons and the tags an iPhone reads")
    func installable() throws {
        let page = try get("/").text
        for tag in [
            #"<link rel="manifest" href="/assets/manifest.webmanifest">"#, #"<link rel="apple-touch-icon" href="/assets/apple-touch-icon.png">"#,
            #"<meta name="apple-mobile-web-app-capable" content="yes">"#, #"<meta name="mobile-web-app-capable" content="yes">"#,
            #"<meta name="apple-mobile-web-app-status-bar-style""#, #"<meta name="theme-color""#,
        ] {
            #expect(page.contains(tag), "\(tag)")
        }
        let manifest = try get("/assets/manifest.webmanifest")
        #expect(manifest.header("Content-Type") == "application/manifest+json")
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(manifest.body)) as? [String: Any])
        #expect(fields["display"] as? String == "standalone" && fields["start_url"] as? String == "/" && fields["scope"] as? String == "/")
        let icons = try #require(fields["icons"] as? [[String: String]])
        for icon in icons {
            let response = try get(try #require(icon["src"]))
            #expect(response.status == 200 && response.header("Content-Type") == icon["type"], "\(icon)")
        }
        #expect(try get("/assets/apple-touch-icon.png").header("Content-Type") == "image/png")
    }

    @Test("the service worker: scope /, its shell filled in by the server, a version that follows the files")
    func serviceWorker() throws {
        let worker = try get("/assets/sw.js")
        #expect(worker.status == 200)
        #expect(worker.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(worker.header("Service-Worker-Allowed") == "/")
        #expect(try get("/assets/app.js").header("Service-Worker-Allowed") == nil)
        let line = try #require(worker.text.split(separator: "\n").first { $0.hasPrefix("const SHELL = ") })
        let shell = try #require(
            try JSONSerialization.jsonObject(with: Data(line.dropFirst("const SHELL = ".count).dropLast().utf8)) as? [String: Any])
        let version = try #require(shell["version"] as? String)
        #expect(version.wholeMatch(of: /[0-9a-f]{16}/) != nil, "\(version)")
        let files = try #require(shell["files"] as? [String])
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.appFolder.path).filter {
            !$0.hasPrefix(".") && $0 != "index.html" && $0 != "sw.js"
        }
        #expect(Set(files) == Set(["/"] + names.map { "/assets/\($0)" }))
        for path in files { #expect(try get(path).status == 200, "\(path)") }
        // The version is the files', the same whatever mode the page says.
        try TestApp.with(configure: { $0.auth = .required }) { app in
            let again = try app.request("GET", "/assets/sw.js")
            #expect(again.text.contains(#""version":"\#(version)""#))
        }
    }

    @Test("a strict Content-Security-Policy on the page")
    func contentSecurityPolicy() throws {
        let policy = try #require(try get("/").header("Content-Security-Policy"))
        let directives = Set(policy.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
        for directive in [
            "default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "worker-src 'self'", "manifest-src 'self'",
            "img-src 'self' blob: data:", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
        ] {
            #expect(directives.contains(directive), "\(directive)")
        }
        #expect(!policy.contains("unsafe"))
    }

    @Test("the app never puts markup it was given into the page, and has no inline script or style")
    func textOnly() throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.appFolder.path) where !name.hasSuffix(".png") {
            let text = try String(contentsOf: Self.appFolder.appendingPathComponent(name), encoding: .utf8)
            for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
                #expect(!text.contains(sink), "\(name) uses \(sink)")
            }
            if name == "index.html" {
                #expect(!text.contains("style=") && !text.contains("<style"), "inline style")
                #expect(text.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil, "inline event handler")
                #expect(text.components(separatedBy: "<script").count == 2 && text.contains(#"<script type="module" src="/assets/app.js"></script>"#))
            }
        }
    }

    @Test("ETag and If-None-Match: 304 without a body; a changed tag gets the file")
    func revalidation() throws {
        let first = try get("/assets/app.js")
        let etag = try #require(first.header("ETag"))
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && !etag.hasPrefix("W/"))
        let again = try get("/assets/app.js", headers: [("If-None-Match", etag)])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.header("ETag") == etag)
        #expect(try get("/assets/app.js", headers: [("If-None-Match", "W/\(etag)")]).status == 304)
        #expect(try get("/assets/app.js", headers: [("If-None-Match", #""other""#)]).status == 200)
        #expect(try get("/", headers: [("If-None-Match", etag)]).status == 200)  // each file has its own tag
    }

    @Test("unknown assets are 404 problems; HEAD works; the page is only at /")
    func edges() throws {
        let missing = try get("/assets/nope.js")
        #expect(missing.status == 404)
        #expect(missing.header("Content-Type") == "application/problem+json")
        #expect(try get("/assets/index.html").status == 404)
        #expect(try get("/assets/").status == 404)
        let head = try Self.app.get().request("HEAD", "/")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(try Self.app.get().request("POST", "/").status == 405)
    }
}
