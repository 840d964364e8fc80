/// How the writer keeps the notes' full-text index (`notes_fts`, external content over
/// `notes.body`) in step: the schema's triggers make these same changes for any connection but
/// the writer's, which turns them off (`SQLiteConnection.disableTriggers`) and makes them itself
/// at the end of each group commit's transaction, before COMMIT.
///
/// Why: a trigger's write into an FTS5 table opens a statement savepoint, and FTS5 writes its
/// pending terms out as a new segment at every savepoint — one segment per note written. Held to
/// the end of the transaction, the changes of every write in a group commit go into one segment
/// (measured: 237k → 90k instructions per write in groups of 64; docs/benchmarks.md). Readers
/// see the index and the notes change in the same commit, as before.
enum FullTextIndex {
    private static let insert = "INSERT INTO notes_fts(rowid, body) VALUES (?, ?)"
    private static let delete = "INSERT INTO notes_fts(notes_fts, rowid, body) VALUES ('delete', ?, ?)"

    /// A new note (`notes_fts_after_insert`).
    static func added(id: Int64, body: String, on db: SQLiteConnection) {
        db.deferUntilCommit(insert, [.integer(id), .text(body)])
    }

    /// A deleted note, with the body it had (`notes_fts_after_delete`).
    static func removed(id: Int64, body: String, on db: SQLiteConnection) {
        db.deferUntilCommit(delete, [.integer(id), .text(body)])
    }

    /// A note whose body changed (`notes_fts_after_update`: nothing when it did not).
    static func changed(id: Int64, from old: String, to new: String, on db: SQLiteConnection) {
        guard old != new else { return }
        removed(id: id, body: old, on: db)
        added(id: id, body: new, on: db)
    }

    /// Every note of `owner`, about to be deleted: taken out of the index now, after what is
    /// deferred so far (which may concern them).
    static func removeAll(owner: Int64, on db: SQLiteConnection) throws(StoreError) {
        try db.runDeferred()
        try db.run("INSERT INTO notes_fts(notes_fts, rowid, body) SELECT 'delete', id, body FROM notes WHERE owner = ?", [.integer(owner)])
    }
}
