import JotterPostgres
import Synchronization

/// Token buckets in the `limit_buckets` table, shared by every instance on the database, on
/// the database's clock (so the instances' clocks need not agree).
///
/// One key (the requests a minute of a token: every authenticated request) is one statement,
/// an `INSERT … ON CONFLICT DO UPDATE` that refills and takes in place — PostgreSQL's row lock
/// makes two instances' takes follow each other. Several keys (a sign-in: address and name)
/// are one transaction that locks their rows in key order, so that all or none give a token.
/// A bucket full again is the same as no row: rows whose `full_at` has passed are deleted now
/// and then.
final class PostgresLimitCounters: LimitCounters {
    private let store: PostgresStore
    /// Takes since the last sweep of full buckets.
    private let sinceSweep = Atomic<Int>(0)
    static let sweepEvery = 10_000

    init(store: PostgresStore) {
        self.store = store
    }

    static let now = "extract(epoch FROM clock_timestamp())::float8"

    func take(_ keys: [String], capacity: Double, interval: Double, cost: Double) throws(StoreError) -> LimitTake {
        if sinceSweep.add(1, ordering: .relaxed).newValue >= Self.sweepEvery {
            sinceSweep.store(0, ordering: .relaxed)
            _ = try? store.read { db in try db.query("DELETE FROM limit_buckets WHERE full_at < \(Self.now)") }
        }
        if keys.count == 1 && cost == 1 {
            return try store.read { db in
                let row = try db.query(
                    """
                    WITH clock AS (SELECT \(Self.now) AS now)
                    INSERT INTO limit_buckets AS b (key, tokens, updated, allowed, full_at)
                    SELECT $1, $2::float8 - 1, now, true, now + $3::float8 FROM clock
                    ON CONFLICT (key) DO UPDATE SET
                        tokens = least($2::float8, b.tokens + greatest(0, EXCLUDED.updated - b.updated) / $3::float8)
                                 - CASE WHEN least($2::float8, b.tokens + greatest(0, EXCLUDED.updated - b.updated) / $3::float8) >= 1 THEN 1 ELSE 0 END,
                        allowed = least($2::float8, b.tokens + greatest(0, EXCLUDED.updated - b.updated) / $3::float8) >= 1,
                        updated = EXCLUDED.updated,
                        full_at = EXCLUDED.updated + ($2::float8 - least($2::float8, b.tokens + greatest(0, EXCLUDED.updated - b.updated) / $3::float8)
                                  + CASE WHEN least($2::float8, b.tokens + greatest(0, EXCLUDED.updated - b.updated) / $3::float8) >= 1 THEN 1 ELSE 0 END) * $3::float8
                    RETURNING tokens, allowed
                    """, [keys[0], capacity, interval])[0]
                return LimitTake(allowed: try row.value(1), tokens: [try row.value(0)])
            }
        }
        return try store.read { db in
            try db.transaction { db in
                let order = keys.indices.sorted { keys[$0] < keys[$1] }
                var buckets: [Int: (tokens: Double, now: Double)] = [:]
                for index in order {
                    try db.query(
                        "INSERT INTO limit_buckets (key, tokens, updated, allowed, full_at) VALUES ($1, $2::float8, \(Self.now), true, \(Self.now)) ON CONFLICT DO NOTHING",
                        [keys[index], capacity])
                    let row = try db.query("SELECT tokens, updated, \(Self.now) FROM limit_buckets WHERE key = $1 FOR UPDATE", [keys[index]])[0]
                    let tokens: Double = try row.value(0), updated: Double = try row.value(1), now: Double = try row.value(2)
                    buckets[index] = (min(capacity, tokens + max(0, now - updated) / interval), now)
                }
                let allowed = Self.allows(keys.indices.map { buckets[$0]!.tokens }, cost: cost)
                var left: [Double] = []
                for index in keys.indices {
                    let bucket = buckets[index]!
                    let tokens = allowed ? min(capacity, bucket.tokens - cost) : bucket.tokens
                    left.append(tokens)
                    try db.query(
                        "UPDATE limit_buckets SET tokens = $2::float8, updated = $3::float8, allowed = $4, full_at = $5::float8 WHERE key = $1",
                        [keys[index], tokens, bucket.now, allowed, bucket.now + (capacity - tokens) * interval])
                }
                return LimitTake(allowed: allowed, tokens: left)
            }
        }
    }
}

extension PostgresStore {
    /// The limits' token buckets, shared by every instance on this database (`limit_buckets`).
    public var limitCounters: any LimitCounters { PostgresLimitCounters(store: self) }
}
