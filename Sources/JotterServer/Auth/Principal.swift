import JotterHTTP
import JotterStore

/// Whether requests must carry credentials (`--auth required|off`).
public enum AuthMode: String, Sendable, CaseIterable {
    /// Notes, uploads, their events and `/metrics` answer `401` without a valid token or session.
    case required
    /// Credentials are optional: a request without any acts as the data folder's first user
    /// (or, while there is none, on the unclaimed data); invalid ones are still `401`.
    case off

    /// The default for `host`: `off` on a loopback address, `required` anywhere else.
    public static func `default`(for host: String) -> AuthMode {
        isLoopback(host) ? .off : .required
    }

    /// 127.0.0.0/8, ::1 and `localhost`.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}

/// Who a request acts as, set by `AuthenticationMiddleware` in the head phase.
public struct Principal: Sendable {
    /// The signed-in user; nil for a request without credentials under `--auth off`.
    public var user: UserRecord?
    /// Whose notes and uploads the request reads and changes.
    public var owner: Owner
    /// The token or session the request carried.
    public var credential: CredentialRecord?
    /// The credential came in the session cookie (so writes need the CSRF check).
    public var viaCookie: Bool
    /// What the request left of its credential's rate limit.
    var rateLimit: RequestRateLimit.Left?

    public init(user: UserRecord?, owner: Owner, credential: CredentialRecord? = nil, viaCookie: Bool = false) {
        self.user = user
        self.owner = owner
        self.credential = credential
        self.viaCookie = viaCookie
    }
}

/// The context key of the request's `Principal`.
public enum Authenticated: RequestContextKey {
    public typealias Value = Principal
}

extension RequestContext {
    /// Who the request acts as (nil on routes without authentication).
    public var principal: Principal? { self[Authenticated.self] }

    /// Whose data the request reads and changes. Routes that reach notes or uploads are all
    /// behind `AuthenticationMiddleware`, which always sets it.
    var owner: Owner { self[Authenticated.self]?.owner ?? .unclaimed }
}
