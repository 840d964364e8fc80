/// A user as the API shows it (never a password or its hash).
public struct UserInfo: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var admin: Bool
    public var createdAt: String

    public init(id: String, name: String, admin: Bool, createdAt: String) {
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
    /// When the session or token ends (RFC 3339), nil when it does not.
    public var expiresAt: String?

    public init(user: UserInfo, csrfToken: String? = nil, expiresAt: String? = nil) {
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
    public var createdAt: String
    public var lastUsedAt: String?
    public var expiresAt: String?
    public var revokedAt: String?

    public init(id: String, label: String, createdAt: String, lastUsedAt: String?, expiresAt: String?, revokedAt: String?) {
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
/// `token` is the secret, shown this once.
public struct IssuedToken: Codable, Sendable, Hashable {
    public var token: String
    public var info: TokenInfo
    public var user: UserInfo

    public init(token: String, info: TokenInfo, user: UserInfo) {
        self.token = token
        self.info = info
        self.user = user
    }
}

/// `GET /users`: every user (administrators only).
public struct UserList: Codable, Sendable, Hashable {
    public var users: [UserInfo]
    public init(users: [UserInfo]) { self.users = users }
}
