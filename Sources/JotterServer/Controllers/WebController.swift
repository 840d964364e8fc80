import JotterHTTP

/// One file of the web app, embedded in the binary by `scripts/embed-web`.
struct WebAsset: Sendable {
    let contentType: String
    /// A strong entity tag derived from the content (`"<sha-256 prefix>"`).
    let etag: String
    let text: String
}

/// `GET /` (the notes web app) and `GET /assets/{name}` (its scripts and styles), served from
/// memory with `ETag`/`If-None-Match` revalidation and a strict Content-Security-Policy: the page
/// runs only its own scripts and styles, talks only to this server and can't be framed.
struct WebController {
    static let contentSecurityPolicy = [
        "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' blob: data:",
        "connect-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
    ].joined(separator: "; ")

    /// Each asset's bytes, converted once.
    let files: [String: (asset: WebAsset, body: [UInt8])]
    /// The page for when nobody can sign in (`<body … data-sign-in="none">`: no "Sign in" button).
    let pageWithoutSignIn: (asset: WebAsset, body: [UInt8])?
    /// Whether anyone can sign in now; nil: always.
    let canSignIn: (@Sendable () throws(HTTPError) -> Bool)?
    /// Where `/` runs: where `canSignIn` reads the store.
    let pagePlace: WorkPlace?

    /// `auth`: the page says which mode the server runs in (`<body data-auth="off">`), so the
    /// app knows without asking whether a visitor without a session must sign in first (and
    /// under `--auth off` asks no `/auth/me` that can only be a 401). `canSignIn`, asked for
    /// each page under `--auth off`: false while there is no user, and the page then says so
    /// (`data-sign-in="none"`) and offers no "Sign in".
    init(assets: [String: WebAsset] = WebAsset.all, auth: AuthMode = .required,
         canSignIn: (@Sendable () throws(HTTPError) -> Bool)? = nil, runs pagePlace: WorkPlace? = nil) {
        var assets = assets
        var withoutSignIn: WebAsset?
        if let page = assets["index.html"] {
            func variant(_ attributes: String, _ digits: String) -> WebAsset {
                let text = page.text.replacing("<body data-view=\"list\">", with: "<body data-view=\"list\" \(attributes)>")
                return WebAsset(contentType: page.contentType, etag: String(page.etag.dropLast()) + digits + "\"",  // still hex, as documented
                                text: text)
            }
            assets["index.html"] = variant("data-auth=\"\(auth.rawValue)\"", auth == .off ? "0" : "1")
            if auth == .off { withoutSignIn = variant("data-auth=\"off\" data-sign-in=\"none\"", "00") }
        }
        files = assets.mapValues { ($0, Array($0.text.utf8)) }
        pageWithoutSignIn = withoutSignIn.map { ($0, Array($0.text.utf8)) }
        self.canSignIn = auth == .off ? canSignIn : nil
        self.pagePlace = pagePlace
    }

    func register(in routes: inout RouterBuilder) {
        routes.get("/", runs: canSignIn == nil ? nil : pagePlace, operation: WebOperations.page) { request, _ in
            if let canSignIn, let page = pageWithoutSignIn, try !canSignIn() { return try serve(page, request) }
            return try serve("index.html", request)
        }
        routes.get("/assets/:name", operation: WebOperations.asset(names: files.keys.filter { $0 != "index.html" }.sorted())) { request, context in try serve(context.parameters["name"] ?? "", request) }
    }

    func serve(_ name: String, _ request: Request) throws(HTTPError) -> Response {
        // The page itself is only ever `/`; its files only under /assets/.
        guard let file = files[name], name != "index.html" || request.path == "/" else {
            throw HTTPError(.notFound, detail: "no resource at \(request.path)")
        }
        return serve(file, request)
    }

    func serve(_ file: (asset: WebAsset, body: [UInt8]), _ request: Request) -> Response {
        var headers = HTTPHeaders([
            ("ETag", file.asset.etag),
            // Revalidate every time: the names carry no version, and a 304 costs one round trip.
            ("Cache-Control", "no-cache"),
            ("Content-Security-Policy", Self.contentSecurityPolicy),
            ("Referrer-Policy", "same-origin"),
        ])
        if let condition = request.headers["If-None-Match"].map(EntityTagCondition.init), condition.matches(file.asset.etag, weak: true) {
            return Response(status: .notModified, headers: headers)
        }
        headers.add("Content-Type", file.asset.contentType)
        return Response(status: .ok, headers: headers, body: file.body)
    }
}
