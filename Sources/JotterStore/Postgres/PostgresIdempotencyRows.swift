import JotterPostgres

/// The `idempotency_keys` statements of the PostgreSQL store. The claim is an
/// `INSERT … ON CONFLICT DO NOTHING`: of two instances inserting one key at once, the second
/// waits for the first to commit, inserts nothing, and reads the first's claim.
enum PostgresIdempotencyRows {
    static func claim(_ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, on db: PostgresConnection) throws -> IdempotencyClaim {
        try db.query("DELETE FROM idempotency_keys WHERE expires_at <= $1", [now])
        let inserted = try db.query("""
            INSERT INTO idempotency_keys (owner, key, fingerprint, claimed_at, expires_at) VALUES ($1, $2, $3::bytea, $4, $5)
            ON CONFLICT DO NOTHING RETURNING 1
            """, [owner.id, key, PostgresBytes(fingerprint), now, now + IdempotencyLimits.lease])
        if inserted.count == 1 { return .claimed }
        guard let row = try db.query("SELECT fingerprint, status, head, body, location, claimed_at FROM idempotency_keys WHERE owner = $1 AND key = $2",
                                     [owner.id, key]).first else { return .running }
        guard try row.value(0, as: PostgresBytes.self).bytes == fingerprint else { return .mismatch }
        guard let status = try row.value(1, as: Int?.self) else {
            return IdempotencyLimits.pending(location: try row.value(4, as: String?.self), claimedAt: try row.value(5, as: Int64.self), now: now)
        }
        return .replay(IdempotentAnswer(status: status, head: try row.value(2), body: try row.value(3, as: PostgresBytes?.self)?.bytes,
                                        location: try row.value(4)))
    }

    /// Stores the answer within the owner's budget (as `IdempotencyRows.complete`).
    static func complete(_ key: String, answer: IdempotentAnswer, owner: Owner, now: Int64, on db: PostgresConnection) throws {
        let body = answer.body.flatMap { answer.bytes <= IdempotencyLimits.maxAnswerBytes ? $0 : nil }
        let kept = IdempotentAnswer(status: answer.status, head: answer.head, body: body, location: answer.location)
        guard kept.body != nil || kept.location != nil else { return try release(key, owner: owner, on: db) }
        try db.query("""
            UPDATE idempotency_keys SET status = $3, head = $4, body = $5::bytea, location = $6, bytes = $7, expires_at = $8
            WHERE owner = $1 AND key = $2 AND status IS NULL
            """, [owner.id, key, kept.status, kept.head, kept.body.map { PostgresBytes($0) }, kept.location, kept.bytes,
                  now + IdempotencyLimits.lifetime])
        // Bodies first: past the budget, an answer with a Location becomes a reference, one without goes.
        let bodiesPast = pastBudget(bodies: true)
        try db.query("""
            UPDATE idempotency_keys SET body = NULL, bytes = octet_length(head)
            WHERE owner = $1 AND location IS NOT NULL AND key IN (\(bodiesPast))
            """, [owner.id, IdempotencyLimits.maxBytesPerOwner])
        try db.query("DELETE FROM idempotency_keys WHERE owner = $1 AND key IN (\(bodiesPast))", [owner.id, IdempotencyLimits.maxBytesPerOwner])
        // Then references: past the budget, the oldest go.
        try db.query("DELETE FROM idempotency_keys WHERE owner = $1 AND key IN (\(pastBudget(bodies: false)))", [owner.id, IdempotencyLimits.maxBytesPerOwner])
    }

    /// The keys of the owner's answers with (or without) a body past the budget, newest first.
    static func pastBudget(bodies: Bool) -> String {
        """
        SELECT key FROM (SELECT key, sum(bytes) OVER (ORDER BY claimed_at DESC, key DESC) AS total FROM idempotency_keys
                         WHERE owner = $1 AND status IS NOT NULL AND body IS \(bodies ? "NOT NULL" : "NULL")) AS kept WHERE total > $2
        """
    }

    /// As `IdempotencyRows.keepPending`.
    static func keepPending(_ key: String, location: String, owner: Owner, now: Int64, on db: PostgresConnection) throws {
        try db.query("UPDATE idempotency_keys SET location = $3, expires_at = $4 WHERE owner = $1 AND key = $2 AND status IS NULL",
                     [owner.id, key, location, now + IdempotencyLimits.lifetime])
    }

    /// Forgets an unanswered claim — not one whose write committed (it has a location).
    static func release(_ key: String, owner: Owner, on db: PostgresConnection) throws {
        try db.query("DELETE FROM idempotency_keys WHERE owner = $1 AND key = $2 AND status IS NULL AND location IS NULL", [owner.id, key])
    }
}

extension PostgresStore {
    public func claimIdempotencyKey(_ key: String, fingerprint: [UInt8], owner: Owner, now: Int64) throws(StoreError) -> IdempotencyClaim {
        try StoreWait.wait { completion in
            write({ write in try PostgresIdempotencyRows.claim(key, fingerprint: fingerprint, owner: owner, now: now, on: write.db) },
                  completion: completion)
        }
    }

    public func completeIdempotencyKey(_ key: String, answer: IdempotentAnswer, owner: Owner, now: Int64,
                                       completion: @escaping StoreCompletion<Void>) {
        write({ write in try PostgresIdempotencyRows.complete(key, answer: answer, owner: owner, now: now, on: write.db) }, completion: completion)
    }

    public func releaseIdempotencyKey(_ key: String, owner: Owner, completion: @escaping StoreCompletion<Void>) {
        write({ write in try PostgresIdempotencyRows.release(key, owner: owner, on: write.db) }, completion: completion)
    }
}
