import JotterPostgres

/// The user and credential statements of the PostgreSQL store.
enum PostgresAccountRows {
    static let userColumns = "id, name, is_admin, created_at"
    static let credentialColumns = "id, user_id, kind, label, created_at, last_used_at, expires_at, revoked_at"
    /// Account changes take this advisory lock, so "the first user" is decided once.
    static let accountsLock: Int64 = 0x6A6F_7474_6572_0003

    static func user(_ row: PostgresRow, from first: Int = 0) throws -> UserRecord {
        UserRecord(id: try row.value(first), name: try row.value(first + 1), isAdmin: try row.value(first + 2), createdAt: try row.value(first + 3))
    }

    static func credential(_ row: PostgresRow, from first: Int = 0) throws -> CredentialRecord {
        CredentialRecord(
            id: try row.value(first), userID: try row.value(first + 1),
            kind: CredentialKind(rawValue: try row.value(first + 2)) ?? .token, label: try row.value(first + 3),
            createdAt: try row.value(first + 4), lastUsedAt: try row.value(first + 5),
            expiresAt: try row.value(first + 6), revokedAt: try row.value(first + 7))
    }

    static func users(on db: PostgresConnection) throws -> [UserRecord] {
        try db.query("SELECT \(userColumns) FROM users ORDER BY id").map { try user($0) }
    }

    /// By name, ignoring ASCII case (the unique index's expression).
    static func user(named name: String, on db: PostgresConnection) throws -> UserRecord? {
        try db.query("SELECT \(userColumns) FROM users WHERE lower(name COLLATE \"C\") = lower($1::text COLLATE \"C\")", [name])
            .first.map { try user($0) }
    }

    static func user(id: Int64, on db: PostgresConnection) throws -> UserRecord? {
        try db.query("SELECT \(userColumns) FROM users WHERE id = $1", [id]).first.map { try user($0) }
    }

    static func passwordHash(userID: Int64, on db: PostgresConnection) throws -> String? {
        try db.query("SELECT password_hash FROM users WHERE id = $1", [userID]).first.map { try $0.value(0) }
    }

    static func credential(digest: [UInt8], on db: PostgresConnection) throws -> (CredentialRecord, UserRecord)? {
        try db.query(
            """
            SELECT c.id, c.user_id, c.kind, c.label, c.created_at, c.last_used_at, c.expires_at, c.revoked_at,
                   u.id, u.name, u.is_admin, u.created_at
            FROM credentials AS c JOIN users AS u ON u.id = c.user_id WHERE c.digest = $1::bytea
            """, [PostgresBytes(digest)]
        ).first.map { (try credential($0), try user($0, from: 8)) }
    }

    static func credentials(userID: Int64, kind: CredentialKind, on db: PostgresConnection) throws -> [CredentialRecord] {
        try db.query(
            "SELECT \(credentialColumns) FROM credentials WHERE user_id = $1 AND kind = $2 ORDER BY id DESC",
            [userID, kind.rawValue]
        ).map { try credential($0) }
    }

    /// Applies `write` inside `transaction`; a removed user's upload blobs are collected in it.
    static func apply(_ write: AccountWrite, in transaction: PostgresWrite) throws -> AccountWriteResult {
        let db = transaction.db, now = transaction.now
        switch write {
        case .addUser(let name, let hash, let isAdmin):
            try db.query("SELECT pg_advisory_xact_lock($1)", [accountsLock])
            if try user(named: name, on: db) != nil { return .nameTaken }
            let first: Bool = try db.query("SELECT NOT EXISTS (SELECT 1 FROM users)")[0].value(0)
            let id: Int64 = try db.query(
                "INSERT INTO users (name, password_hash, is_admin, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
                [name, hash, isAdmin, now])[0].value(0)
            if first {
                // What was stored before there were users becomes the first user's.
                for table in ["notes", "uploads", "events", "note_revisions", "trashed_notes", "trash_places", "note_changes"] {
                    try db.query("UPDATE \(table) SET owner = $1 WHERE owner = 0", [id])
                }
            }
            return .user(UserRecord(id: id, name: name, isAdmin: isAdmin, createdAt: now))

        case .setPassword(let userID, let hash):
            guard try db.query("UPDATE users SET password_hash = $1 WHERE id = $2", [hash, userID]).affectedRows == 1 else { return .notFound }
            // A new password ends the user's web sessions.
            try db.query("UPDATE credentials SET revoked_at = $1 WHERE user_id = $2 AND kind = 'session' AND revoked_at IS NULL", [now, userID])
            return .done

        case .removeUser(let userID):
            // Under the accounts lock: two removals can't both see the other administrator.
            try db.query("SELECT pg_advisory_xact_lock($1)", [accountsLock])
            guard let record = try user(id: userID, on: db) else { return .notFound }
            let others: Bool = try db.query("SELECT EXISTS (SELECT 1 FROM users WHERE is_admin AND id <> $1)", [userID])[0].value(0)
            if record.isAdmin, !others { return .lastAdministrator }
            transaction.removedUploads += try db.query("DELETE FROM uploads WHERE owner = $1 RETURNING id", [userID]).map { try $0.value(0) }
            try db.query("DELETE FROM removed_uploads WHERE owner = $1", [userID])
            try db.query("DELETE FROM notes WHERE owner = $1", [userID])
            try db.query("DELETE FROM note_revisions WHERE owner = $1", [userID])
            try db.query("DELETE FROM trashed_notes WHERE owner = $1", [userID])
            try db.query("DELETE FROM trash_places WHERE owner = $1", [userID])
            try db.query("DELETE FROM note_changes WHERE owner = $1", [userID])
            // The last event id must not go back when the newest events were theirs.
            try db.query(
                """
                WITH gone AS (DELETE FROM events WHERE owner = $1 RETURNING id)
                UPDATE event_marks SET high_water = greatest(high_water, (SELECT max(id) FROM gone)) WHERE EXISTS (SELECT 1 FROM gone)
                """, [userID])
            try db.query("DELETE FROM credentials WHERE user_id = $1", [userID])
            try db.query("DELETE FROM idempotency_keys WHERE owner = $1", [userID])
            try db.query("DELETE FROM users WHERE id = $1", [userID])
            return .done

        case .issue(let userID, let kind, let label, let digest, let expiresAt):
            guard try user(id: userID, on: db) != nil else { return .notFound }
            let id: Int64 = try db.query(
                """
                INSERT INTO credentials (user_id, kind, label, digest, created_at, expires_at) VALUES ($1, $2, $3, $4::bytea, $5, $6) RETURNING id
                """, [userID, kind.rawValue, label, PostgresBytes(digest), now, expiresAt])[0].value(0)
            return .credential(CredentialRecord(id: id, userID: userID, kind: kind, label: label, createdAt: now, expiresAt: expiresAt))

        case .revoke(let id, let userID):
            guard let row = try db.query("SELECT \(credentialColumns) FROM credentials WHERE id = $1 FOR UPDATE", [id]).first else {
                return .notFound
            }
            var record = try credential(row)
            guard userID.map({ $0 == record.userID }) ?? true else { return .notFound }
            if record.revokedAt == nil {
                try db.query("UPDATE credentials SET revoked_at = $1 WHERE id = $2", [now, id])
                record.revokedAt = now
            }
            return .credential(record)

        case .markUsed(let id, let at):
            try db.query("UPDATE credentials SET last_used_at = $1 WHERE id = $2", [at, id])
            return .done
        }
    }
}
