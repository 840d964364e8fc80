import JotterHTTP
import JotterSystem

/// One file of the web app (`Web/app/`), embedded in the binary at build time: the target's
/// `resources: [.embedInCode("Web/app")]` in Package.swift makes SwiftPM generate
/// `PackageResources`, one `[UInt8]` per file, named after it (`app.js` → `app_js`).
struct WebAsset: Sendable {
    let contentType: String
    /// A strong entity tag derived from the content (`"<first 16 hex digits of its SHA-256>"`).
    let etag: String
    let body: [UInt8]
    /// Headers of this file's own (the service worker's scope).
    var headers: [(String, String)] = []

    /// The Content-Type of each extension the app's files have.
    static let contentTypes = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "webmanifest": "application/manifest+json",
    ]

    init(contentType: String, etag: String, body: [UInt8]) {
        self.contentType = contentType
        self.etag = etag
        self.body = body
    }

    init(contentType: String, body: [UInt8]) {
        self.init(contentType: contentType, etag: "\"\(SHA256.hex(body).prefix(16))\"", body: body)
    }

    /// `name`'s bytes, typed by its extension (a name with none known is a programming error,
    /// found by the web tests, which serve every file of Web/app).
    init(name: String, body: [UInt8]) {
        let type = name.split(separator: ".").last.flatMap { Self.contentTypes[String($0)] }
        precondition(type != nil, "Web/app/\(name): no Content-Type known for its extension; add it to WebAsset.contentTypes")
        self.init(contentType: type!, body: body)
    }

    /// The web app's files by name, as served under `/assets/` (and `index.html` at `/`). A file
    /// added to Web/app is embedded by itself; it is served once it is listed here.
    static let all: [String: WebAsset] = Dictionary(
        uniqueKeysWithValues: [
            ("index.html", PackageResources.index_html), ("style.css", PackageResources.style_css),
            ("manifest.webmanifest", PackageResources.manifest_webmanifest), ("sw.js", PackageResources.sw_js),
            ("icon.svg", PackageResources.icon_svg), ("icon-192.png", PackageResources.icon_192_png),
            ("icon-512.png", PackageResources.icon_512_png), ("icon-maskable-512.png", PackageResources.icon_maskable_512_png),
            ("apple-touch-icon.png", PackageResources.apple_touch_icon_png),
            ("app.js", PackageResources.app_js), ("account.js", PackageResources.account_js),
            ("api.js", PackageResources.api_js), ("attachments.js", PackageResources.attachments_js),
            ("dialogs.js", PackageResources.dialogs_js), ("dom.js", PackageResources.dom_js),
            ("editor.js", PackageResources.editor_js), ("files.js", PackageResources.files_js),
            ("format.js", PackageResources.format_js), ("history.js", PackageResources.history_js),
            ("live.js", PackageResources.live_js), ("merge.js", PackageResources.merge_js),
            ("paged.js", PackageResources.paged_js), ("trash.js", PackageResources.trash_js),
            ("store.js", PackageResources.store_js), ("sync.js", PackageResources.sync_js),
        ].map { ($0, WebAsset(name: $0, body: $1)) })
}

/// `GET /` (the notes web app) and `GET /assets/{name}` (its scripts, styles, icons, manifest and
/// service worker), served from memory with `ETag`/`If-None-Match` revalidation and a strict
/// Content-Security-Policy: the page runs only its own scripts, styles and worker, talks only to
/// this server and can't be framed.
struct WebController {
    static let contentSecurityPolicy = [
        "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' blob: data:",
        "connect-src 'self'", "worker-src 'self'", "manifest-src 'self'", "object-src 'none'", "frame-ancestors 'none'",
        "base-uri 'none'", "form-action 'self'",
    ].joined(separator: "; ")

    /// The service worker's file. Served under /assets/ but in charge of the whole origin
    /// (`Service-Worker-Allowed: /`), so that it can serve the page at `/`.
    static let serviceWorker = "sw.js"
    /// The line of the service worker the server fills in: what it caches, and the version of it.
    static let shellPlaceholder = #"const SHELL = {"version":"","files":[]};"#

    /// The files by name, the page as this server's mode shows it.
    let files: [String: WebAsset]
    /// The page for when nobody can sign in (`<body … data-sign-in="none">`: no "Sign in" button).
    let pageWithoutSignIn: WebAsset?
    /// Whether anyone can sign in now; nil: always.
    let canSignIn: (@Sendable () throws(HTTPError) -> Bool)?
    /// Where `/` runs: where `canSignIn` reads the store.
    let pagePlace: WorkPlace?

    /// `auth`: the page says which mode the server runs in (`<body data-auth="off">`), so the
    /// app knows without asking whether a visitor without a session must sign in first (and
    /// under `--auth off` asks no `/auth/me` that can only be a 401). `canSignIn`, asked for
    /// each page: false while there is no user, and the page then says so
    /// (`data-sign-in="none"`): it offers no "Sign in" under `--auth off`, and under `--auth
    /// required` its sign-in page says how the first account is made (nothing else is told).
    init(
        assets: [String: WebAsset] = WebAsset.all, auth: AuthMode = .required,
        canSignIn: (@Sendable () throws(HTTPError) -> Bool)? = nil, runs pagePlace: WorkPlace? = nil
    ) {
        var assets = assets
        if let worker = assets[Self.serviceWorker] { assets[Self.serviceWorker] = Self.filled(worker, shell: assets) }
        var withoutSignIn: WebAsset?
        if let page = assets["index.html"] {
            func variant(_ attributes: String, _ digits: String) -> WebAsset {
                let text = String(decoding: page.body, as: UTF8.self)
                    .replacing("<body data-view=\"list\">", with: "<body data-view=\"list\" \(attributes)>")
                return WebAsset(
                    contentType: page.contentType, etag: String(page.etag.dropLast()) + digits + "\"",  // still hex, as documented
                    body: Array(text.utf8))
            }
            assets["index.html"] = variant("data-auth=\"\(auth.rawValue)\"", auth == .off ? "0" : "1")
            withoutSignIn = variant("data-auth=\"\(auth.rawValue)\" data-sign-in=\"none\"", auth == .off ? "00" : "10")
        }
        files = assets
        pageWithoutSignIn = withoutSignIn
        self.canSignIn = canSignIn
        self.pagePlace = pagePlace
    }

    /// The service worker with its shell: the page (`/`) and every other file, and a version made
    /// from their ETags, so that any changed file makes a changed worker (which browsers install,
    /// caching the new shell and dropping the old).
    static func filled(_ worker: WebAsset, shell assets: [String: WebAsset]) -> WebAsset {
        let shell = assets.filter { $0.key != serviceWorker }.sorted { $0.key < $1.key }
        let version = SHA256.hex(Array(shell.map { "\($0.key) \($0.value.etag)\n" }.joined().utf8)).prefix(16)
        let paths = ["/"] + shell.map(\.key).filter { $0 != "index.html" }.map { "/assets/\($0)" }
        let line = #"const SHELL = {"version":"\#(version)","files":["\#(paths.joined(separator: #"",""#))"]};"#
        let text = String(decoding: worker.body, as: UTF8.self)
        precondition(text.contains(shellPlaceholder), "Web/app/\(serviceWorker) has no line \(shellPlaceholder)")
        var filled = WebAsset(contentType: worker.contentType, body: Array(text.replacing(shellPlaceholder, with: line).utf8))
        filled.headers = [("Service-Worker-Allowed", "/")]
        return filled
    }

    func register(in routes: inout RouterBuilder) {
        routes.get("/", runs: canSignIn == nil ? nil : pagePlace, operation: WebOperations.page) { request, _ in
            if let canSignIn, let page = pageWithoutSignIn, try !canSignIn() { return try serve(page, request) }
            return try serve("index.html", request)
        }
        routes.get("/assets/:name", operation: WebOperations.asset(names: files.keys.filter { $0 != "index.html" }.sorted())) { request, context in
            try serve(context.parameters["name"] ?? "", request)
        }
    }

    func serve(_ name: String, _ request: Request) throws(HTTPError) -> Response {
        // The page itself is only ever `/`; its files only under /assets/.
        guard let file = files[name], name != "index.html" || request.path == "/" else {
            throw HTTPError(.notFound, detail: "no resource at \(request.path)")
        }
        return try serve(file, request)
    }

    func serve(_ file: WebAsset, _ request: Request) throws(HTTPError) -> Response {
        var headers = HTTPHeaders([
            ("ETag", file.etag),
            // Revalidate every time: the names carry no version, and a 304 costs one round trip.
            ("Cache-Control", "no-cache"),
            ("Content-Security-Policy", Self.contentSecurityPolicy),
            ("Referrer-Policy", "same-origin"),
        ])
        for (name, value) in file.headers { headers.add(name, value) }
        switch ReadCondition(request.headers, etag: file.etag) {
        case .proceed: break
        case .notModified: return Response(status: .notModified, headers: headers)
        case .failed(let detail): throw HTTPError(.preconditionFailed, detail: detail)
        }
        headers.add("Content-Type", file.contentType)
        return Response(status: .ok, headers: headers, body: file.body)
    }
}
