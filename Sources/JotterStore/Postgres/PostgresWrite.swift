import JotterPostgres

/// One write transaction of the PostgreSQL store: its connection, its clock, the events it
/// appended (each takes the next `seq` of the transaction) and the upload blobs to delete once
/// it has committed. Made afresh for every attempt, so a retried transaction starts clean.
final class PostgresWrite {
    let db: PostgresConnection
    /// Unix seconds, UTC, for every row this transaction stamps.
    let now: Int64
    /// Events appended so far (the last `seq` used).
    private(set) var events = 0
    /// Uploads whose rows this transaction deleted: their blobs go once it commits.
    var removedUploads: [String] = []

    init(db: PostgresConnection, now: Int64) {
        self.db = db
        self.now = now
    }

    /// The `seq` the next event will take, not yet taken (the statement may append nothing).
    func peekSeq() -> Int { events + 1 }

    /// Marks the peeked `seq` as used.
    func takeSeq() { events += 1 }

    /// Takes the next `seq`.
    func nextSeq() -> Int {
        events += 1
        return events
    }
}
