import JotterAPI
import JotterHTTP
import JotterStore
import JotterSystem

/// `/auth`: sign in (`POST /auth/sessions`: a session cookie for the web app, or a token),
/// sign out (`DELETE /auth/sessions/current`), who am I (`GET /auth/me`) and the user's API
/// tokens (`GET/POST /auth/tokens`, `DELETE /auth/tokens/:id`).
package struct AuthController {
    let accounts: Accounts
    /// Mark the cookie `Secure` (the server speaks TLS); a request a trusted proxy says came
    /// over HTTPS gets it too.
    let secureCookie: Bool
    /// Sign-in attempts per client address, per (name, address) and per name.
    var limiter = SignInLimiter()

    /// `POST /auth/sessions` needs no credentials; it goes outside the authenticated group, and
    /// runs where the store's reads do (`place`: its limits and the user are read there).
    func registerSignIn(in routes: inout RouterBuilder, runs place: WorkPlace) {
        routes.post("/auth/sessions", body: .buffered(limit: 16 << 10), runs: place, operation: AuthOperations.signIn, handler: signIn)
    }

    /// The routes of a signed-in user: inside the authenticated group.
    func register(in routes: inout RouterBuilder) {
        routes.group { signedIn in
            signedIn.add(middleware: RequireUser())
            signedIn.get("/auth/me", operation: AuthOperations.me, handler: me)
            signedIn.delete("/auth/sessions/current", body: .none, operation: AuthOperations.signOut, handler: signOut)
            signedIn.get("/auth/tokens", operation: AuthOperations.tokens, handler: tokens)
            signedIn.post("/auth/tokens", body: .buffered(limit: 16 << 10), operation: AuthOperations.createToken, handler: createToken)
            signedIn.delete("/auth/tokens/:id", body: .none, operation: AuthOperations.revokeToken, handler: revokeToken)
        }
    }

    @Sendable func signIn(_ request: Request, _ context: RequestContext) throws -> Reply {
        let body = try request.body()
        let name = try body.string("name") ?? "", password = try body.string("password") ?? ""
        guard !name.isEmpty, !password.isEmpty else {
            throw HTTPError.validation([.init(field: name.isEmpty ? "name" : "password", message: "is required")])
        }
        let kind = try body.string("kind") ?? "session"
        guard kind == "session" || kind == "token" else {
            throw HTTPError.validation([.init(field: "kind", message: "must be session or token")])
        }
        let expiresIn = try Self.expiry(body)
        let wantsToken = kind == "token"
        let label = try body.string("label") ?? (wantsToken ? "sign-in" : "web")
        // Only a well-formed attempt takes from the sign-in limiter (a malformed one is 400 or 422).
        let address = request.remoteAddress, limiter = self.limiter
        try limiter.attempt(address: address, name: name)
        let now = WallClock.seconds()
        let expiresAt: Int64? = wantsToken ? expiresIn.map { now + $0 } : now + (expiresIn ?? accounts.sessionLifetime)
        let accounts = self.accounts, secure = secureCookie || request.forwardedProto == "https"
        return Reply.later { done in
            // Argon2id takes tens of milliseconds and 64 MiB: never on an engine thread, and no
            // more at once than there are cores (a full queue is 503 before anything is hashed).
            do {
                try accounts.hashing.run {
                    let user: UserRecord?
                    do { user = try accounts.check(name: name, password: password) } catch {
                        done { throw error }
                        return
                    }
                    guard let user else {
                        limiter.failed(address: address, name: name)
                        done {
                            throw HTTPError(
                                .unauthorized, detail: "the name or the password is wrong",
                                headers: HTTPHeaders([("WWW-Authenticate", "Bearer realm=\"jotter\"")]))
                        }
                        return
                    }
                    limiter.succeeded(address: address, name: name)
                    if wantsToken {
                        do { try accounts.checkRoomForToken(user) } catch {
                            done { throw error }
                            return
                        }
                    }
                    accounts.issue(wantsToken ? .token : .session, for: user, label: label, expiresAt: expiresAt) { result in
                        done {
                            let (secret, record) = try result.get()
                            if wantsToken {
                                return try JSON(IssuedToken(token: secret, info: TokenInfo(record), user: UserInfo(user)), status: .created)
                                    .response(for: request)
                            }
                            let info = SessionInfo(
                                user: UserInfo(user), csrfToken: AuthenticationMiddleware.csrfToken(forSession: secret),
                                expiresAt: record.expiresAt.map(Timestamp.date(seconds:)))
                            let cookie = Self.cookie(secret, maxAge: (record.expiresAt ?? now) - now, secure: secure)
                            return try JSON(info, status: .created, headers: HTTPHeaders([("Set-Cookie", cookie), ("Cache-Control", "no-store")]))
                                .response(for: request)
                        }
                    }
                }
            } catch {
                // Not checked: the attempt is given back to the address.
                limiter.refund(address: address, name: name)
                done { throw error }
            }
        }
    }

    @Sendable func me(_ request: Request, _ context: RequestContext) throws -> Response {
        guard let principal = context.principal, let user = principal.user else { throw HTTPError(.unauthorized) }
        var csrf: String?
        if principal.viaCookie, let cookie = request.headers["Cookie"],
            let session = AuthenticationMiddleware.cookie(AuthenticationMiddleware.cookieName, in: cookie)
        {
            csrf = AuthenticationMiddleware.csrfToken(forSession: session)
        }
        return try JSON(
            SessionInfo(user: UserInfo(user), csrfToken: csrf, expiresAt: principal.credential?.expiresAt.map(Timestamp.date(seconds:))),
            headers: HTTPHeaders([("Cache-Control", "no-store")])
        ).response(for: request)
    }

    @Sendable func signOut(_ request: Request, _ context: RequestContext) throws -> Reply {
        guard let principal = context.principal, let credential = principal.credential else { throw HTTPError(.unauthorized) }
        let secure = secureCookie || request.forwardedProto == "https"
        return Reply.later { done in
            accounts.revoke(id: credential.id, userID: credential.userID) { result in
                done {
                    _ = try result.get()
                    var headers = HTTPHeaders()
                    if principal.viaCookie { headers.add("Set-Cookie", Self.cookie("", maxAge: 0, secure: secure)) }
                    return Response(status: .noContent, headers: headers)
                }
            }
        }
    }

    @Sendable func tokens(_ request: Request, _ context: RequestContext) throws -> JSON<TokenList> {
        guard let user = context.principal?.user else { throw HTTPError(.unauthorized) }
        return JSON(TokenList(tokens: try accounts.store.credentials(userID: user.id, kind: .token).map(TokenInfo.init)))
    }

    @Sendable func createToken(_ request: Request, _ context: RequestContext) throws -> Reply {
        guard let user = context.principal?.user else { throw HTTPError(.unauthorized) }
        let body = try request.body()
        let label = try body.string("label") ?? ""
        let expiresAt = try Self.expiry(body).map { WallClock.seconds() + $0 }
        try accounts.checkRoomForToken(user)
        return Reply.later { done in
            accounts.issue(.token, for: user, label: label, expiresAt: expiresAt) { result in
                done {
                    let (secret, record) = try result.get()
                    return try JSON(IssuedToken(token: secret, info: TokenInfo(record), user: UserInfo(user)), status: .created)
                        .response(for: request)
                }
            }
        }
    }

    @Sendable func revokeToken(_ request: Request, _ context: RequestContext) throws -> Reply {
        guard let user = context.principal?.user else { throw HTTPError(.unauthorized) }
        let text = context.parameters["id"] ?? ""
        guard NoteInput.isDigits(text), let id = Int64(text) else { throw HTTPError(.notFound, detail: "token \(text) does not exist") }
        return Reply.later { done in
            accounts.revoke(id: id, userID: user.id) { result in
                done {
                    guard let record = try result.get(), record.kind == .token else {
                        throw HTTPError(.notFound, detail: "token \(id) does not exist")
                    }
                    return try JSON(TokenInfo(record)).response(for: request)
                }
            }
        }
    }

    /// The lifetimes a token or session may be given, in seconds: a minute to ten years.
    package static let lifetimes: ClosedRange<Int64> = 60...(10 * 365 * 86400)

    /// `expires_in` (seconds, in `lifetimes`), nil when absent.
    static func expiry(_ body: RequestBody) throws(HTTPError) -> Int64? {
        guard let text = try body.string("expires_in"), !text.isEmpty else { return nil }
        guard NoteInput.isDigits(text), let seconds = Int64(text), lifetimes.contains(seconds) else {
            throw HTTPError.validation([
                .init(field: "expires_in", message: "must be a number of seconds from \(lifetimes.lowerBound) to \(lifetimes.upperBound)")
            ])
        }
        return seconds
    }

    /// The session cookie: HttpOnly, SameSite=Lax, Secure under TLS, with an expiry.
    static func cookie(_ secret: String, maxAge: Int64, secure: Bool) -> String {
        "\(AuthenticationMiddleware.cookieName)=\(secret); Path=/; Max-Age=\(max(0, maxAge)); HttpOnly; SameSite=Lax" + (secure ? "; Secure" : "")
    }
}

extension UserInfo {
    /// A stored user as the API shows it.
    public init(_ record: UserRecord) {
        self.init(id: String(record.id), name: record.name, admin: record.isAdmin, createdAt: Timestamp.date(seconds: record.createdAt))
    }
}

extension TokenInfo {
    /// A stored token's metadata as the API shows it.
    public init(_ record: CredentialRecord) {
        self.init(
            id: String(record.id), label: record.label, createdAt: Timestamp.date(seconds: record.createdAt),
            lastUsedAt: record.lastUsedAt.map(Timestamp.date(seconds:)), expiresAt: record.expiresAt.map(Timestamp.date(seconds:)),
            revokedAt: record.revokedAt.map(Timestamp.date(seconds:)))
    }
}
