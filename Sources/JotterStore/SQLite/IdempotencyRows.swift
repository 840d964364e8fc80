#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `idempotency_keys` statements of the SQLite store, run by the writer.
enum IdempotencyRows: IdempotencyStatements {
    /// Sweeps expired keys (answers past 24 h, claims past their lease), then claims `key` or
    /// reads what holds it. A claim with neither an answer nor a committed write whose instance
    /// is gone (`SQLiteInstance.isAlive`) is taken over: `.claimed`. (Not in the claim's first
    /// `answerGrace` seconds, as on PostgreSQL.)
    static func claim(
        _ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, claimer instance: SQLiteInstance,
        on db: SQLiteConnection
    ) throws(StoreError) -> IdempotencyClaim {
        try db.run("DELETE FROM idempotency_keys WHERE expires_at <= ?", [.integer(now)])
        try db.run(
            """
            INSERT INTO idempotency_keys (owner, key, fingerprint, claimed_at, expires_at, claimer) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT DO NOTHING
            """,
            [
                .integer(owner.id), .text(key), .blob(Data(fingerprint)), .integer(now), .integer(now + IdempotencyLimits.lease),
                .integer(instance.number),
            ])
        if try db.first("SELECT changes()", row: { $0.int64(0) }) == 1 { return .claimed }
        guard let found = try held(key, fingerprint: fingerprint, owner: owner, now: now, on: db) else { return .running }
        if let holder = found.orphan, holder != instance.number, !instance.isAlive(holder) {
            // The writer is the only one: nothing can take it between the read and this.
            try db.run(
                """
                UPDATE idempotency_keys SET claimer = ?, claimed_at = ?, expires_at = ?
                WHERE owner = ? AND key = ? AND claimer = ? AND status IS NULL AND location IS NULL
                """,
                [
                    .integer(instance.number), .integer(now), .integer(now + IdempotencyLimits.lease), .integer(owner.id), .text(key),
                    .integer(holder),
                ])
            return .claimed
        }
        return found.claim
    }

    /// What holds `key`, read without writing (on a reader): nil when it is free — no key, an
    /// expired one, or an unanswered claim whose instance is gone (a claim would take it over).
    static func lookup(
        _ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, claimer instance: SQLiteInstance, on db: SQLiteConnection
    ) throws(StoreError) -> IdempotencyClaim? {
        guard let found = try held(key, fingerprint: fingerprint, owner: owner, now: now, on: db) else { return nil }
        if let holder = found.orphan, holder != instance.number, !instance.isAlive(holder) { return nil }
        return found.claim
    }

    /// What holds `key` unexpired, and the claimer of an unanswered claim with no committed write
    /// past `answerGrace` (`orphan`: free if that instance is gone).
    static func held(
        _ key: String, fingerprint: [UInt8], owner: Owner, now: Int64, on db: SQLiteConnection
    ) throws(StoreError) -> IdempotencyHold? {
        try db.first(
            """
            SELECT fingerprint, status, head, body, location, claimed_at, claimer FROM idempotency_keys
            WHERE owner = ? AND key = ? AND expires_at > ?
            """,
            [.integer(owner.id), .text(key), .integer(now)]
        ) { row -> IdempotencyHold in
            guard [UInt8](row.data(0)) == fingerprint else { return IdempotencyHold(claim: .mismatch) }
            guard let status = row.optionalInt64(1) else {
                let location = row.optionalString(4), claimedAt = row.int64(5)
                let orphan = location == nil && claimedAt + IdempotencyLimits.answerGrace <= now
                return IdempotencyHold(
                    claim: IdempotencyLimits.pending(location: location, claimedAt: claimedAt, now: now),
                    orphan: orphan ? row.optionalInt64(6) : nil)
            }
            return IdempotencyHold(
                claim: .replay(
                    IdempotentAnswer(
                        status: Int(status), head: row.string(2), body: row.isNull(3) ? nil : [UInt8](row.data(3)),
                        location: row.optionalString(4))))
        }
    }

    /// Stores the answer, then keeps the owner's answers within their budget: the bodies kept
    /// add up to at most `IdempotencyLimits.maxBytesPerOwner`, and so do the references.
    static func complete(_ key: String, answer: IdempotentAnswer, owner: Owner, now: Int64, on db: SQLiteConnection) throws(StoreError) {
        let body = answer.body.flatMap { answer.bytes <= IdempotencyLimits.maxAnswerBytes ? $0 : nil }
        let kept = IdempotentAnswer(status: answer.status, head: answer.head, body: body, location: answer.location)
        guard kept.body != nil || kept.location != nil else { return try release(key, owner: owner, on: db) }
        try db.run(
            """
            UPDATE idempotency_keys SET status = ?, head = ?, body = ?, location = ?, bytes = ?, expires_at = ?
            WHERE owner = ? AND key = ? AND status IS NULL
            """,
            [
                .integer(Int64(kept.status)), .text(kept.head), kept.body.map { .blob(Data($0)) } ?? .null, .text(kept.location),
                .integer(kept.bytes), .integer(now + IdempotencyLimits.lifetime), .integer(owner.id), .text(key),
            ])
        // Bodies first: past the budget, an answer with a Location becomes a reference, one without goes.
        let bodiesPast = pastBudget(bodies: true)
        let values: [SQLiteValue] = [.integer(owner.id), .integer(IdempotencyLimits.maxBytesPerOwner)]
        try db.run(
            """
            UPDATE idempotency_keys SET body = NULL, bytes = length(CAST(head AS BLOB))
            WHERE owner = ?1 AND location IS NOT NULL AND key IN (\(bodiesPast))
            """, values)
        try db.run("DELETE FROM idempotency_keys WHERE owner = ?1 AND key IN (\(bodiesPast))", values)
        // Then references: past the budget, the oldest go.
        try db.run("DELETE FROM idempotency_keys WHERE owner = ?1 AND key IN (\(pastBudget(bodies: false)))", values)
    }

    /// The keys of the owner's answers with (or without) a body past the budget, newest first.
    static func pastBudget(bodies: Bool) -> String {
        """
        SELECT key FROM (SELECT key, sum(bytes) OVER (ORDER BY claimed_at DESC, key DESC) AS total FROM idempotency_keys
                         WHERE owner = ?1 AND status IS NOT NULL AND body IS \(bodies ? "NOT NULL" : "NULL")) AS kept WHERE total > ?2
        """
    }

    /// Inside the write a claimed key guards: records what it created (`location`) and keeps the
    /// key for 24 h, still unanswered (`IdempotencyLimits.pending`).
    static func keepPending(_ key: String, location: String, owner: Owner, now: Int64, on db: SQLiteConnection) throws(StoreError) {
        try db.run(
            "UPDATE idempotency_keys SET location = ?, expires_at = ? WHERE owner = ? AND key = ? AND status IS NULL",
            [.text(location), .integer(now + IdempotencyLimits.lifetime), .integer(owner.id), .text(key)])
    }

    /// Forgets an unanswered claim — not one whose write committed (it has a location).
    static func release(_ key: String, owner: Owner, on db: SQLiteConnection) throws(StoreError) {
        try db.run(
            "DELETE FROM idempotency_keys WHERE owner = ? AND key = ? AND status IS NULL AND location IS NULL",
            [.integer(owner.id), .text(key)])
    }
}

extension SQLiteStore {
    public func claimIdempotencyKey(_ key: String, fingerprint: [UInt8], owner: Owner, now: Int64) throws(StoreError) -> IdempotencyClaim {
        try StoreWait.wait { completion in
            submit(
                { [instance] db, _ throws(StoreError) in
                    try IdempotencyRows.claim(key, fingerprint: fingerprint, owner: owner, now: now, claimer: instance, on: db)
                },
                owner: owner, completion: completion)
        }
    }

    public func completeIdempotencyKey(
        _ key: String, answer: IdempotentAnswer, owner: Owner, now: Int64,
        completion: @escaping StoreCompletion<Void>
    ) {
        submit(
            { db, _ throws(StoreError) in try IdempotencyRows.complete(key, answer: answer, owner: owner, now: now, on: db) },
            owner: owner, completion: completion)
    }

    public func releaseIdempotencyKey(_ key: String, owner: Owner, completion: @escaping StoreCompletion<Void>) {
        submit({ db, _ throws(StoreError) in try IdempotencyRows.release(key, owner: owner, on: db) }, owner: owner, completion: completion)
    }

    public func lookUpIdempotencyKey(_ key: String, fingerprint: [UInt8], owner: Owner, now: Int64) throws(StoreError) -> IdempotencyClaim? {
        try readers.withConnection { [instance] db throws(StoreError) in
            try IdempotencyRows.lookup(key, fingerprint: fingerprint, owner: owner, now: now, claimer: instance, on: db)
        }
    }
}
