/// A user of the server. The password hash never leaves the store.
public struct UserRecord: Sendable, Hashable {
    public var id: Int64
    /// Unique, compared case-insensitively (ASCII).
    public var name: String
    public var isAdmin: Bool
    /// Unix seconds, UTC.
    public var createdAt: Int64

    /// Whose data this user's requests read and change.
    public var owner: Owner { Owner(id: id) }
}

/// What a credential is for.
public enum CredentialKind: String, Sendable {
    /// An API token (`jot_…`): for the CLI, the SDK, scripts.
    case token
    /// A web-app session (`jots_…`), carried in a cookie.
    case session
}

/// An issued token or session, as stored: its SHA-256 and its metadata, never the secret.
public struct CredentialRecord: Sendable, Hashable {
    public var id: Int64
    public var userID: Int64
    public var kind: CredentialKind
    public var label: String
    /// Unix seconds, UTC.
    public var createdAt: Int64
    public var lastUsedAt: Int64?
    public var expiresAt: Int64?
    public var revokedAt: Int64?

    public init(
        id: Int64, userID: Int64, kind: CredentialKind, label: String, createdAt: Int64,
        lastUsedAt: Int64? = nil, expiresAt: Int64? = nil, revokedAt: Int64? = nil
    ) {
        self.id = id
        self.userID = userID
        self.kind = kind
        self.label = label
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }

    /// Not revoked and not expired at `now` (Unix seconds).
    public func isValid(at now: Int64) -> Bool {
        revokedAt == nil && (expiresAt.map { now < $0 } ?? true)
    }
}

/// A change to users or credentials, run by the store's writer.
public enum AccountWrite: Sendable {
    /// A new user with an Argon2id hash (`PasswordHash.make`). The first user ever created
    /// takes over every unclaimed note, upload and event.
    case addUser(name: String, passwordHash: String, isAdmin: Bool)
    case setPassword(userID: Int64, passwordHash: String)
    /// Removes the user with their notes, uploads (files too), events and credentials; never
    /// the last administrator (`lastAdministrator`), checked in the same transaction.
    case removeUser(userID: Int64)
    /// Stores a credential by the SHA-256 of its secret (`Secret.digest`).
    case issue(userID: Int64, kind: CredentialKind, label: String, digest: [UInt8], expiresAt: Int64?)
    /// Revokes credential `id`; when `userID` is given, only if it is theirs.
    case revoke(id: Int64, userID: Int64?)
    /// Records a use (kept coarse by the caller: at most once a minute per credential).
    case markUsed(id: Int64, at: Int64)
}

/// The outcome of an `AccountWrite`.
public enum AccountWriteResult: Sendable, Hashable {
    case user(UserRecord)
    case credential(CredentialRecord)
    /// Done; nothing to report (`setPassword`, `removeUser`, `markUsed`).
    case done
    /// No such user or credential (or not the given user's).
    case notFound
    /// `addUser` with a name already taken.
    case nameTaken
    /// `removeUser` of the only administrator: nobody could administer the server after it.
    /// Nothing changed.
    case lastAdministrator

    /// What the server and the CLI say when `name` is the last administrator.
    public static func lastAdministratorDetail(_ name: String) -> String {
        "\(name) is the last administrator: add another administrator before removing them; nothing changed"
    }
}

/// Users and their credentials.
public protocol AccountStore: Sendable {
    func users() throws -> [UserRecord]
    func user(named name: String) throws -> UserRecord?
    func user(id: Int64) throws -> UserRecord?
    /// The stored Argon2id hash of `userID`'s password.
    func passwordHash(userID: Int64) throws -> String?
    /// The credential whose secret has SHA-256 `digest`, with its user.
    func credential(digest: [UInt8]) throws -> (CredentialRecord, UserRecord)?
    /// `userID`'s credentials of `kind`, newest first, revoked ones included.
    func credentials(userID: Int64, kind: CredentialKind) throws -> [CredentialRecord]
    func submit(_ write: AccountWrite, completion: @escaping @Sendable (Result<AccountWriteResult, StoreError>) -> Void)
}

/// What a user name may be: 1 to 64 letters, digits and `. _ - @` (checked by the CLI and the
/// server alike).
public enum UserName {
    public static let rule = "must be 1 to 64 letters, digits and . _ - @"
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64
            && name.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || "0123456789._-@".unicodeScalars.contains($0) }
    }
}
