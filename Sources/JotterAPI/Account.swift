#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A user as the API shows it (never a password or its hash).
public struct UserInfo: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var admin: Bool
    /// When the user was added (whole seconds).
    @Timestamped public var createdAt: Date

    public init(id: String, name: String, admin: Bool, createdAt: Date) {
        self.id = id
        self.name = name
        self.admin = admin
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, admin
        case createdAt = "created_at"
    }
}

/// `GET /auth/me` and a session sign-in: the user, and for a session the CSRF token that
/// cookie-authenticated writes send in `X-CSRF-Token`.
public struct SessionInfo: Codable, Sendable, Hashable {
    public var user: UserInfo
    public var csrfToken: String?
    /// When the session or token ends (whole seconds), nil when it does not.
    @Timestamped public var expiresAt: Date?

    public init(user: UserInfo, csrfToken: String? = nil, expiresAt: Date? = nil) {
        self.user = user
        self.csrfToken = csrfToken
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case user
        case csrfToken = "csrf_token"
        case expiresAt = "expires_at"
    }
}

/// An API token's metadata (`GET /auth/tokens`); the secret is shown only once, at creation.
public struct TokenInfo: Codable, Sendable, Hashable {
    public var id: String
    public var label: String
    /// When it was made (whole seconds, as every time below).
    @Timestamped public var createdAt: Date
    /// When a request last carried it (to about a minute), nil when none has.
    @Timestamped public var lastUsedAt: Date?
    /// When it stops working, nil when it does not.
    @Timestamped public var expiresAt: Date?
    /// When it was revoked, nil while it is not.
    @Timestamped public var revokedAt: Date?

    public init(id: String, label: String, createdAt: Date, lastUsedAt: Date?, expiresAt: Date?, revokedAt: Date?) {
        self.id = id
        self.label = label
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, label
        case createdAt = "created_at"
        case lastUsedAt = "last_used_at"
        case expiresAt = "expires_at"
        case revokedAt = "revoked_at"
    }
}

/// `GET /auth/tokens`.
public struct TokenList: Codable, Sendable, Hashable {
    public var tokens: [TokenInfo]
    public init(tokens: [TokenInfo]) { self.tokens = tokens }
}

/// A newly created token (`POST /auth/tokens`, or `POST /auth/sessions` asking for a token):
/// `token` is the secret, shown this once. `print(issued)`, string interpolation and
/// `debugPrint` and `dump` show `jot_…` in its place, so logs never hold it; read `token` to keep it.
public struct IssuedToken: Codable, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var token: String
    public var info: TokenInfo
    public var user: UserInfo

    public init(token: String, info: TokenInfo, user: UserInfo) {
        self.token = token
        self.info = info
        self.user = user
    }

    /// The token without its secret: `IssuedToken(token: jot_…, id: 3, label: "laptop", user: ann)`.
    public var description: String {
        "IssuedToken(token: \(Self.redacted(token)), id: \(info.id), label: \(String(reflecting: info.label)), user: \(user.name))"
    }

    /// As `description`: the secret is never printed.
    public var debugDescription: String { description }

    /// For `dump` and debuggers: the fields, the secret redacted.
    public var customMirror: Mirror {
        Mirror(self, children: ["token": Self.redacted(token), "info": info, "user": user], displayStyle: .struct)
    }

    /// What a secret is shown as: its `jot_` prefix only, never a character of the secret.
    static func redacted(_ secret: String) -> String {
        secret.hasPrefix("jot_") ? "jot_…" : "…"
    }
}

/// `GET /users`: every user (administrators only).
public struct UserList: Codable, Sendable, Hashable {
    public var users: [UserInfo]
    public init(users: [UserInfo]) { self.users = users }
}
