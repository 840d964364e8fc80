import JotterHTTP
import JotterStore

/// Authenticates in the head phase — before any body byte is read or stored — from
/// `Authorization: Bearer <token>` or the web app's session cookie, and puts the `Principal`
/// into the context. Refuses with `401` (and `WWW-Authenticate`) when credentials are missing
/// under `--auth required`, or malformed, unknown, revoked or expired under either mode.
///
/// A write authenticated by the cookie must also pass the CSRF check: the browser says it
/// comes from this site (`Sec-Fetch-Site: same-origin`, or an `Origin` naming this host) and
/// `X-CSRF-Token` carries the session's token (`403` otherwise).
public struct AuthenticationMiddleware: Middleware {
    public static let cookieName = "jotter_session"
    public static let csrfHeader = "X-CSRF-Token"
    let accounts: Accounts
    /// Requests a minute per credential and per user; nil for no limit.
    let limiter: RequestRateLimit?

    /// `requestsPerMinute` per token or session (0: no limit), `requestsPerUserMinute` per
    /// user over all of theirs (nil: as many as one token's); `counters`: where the buckets are
    /// (shared by every instance with PostgreSQL).
    public init(
        accounts: Accounts, requestsPerMinute: Int = 0, requestsPerUserMinute: Int? = nil,
        counters: any LimitCounters = MemoryLimitCounters()
    ) {
        self.accounts = accounts
        limiter =
            requestsPerMinute > 0
            ? RequestRateLimit(
                perMinute: requestsPerMinute, perUserMinute: requestsPerUserMinute,
                counters: counters) : nil
    }

    public func head(_ head: RequestHead, context: inout RequestContext) throws {
        var principal: Principal
        if let authorization = head.headers["Authorization"] {
            let value = authorization.trimmingASCIISpaces()
            guard value.utf8.count > 7, HTTPHeaders.equal(String(value.prefix(7)), "Bearer ") else {
                throw Accounts.unauthorized("use Authorization: Bearer <token>", invalid: true)
            }
            principal = try accounts.verify(value.dropFirst(7).drop { $0 == " " }, viaCookie: false, from: head.remoteAddress)
        } else if let cookie = head.headers["Cookie"], let session = Self.cookie(Self.cookieName, in: cookie) {
            principal = try accounts.verify(session, viaCookie: true, from: head.remoteAddress)
            if ![HTTPMethod.get, .head, .options].contains(head.method) { try Self.checkCSRF(head, session: session) }
        } else {
            context[Authenticated.self] = try accounts.anonymousPrincipal()
            return
        }
        if let limiter, let id = principal.credential?.id, let user = principal.user?.id {
            principal.rateLimit = try limiter.take(id, user: user)
        }
        context[Authenticated.self] = principal
    }

    /// The rate-limit headers on the answer of a request with credentials.
    public func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        guard let limiter, let left = context.principal?.rateLimit else { return try next(request, context) }
        return try next(request, context).map { response in
            var response = response
            limiter.stamp(&response, left)
            return response
        }
    }

    /// The value of cookie `name` in a `Cookie` header.
    static func cookie(_ name: String, in header: String) -> Substring? {
        for pair in header.split(separator: ";") {
            let pair = pair.drop { $0 == " " }
            guard pair.hasPrefix(name), pair.dropFirst(name.count).first == "=" else { continue }
            return pair.dropFirst(name.count + 1)
        }
        return nil
    }

    /// The CSRF token of a session: derived from its secret, which the page cannot read (the
    /// cookie is HttpOnly), so only a page that was given it by this server can send it.
    public static func csrfToken(forSession secret: some StringProtocol) -> String {
        Secret.digest("csrf:" + secret).prefix(16).map { byte in
            let hex = Array("0123456789abcdef".utf8)
            return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
        }.joined()
    }

    static func checkCSRF(_ head: RequestHead, session: Substring) throws(HTTPError) {
        if let site = head.headers["Sec-Fetch-Site"] {
            guard site == "same-origin" || site == "none" else {
                throw HTTPError(.forbidden, detail: "a write from another site is refused")
            }
        } else if let origin = head.headers["Origin"] {
            let host = head.authority ?? ""
            guard origin == "http://\(host)" || origin == "https://\(host)" else {
                throw HTTPError(.forbidden, detail: "a write from another origin is refused")
            }
        }
        guard let token = head.headers[csrfHeader], token == csrfToken(forSession: session) else {
            throw HTTPError(.forbidden, detail: "a write with the session cookie needs the \(csrfHeader) header of the session")
        }
    }
}

/// Lets only requests of a signed-in user through (`401` otherwise, also under `--auth off`).
public struct RequireUser: Middleware {
    public init() {}
    public func head(_ head: RequestHead, context: inout RequestContext) throws {
        guard context.principal?.user != nil else {
            throw Accounts.unauthorized("sign in first: this needs a token or a session", invalid: false)
        }
    }
}

/// Lets only administrators through: `403` for other users. Under `--auth off` a request
/// without credentials passes too (the local, trusted use it has always had).
public struct RequireAdmin: Middleware {
    let mode: AuthMode
    public init(mode: AuthMode) { self.mode = mode }
    public func head(_ head: RequestHead, context: inout RequestContext) throws {
        if mode == .off, let principal = context.principal, principal.user == nil { return }
        guard let user = context.principal?.user else {
            throw Accounts.unauthorized("sign in first: this needs an administrator's token", invalid: false)
        }
        guard user.isAdmin else { throw HTTPError(.forbidden, detail: "only an administrator may do this") }
    }
}
