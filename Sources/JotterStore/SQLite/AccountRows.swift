#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The user and credential queries, shared by the readers and the writer.
enum AccountRows {
    static let userColumns = "id, name, is_admin, created_at"
    static let credentialColumns = "id, user_id, kind, label, created_at, last_used_at, expires_at, revoked_at"

    static func user(_ row: Statement, from first: Int32 = 0) -> UserRecord {
        UserRecord(id: row.int64(first), name: row.string(first + 1), isAdmin: row.int64(first + 2) != 0, createdAt: row.int64(first + 3))
    }

    static func credential(_ row: Statement, from first: Int32 = 0) -> CredentialRecord {
        CredentialRecord(
            id: row.int64(first), userID: row.int64(first + 1),
            kind: CredentialKind(rawValue: row.string(first + 2)) ?? .token, label: row.string(first + 3),
            createdAt: row.int64(first + 4), lastUsedAt: row.optionalInt64(first + 5),
            expiresAt: row.optionalInt64(first + 6), revokedAt: row.optionalInt64(first + 7))
    }

    static func users(on db: SQLiteConnection) throws(StoreError) -> [UserRecord] {
        try db.query("SELECT \(userColumns) FROM users ORDER BY id") { user($0) }
    }

    static func user(named name: String, on db: SQLiteConnection) throws(StoreError) -> UserRecord? {
        try db.first("SELECT \(userColumns) FROM users WHERE name = ?", [.text(name)]) { user($0) }
    }

    static func user(id: Int64, on db: SQLiteConnection) throws(StoreError) -> UserRecord? {
        try db.first("SELECT \(userColumns) FROM users WHERE id = ?", [.integer(id)]) { user($0) }
    }

    static func passwordHash(userID: Int64, on db: SQLiteConnection) throws(StoreError) -> String? {
        try db.first("SELECT password_hash FROM users WHERE id = ?", [.integer(userID)]) { $0.string(0) }
    }

    static func credential(digest: [UInt8], on db: SQLiteConnection) throws(StoreError) -> (CredentialRecord, UserRecord)? {
        try db.first(
            """
            SELECT c.id, c.user_id, c.kind, c.label, c.created_at, c.last_used_at, c.expires_at, c.revoked_at,
                   u.id, u.name, u.is_admin, u.created_at
            FROM credentials AS c JOIN users AS u ON u.id = c.user_id WHERE c.digest = ?
            """, [.blob(Data(digest))]
        ) { (credential($0), user($0, from: 8)) }
    }

    static func credentials(userID: Int64, kind: CredentialKind, on db: SQLiteConnection) throws(StoreError) -> [CredentialRecord] {
        try db.query(
            "SELECT \(credentialColumns) FROM credentials WHERE user_id = ? AND kind = ? ORDER BY id DESC",
            [.integer(userID), .text(kind.rawValue)]
        ) { credential($0) }
    }

    /// Applies `write` inside the writer's transaction; `removed` collects upload ids whose
    /// files go once it commits.
    static func apply(_ write: AccountWrite, now: Int64, on db: SQLiteConnection, changes: WriteEffects) throws(StoreError) -> AccountWriteResult {
        switch write {
        case .addUser(let name, let hash, let isAdmin):
            if try user(named: name, on: db) != nil { return .nameTaken }
            let first = try db.first("SELECT count(*) FROM users") { $0.int64(0) } == 0
            try db.run(
                "INSERT INTO users (name, password_hash, is_admin, created_at) VALUES (?, ?, ?, ?)",
                [.text(name), .text(hash), .integer(isAdmin ? 1 : 0), .integer(now)])
            let record = UserRecord(id: db.lastInsertRowID, name: name, isAdmin: isAdmin, createdAt: now)
            if first {
                // What was stored before there were users becomes the first user's.
                for table in ["notes", "uploads", "events", "note_revisions", "trashed_notes", "trash_places", "note_changes"] {
                    try db.run("UPDATE \(table) SET owner = ? WHERE owner = 0", [.integer(record.id)])
                }
            }
            return .user(record)

        case .setPassword(let userID, let hash):
            guard try user(id: userID, on: db) != nil else { return .notFound }
            try db.run("UPDATE users SET password_hash = ? WHERE id = ?", [.text(hash), .integer(userID)])
            // A new password ends the user's web sessions.
            try db.run(
                "UPDATE credentials SET revoked_at = ? WHERE user_id = ? AND kind = 'session' AND revoked_at IS NULL",
                [.integer(now), .integer(userID)])
            return .done

        case .removeUser(let userID):
            guard let record = try user(id: userID, on: db) else { return .notFound }
            // In the writer's transaction: two removals can't both see the other administrator.
            let others = try db.first("SELECT count(*) FROM users WHERE is_admin <> 0 AND id <> ?", [.integer(userID)]) { $0.int64(0) }
            if record.isAdmin, others == 0 { return .lastAdministrator }
            changes.removed += try db.query("DELETE FROM uploads WHERE owner = ? RETURNING id", [.integer(userID)]) { $0.string(0) }
            try db.run("DELETE FROM removed_uploads WHERE owner = ?", [.integer(userID)])
            try FullTextIndex.removeAll(owner: userID, on: db)
            try db.run("DELETE FROM notes WHERE owner = ?", [.integer(userID)])
            try db.run("DELETE FROM note_revisions WHERE owner = ?", [.integer(userID)])
            try db.run("DELETE FROM trashed_notes WHERE owner = ?", [.integer(userID)])
            try db.run("DELETE FROM trash_places WHERE owner = ?", [.integer(userID)])
            try db.run("DELETE FROM events WHERE owner = ?", [.integer(userID)])
            try db.run("DELETE FROM note_changes WHERE owner = ?", [.integer(userID)])
            try db.run("DELETE FROM credentials WHERE user_id = ?", [.integer(userID)])
            try db.run("DELETE FROM idempotency_keys WHERE owner = ?", [.integer(userID)])
            try db.run("DELETE FROM users WHERE id = ?", [.integer(userID)])
            return .done

        case .issue(let userID, let kind, let label, let digest, let expiresAt):
            guard try user(id: userID, on: db) != nil else { return .notFound }
            try db.run(
                """
                INSERT INTO credentials (user_id, kind, label, digest, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
                """, [.integer(userID), .text(kind.rawValue), .text(label), .blob(Data(digest)), .integer(now), .integer(expiresAt)])
            return .credential(
                CredentialRecord(
                    id: db.lastInsertRowID, userID: userID, kind: kind, label: label,
                    createdAt: now, expiresAt: expiresAt))

        case .revoke(let id, let userID):
            guard var record = try db.first("SELECT \(credentialColumns) FROM credentials WHERE id = ?", [.integer(id)], row: { credential($0) }),
                userID.map({ $0 == record.userID }) ?? true
            else { return .notFound }
            if record.revokedAt == nil {
                try db.run("UPDATE credentials SET revoked_at = ? WHERE id = ?", [.integer(now), .integer(id)])
                record.revokedAt = now
            }
            return .credential(record)

        case .markUsed(let id, let at):
            try db.run("UPDATE credentials SET last_used_at = ? WHERE id = ?", [.integer(at), .integer(id)])
            return .done
        }
    }
}
