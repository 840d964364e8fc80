import JotterPostgres

/// The `idempotency_keys` statements of the PostgreSQL store. The claim is an
/// `INSERT … ON CONFLICT DO NOTHING`: of two instances inserting one key at once, the second
/// waits for the first to commit, inserts nothing, and reads the first's claim.
///
/// A claim names its claimer: the instance (`PostgresStore.instance`) whose event-feed
/// session holds the advisory lock of that number (`PostgresEventFeed`) for as long as the
/// instance lives. A claim that has neither an answer nor a committed write, and whose claimer's
/// lock is no longer held — the instance died, or lost its session — is taken over at once by
/// the next request with the key, instead of answering `409` until the lease ends.
enum PostgresIdempotencyRows: IdempotencyStatements {
    /// `PostgresConnection` throws untyped errors, and so do the writes it runs.
    typealias Failure = any Error

    static func claim(
        _ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, claimer: Int64,
        on db: PostgresConnection
    ) throws -> IdempotencyClaim {
        try db.query("DELETE FROM idempotency_keys WHERE expires_at <= $1", [now])
        let inserted = try db.query(
            """
            INSERT INTO idempotency_keys (owner, key, fingerprint, claimed_at, expires_at, claimer) VALUES ($1, $2, $3::bytea, $4, $5, $6)
            ON CONFLICT DO NOTHING RETURNING 1
            """, [owner.id, key, PostgresBytes(fingerprint), now, now + IdempotencyLimits.lease, claimer])
        if inserted.count == 1 { return .claimed }
        guard let found = try held(key, fingerprint: fingerprint, owner: owner, now: now, on: db) else { return .running }
        if let holder = found.orphan, holder != claimer, try !isAlive(holder, on: db) {
            return try takeOver(key, from: holder, owner: owner, now: now, claimer: claimer, on: db)
        }
        return found.claim
    }

    /// As `IdempotencyRows.lookup`: one `SELECT` (and a look at `pg_locks` for an orphan).
    static func lookup(
        _ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, claimer: Int64, on db: PostgresConnection
    ) throws -> IdempotencyClaim? {
        guard let found = try held(key, fingerprint: fingerprint, owner: owner, now: now, on: db) else { return nil }
        if let holder = found.orphan, holder != claimer, try !isAlive(holder, on: db) { return nil }
        return found.claim
    }

    /// As `IdempotencyRows.held`. (An orphan not in the claim's first `answerGrace` seconds: an
    /// instance's session takes its lock a moment after the instance starts.)
    static func held(_ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, on db: PostgresConnection) throws -> IdempotencyHold? {
        guard
            let row = try db.query(
                """
                SELECT fingerprint, status, head, body, location, claimed_at, claimer FROM idempotency_keys
                WHERE owner = $1 AND key = $2 AND expires_at > $3
                """, [owner.id, key, now]
            ).first
        else { return nil }
        guard try row.value(0, as: PostgresBytes.self).bytes == fingerprint else { return IdempotencyHold(claim: .mismatch) }
        guard let status = try row.value(1, as: Int?.self) else {
            let location = try row.value(4, as: String?.self)
            let claimedAt = try row.value(5, as: Int64.self)
            let orphan = location == nil && claimedAt + IdempotencyLimits.answerGrace <= now
            return IdempotencyHold(
                claim: IdempotencyLimits.pending(location: location, claimedAt: claimedAt, now: now),
                orphan: orphan ? try row.value(6, as: Int64?.self) : nil)
        }
        return IdempotencyHold(
            claim: .replay(
                IdempotentAnswer(
                    status: status, head: try row.value(2), body: try row.value(3, as: PostgresBytes?.self)?.bytes,
                    location: try row.value(4))))
    }

    /// Whether the session of instance `claimer` is still open: it holds the advisory lock of
    /// that number (a `bigint` key: its high half is `classid`, its low half `objid`).
    static func isAlive(_ claimer: Int64, on db: PostgresConnection) throws -> Bool {
        try db.query(
            """
            SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                           AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid)
            """, [claimer])[0].value(0)
    }

    /// Makes a dead claimer's unanswered claim the caller's; `.running` when another request
    /// took it over first (its `UPDATE` waited for that one's commit, then matched nothing).
    static func takeOver(
        _ key: String, from holder: Int64, owner: Owner, now: Int64, claimer: Int64,
        on db: PostgresConnection
    ) throws -> IdempotencyClaim {
        let taken = try db.query(
            """
            UPDATE idempotency_keys SET claimer = $3, claimed_at = $4, expires_at = $5
            WHERE owner = $1 AND key = $2 AND claimer = $6 AND status IS NULL AND location IS NULL RETURNING 1
            """, [owner.id, key, claimer, now, now + IdempotencyLimits.lease, holder])
        return taken.count == 1 ? .claimed : .running
    }

    /// Stores the answer within the owner's budget (as `IdempotencyRows.complete`).
    static func complete(_ key: String, answer: IdempotentAnswer, owner: Owner, now: Int64, on db: PostgresConnection) throws {
        let body = answer.body.flatMap { answer.bytes <= IdempotencyLimits.maxAnswerBytes ? $0 : nil }
        let kept = IdempotentAnswer(status: answer.status, head: answer.head, body: body, location: answer.location)
        guard kept.body != nil || kept.location != nil else { return try release(key, owner: owner, on: db) }
        try db.query(
            """
            UPDATE idempotency_keys SET status = $3, head = $4, body = $5::bytea, location = $6, bytes = $7, expires_at = $8
            WHERE owner = $1 AND key = $2 AND status IS NULL
            """,
            [
                owner.id, key, kept.status, kept.head, kept.body.map { PostgresBytes($0) }, kept.location, kept.bytes,
                now + IdempotencyLimits.lifetime,
            ])
        // Bodies first: past the budget, an answer with a Location becomes a reference, one without goes.
        let bodiesPast = pastBudget(bodies: true)
        try db.query(
            """
            UPDATE idempotency_keys SET body = NULL, bytes = octet_length(head)
            WHERE owner = $1 AND location IS NOT NULL AND key IN (\(bodiesPast))
            """, [owner.id, IdempotencyLimits.maxBytesPerOwner])
        try db.query("DELETE FROM idempotency_keys WHERE owner = $1 AND key IN (\(bodiesPast))", [owner.id, IdempotencyLimits.maxBytesPerOwner])
        // Then references: past the budget, the oldest go.
        try db.query(
            "DELETE FROM idempotency_keys WHERE owner = $1 AND key IN (\(pastBudget(bodies: false)))", [owner.id, IdempotencyLimits.maxBytesPerOwner])
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
        try db.query(
            "UPDATE idempotency_keys SET location = $3, expires_at = $4 WHERE owner = $1 AND key = $2 AND status IS NULL",
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
            write(
                { [instance] write in
                    try PostgresIdempotencyRows.claim(key, fingerprint: fingerprint, owner: owner, now: now, claimer: instance, on: write.db)
                },
                completion: completion)
        }
    }

    public func completeIdempotencyKey(
        _ key: String, answer: IdempotentAnswer, owner: Owner, now: Int64,
        completion: @escaping StoreCompletion<Void>
    ) {
        write({ write in try PostgresIdempotencyRows.complete(key, answer: answer, owner: owner, now: now, on: write.db) }, completion: completion)
    }

    public func releaseIdempotencyKey(_ key: String, owner: Owner, completion: @escaping StoreCompletion<Void>) {
        write({ write in try PostgresIdempotencyRows.release(key, owner: owner, on: write.db) }, completion: completion)
    }

    public func lookUpIdempotencyKey(_ key: String, fingerprint: [UInt8], owner: Owner, now: Int64) throws(StoreError) -> IdempotencyClaim? {
        try read { db in try PostgresIdempotencyRows.lookup(key, fingerprint: fingerprint, owner: owner, now: now, claimer: instance, on: db) }
    }
}
