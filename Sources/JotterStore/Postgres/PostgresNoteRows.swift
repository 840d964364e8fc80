import JotterPostgres
import JotterSystem

/// The note, search and event statements of the PostgreSQL store.
///
/// Every statement is fixed text with `$n` parameters (prepared once per connection); a listing
/// picks one of four texts by order and by whether it searches. Writes are single statements
/// that change the note and append its event together (`UPDATE … RETURNING` feeding an
/// `INSERT` in one `WITH`), conditional on the version in their `WHERE`: no read-then-write
/// race, so READ COMMITTED is enough.
enum PostgresNoteRows {
    static let columns = "id, body, created_at, updated_at, version"

    /// A `NoteRecord` from the columns `id, body, created_at, updated_at, version` at `first`.
    static func record(_ row: PostgresRow, from first: Int = 0) throws -> NoteRecord {
        NoteRecord(
            id: try row.value(first), body: PostgresText.decode(try row.value(first + 1)), createdAt: try row.value(first + 2),
            updatedAt: try row.value(first + 3), version: try row.value(first + 4))
    }

    static func note(id: Int64, owner: Owner, on db: PostgresConnection) throws -> NoteRecord? {
        try db.query("SELECT \(columns) FROM notes WHERE id = $1 AND owner = $2", [id, owner.id]).first.map { try record($0) }
    }

    /// The note, its row locked until the transaction ends: no other write of it, on any
    /// instance, comes between this read and the transaction's own write.
    static func lockedNote(id: Int64, owner: Owner, on db: PostgresConnection) throws -> NoteRecord? {
        try db.query("SELECT \(columns) FROM notes WHERE id = $1 AND owner = $2 FOR UPDATE", [id, owner.id]).first.map { try record($0) }
    }

    // MARK: - Listing

    // `before`: the body bytes of the notes ahead of the one before this one. A row is read while
    // that is under the budget: once the notes read hold the budget, one more is read, no more.
    private static func listing(_ filter: String, _ order: String) -> String {
        """
        SELECT \(columns) FROM (
            SELECT \(columns), coalesce(sum(octet_length(body)) OVER (ORDER BY id \(order) ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS before
            FROM (SELECT \(columns) FROM notes WHERE \(filter) ORDER BY id \(order) LIMIT $3) AS page
        ) AS counted WHERE before < $4 ORDER BY id \(order)
        """
    }
    /// By last change (`NoteOrder.recentlyUpdated`): the feed's rows of live notes, newest change
    /// first; the cursor is the change's event id, the last column.
    private static func recentlyUpdated(_ filter: String) -> String {
        """
        SELECT \(columns), seq FROM (
            SELECT \(columns), seq, coalesce(sum(octet_length(body)) OVER (ORDER BY seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS before
            FROM (SELECT n.id, n.body, n.created_at, n.updated_at, n.version, c.seq
                  FROM note_changes AS c JOIN notes AS n ON n.id = c.note_id AND n.owner = c.owner
                  WHERE c.owner = $1 AND c.seq < $2 \(filter) ORDER BY c.seq DESC LIMIT $3) AS page
        ) AS counted WHERE before < $4 ORDER BY seq DESC
        """
    }
    private static let byUpdate = recentlyUpdated("")
    private static let searchByUpdate = recentlyUpdated("AND n.search @@ jotter_search_query(string_to_array($5, E'\\n'))")
    private static let newestFirst = listing("owner = $1 AND id < $2", "DESC")
    private static let oldestFirst = listing("owner = $1 AND id > $2", "ASC")
    private static let searchNewestFirst = listing("owner = $1 AND id < $2 AND search @@ jotter_search_query(string_to_array($5, E'\\n'))", "DESC")
    private static let searchOldestFirst = listing("owner = $1 AND id > $2 AND search @@ jotter_search_query(string_to_array($5, E'\\n'))", "ASC")

    static func page(_ query: NoteQuery, owner: Owner, on db: PostgresConnection) throws -> [NoteRecord] {
        var page = NotePage(capacity: query.limit)
        try self.page(query, owner: owner, into: &page, on: db)
        return page.records
    }

    /// The same page, its rows copied into `page` as bytes (no String per note).
    static func page(_ query: NoteQuery, owner: Owner, into page: inout NotePage, on db: PostgresConnection) throws {
        guard query.limit > 0 else { return }
        let cursor: Int64 =
            switch query.order {
            case .newestFirst, .recentlyUpdated: query.after ?? .max
            case .oldestFirst: query.after ?? .min
            }
        let budget = Int64(query.maxBodyBytes ?? Int.max)
        let rows: PostgresResult
        if let words = FullTextQuery.words(of: query.search) {
            guard !words.isEmpty else { return }
            // Words never hold a newline (they are split at white space): one parameter carries them all.
            let sql =
                switch query.order {
                case .newestFirst: searchNewestFirst
                case .oldestFirst: searchOldestFirst
                case .recentlyUpdated: searchByUpdate
                }
            rows = try db.query(sql, [owner.id, cursor, query.limit, budget, words.joined(separator: "\n")])
        } else {
            let sql =
                switch query.order {
                case .newestFirst: newestFirst
                case .oldestFirst: oldestFirst
                case .recentlyUpdated: byUpdate
                }
            rows = try db.query(sql, [owner.id, cursor, query.limit, budget])
        }
        let byUpdate = query.order == .recentlyUpdated
        for index in 0..<rows.count {
            let row = rows[index]
            try append(row, position: byUpdate ? try row.int64(5) : nil, to: &page)
        }
    }

    /// Copies the note of a row of `id, body, created_at, updated_at, version` (from column
    /// `first`) into `page`, its body as the row's bytes (decoded only when it may hold an
    /// encoded NUL: `PostgresText`); the body's size.
    @discardableResult
    static func append(_ row: PostgresRow, from first: Int = 0, position: Int64? = nil, to page: inout NotePage) throws -> Int {
        let id = try row.int64(first), createdAt = try row.int64(first + 2), updatedAt = try row.int64(first + 3)
        let version = try row.int64(first + 4)
        return try row.withBytes(first + 1) { stored in
            let stored = stored ?? UnsafeRawBufferPointer(start: nil, count: 0)
            guard PostgresText.mayBeEncoded(stored) else {
                page.append(id: id, body: stored, createdAt: createdAt, updatedAt: updatedAt, version: version, position: position)
                return stored.count
            }
            var body = PostgresText.decode(String(decoding: stored, as: UTF8.self))
            return body.withUTF8 {
                page.append(
                    id: id, body: UnsafeRawBufferPointer($0), createdAt: createdAt, updatedAt: updatedAt, version: version,
                    position: position)
                return $0.count
            }
        }
    }

    // MARK: - Writes

    /// The event an `INSERT` appends for the note row `n` (a `WITH` name), as `($seq, owner, kind)`
    /// (SQL), with the merge's base version (SQL, `NULL`: none); and the note's row in the change
    /// feed (`NoteFeed`) moved to it. Every write that changes a note appends its event here,
    /// so the feed misses none.
    private static func appendEvent(seq: String, owner: String, kind: String, mergeBase: String = "NULL::bigint") -> String {
        """
        e AS (INSERT INTO events (seq, owner, kind, note_id, note_body, note_created_at, note_updated_at, note_version, note_merge_base,
                                  created_at)
              SELECT \(seq), \(owner), \(kind), id, body, created_at, updated_at, version, \(mergeBase), floor(extract(epoch FROM now()))::bigint FROM n
              RETURNING id, created_at, owner, kind, note_id, note_version),
        c AS (INSERT INTO note_changes (note_id, owner, seq, version, deleted, changed_at)
              SELECT note_id, owner, id, note_version, kind = 'note.deleted', created_at FROM e
              ON CONFLICT (note_id) DO UPDATE SET owner = excluded.owner, seq = excluded.seq, version = excluded.version,
                  deleted = excluded.deleted, changed_at = excluded.changed_at)
        """
    }

    /// Keeps the note row `n` (a `WITH` name) as a revision: `size` its body's UTF-8 bytes, `mergeBase` (both SQL).
    private static func keepRevision(owner: String, size: String, mergeBase: String) -> String {
        """
        r AS (INSERT INTO note_revisions (note_id, version, owner, body, size, created_at, merge_base)
              SELECT id, version, \(owner), body, \(size), updated_at, \(mergeBase) FROM n)
        """
    }

    // $1 owner, $2 body, $3 now, $4 seq, $5 the body's UTF-8 bytes.
    private static let create = """
        WITH n AS (INSERT INTO notes (owner, body, created_at, updated_at, version) VALUES ($1, $2, $3, $3, 1) RETURNING \(columns)),
        \(keepRevision(owner: "$1", size: "$5::bigint", mergeBase: "NULL")),
        \(appendEvent(seq: "$4", owner: "$1", kind: "'note.created'"))
        SELECT n.id, n.body, n.created_at, n.updated_at, n.version, e.id, e.created_at FROM n, e
        """
    // $1 body (NULL: a touch), $2 now, $3 id, $4 owner, $5 the version required (NULL: any), $6 seq, $7 the body's
    // UTF-8 bytes (NULL: a touch, the previous revision's), $8 the merge base (NULL: none).
    private static let update = """
        WITH n AS (UPDATE notes SET body = coalesce($1::text, body), updated_at = $2, version = version + 1
                   WHERE id = $3 AND owner = $4 AND ($5::bigint IS NULL OR version = $5::bigint) RETURNING \(columns)),
        \(keepRevision(owner: "$4", size: """
            coalesce($7::bigint, (SELECT p.size FROM note_revisions AS p WHERE p.note_id = n.id AND p.version = n.version - 1),
                     octet_length(n.body))
            """, mergeBase: "$8::bigint")),
        \(appendEvent(seq: "$6", owner: "$4", kind: "'note.updated'", mergeBase: "$8::bigint"))
        SELECT n.id, n.body, n.created_at, n.updated_at, n.version, e.id, e.created_at FROM n, e
        """
    // $1 id, $2 owner, $3 the version required (NULL: any), $4 seq. Into the trash.
    private static let delete = """
        WITH n AS (DELETE FROM notes WHERE id = $1 AND owner = $2 AND ($3::bigint IS NULL OR version = $3::bigint) RETURNING \(columns)),
        \(appendEvent(seq: "$4", owner: "$2", kind: "'note.deleted'")),
        t AS (INSERT INTO trashed_notes (id, owner, body, created_at, updated_at, version, deleted_at, deleted_seq)
              SELECT n.id, $2::bigint, n.body, n.created_at, n.updated_at, n.version, e.created_at, e.id FROM n, e),
        p AS (DELETE FROM trash_places WHERE id IN (SELECT id FROM n))
        SELECT n.id, n.body, n.created_at, n.updated_at, n.version, e.id, e.created_at FROM n, e
        """

    static func create(body: String, owner: Owner, in write: PostgresWrite) throws -> (NoteRecord, NoteEvent) {
        let row = try write.db.query(create, [owner.id, PostgresText.encode(body), write.now, write.nextSeq(), body.utf8.count])[0]
        return try changed(row, .created)
    }

    /// Updates (or with `body` nil touches) the note; nil when no row matched `id`, `owner` and
    /// `ifVersion` (the caller reads the note to tell which).
    static func update(
        id: Int64, body: String?, ifVersion: Int64?, mergeBase: Int64? = nil, owner: Owner,
        in write: PostgresWrite
    ) throws -> (NoteRecord, NoteEvent)? {
        let seq = write.peekSeq()
        guard
            let row = try write.db.query(
                update,
                [
                    body.map(PostgresText.encode), write.now, id, owner.id, ifVersion, seq,
                    body?.utf8.count, mergeBase,
                ]
            ).first
        else { return nil }
        write.takeSeq()
        return try changed(row, .updated, mergeBase: mergeBase)
    }

    static func delete(id: Int64, ifVersion: Int64?, owner: Owner, in write: PostgresWrite) throws -> (NoteRecord, NoteEvent)? {
        let seq = write.peekSeq()
        guard let row = try write.db.query(delete, [id, owner.id, ifVersion, seq]).first else { return nil }
        write.takeSeq()
        return try changed(row, .deleted)
    }

    // MARK: - Trash

    private static let trashedColumns = "id, body, created_at, updated_at, version, deleted_at"

    private static func trashed(_ row: PostgresRow) throws -> TrashedNote {
        TrashedNote(note: try record(row), deletedAt: try row.value(5))
    }

    static func trashedNote(id: Int64, owner: Owner, on db: PostgresConnection) throws -> TrashedNote? {
        try db.query("SELECT \(trashedColumns) FROM trashed_notes WHERE id = $1 AND owner = $2", [id, owner.id]).first.map(trashed)
    }

    /// Most recently deleted first (within a second, the later deletion first); after the
    /// trashed note `after`, or after its place when it left the trash in the last week (nil:
    /// `after` names neither).
    static func trashedNotes(limit: Int, after: Int64?, owner: Owner, on db: PostgresConnection) throws -> [TrashedNote]? {
        var cursor: (deletedAt: Int64, seq: Int64, id: Int64) = (.max, .max, .max)
        if let after {
            guard
                let row = try db.query(
                    """
                    SELECT deleted_at, deleted_seq FROM trashed_notes WHERE id = $1 AND owner = $2
                    UNION ALL SELECT deleted_at, deleted_seq FROM trash_places WHERE id = $1 AND owner = $2 AND left_at >= $3
                    """, [after, owner.id, WallClock.seconds() - trashPlaceKept]
                ).first
            else { return nil }
            cursor = (try row.int64(0), try row.int64(1), after)
        }
        return try db.query(
            """
            SELECT \(trashedColumns) FROM trashed_notes
            WHERE owner = $1 AND (deleted_at, deleted_seq, id) < ($2, $3, $4)
            ORDER BY deleted_at DESC, deleted_seq DESC, id DESC LIMIT $5
            """, [owner.id, cursor.deletedAt, cursor.seq, cursor.id, max(0, limit)]
        ).map(trashed)
    }

    /// How long the place of a note that left the trash is kept for cursors (as SQLite's).
    private static let trashPlaceKept = TrashRows.placeKept

    /// Keeps note `id`'s place in the trash's order for a week as it leaves the trash (restored
    /// or purged), and forgets older places.
    private static func keepTrashPlace(id: Int64, owner: Owner, in write: PostgresWrite) throws {
        try write.db.query("DELETE FROM trash_places WHERE left_at < $1", [write.now - trashPlaceKept])
        try write.db.query(
            """
            INSERT INTO trash_places (id, owner, deleted_at, deleted_seq, left_at)
            SELECT id, owner, deleted_at, deleted_seq, $3 FROM trashed_notes WHERE id = $1 AND owner = $2
            ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, deleted_at = excluded.deleted_at,
                deleted_seq = excluded.deleted_seq, left_at = excluded.left_at
            """, [id, owner.id, write.now])
    }

    // $1 id, $2 owner, $3 now, $4 seq: back from the trash at a new version, kept as a revision; `note.created`.
    private static let restoreTrashed = """
        WITH t AS (DELETE FROM trashed_notes WHERE id = $1 AND owner = $2 RETURNING id, body, created_at, version),
        n AS (INSERT INTO notes (id, owner, body, created_at, updated_at, version) OVERRIDING SYSTEM VALUE
              SELECT id, $2::bigint, body, created_at, $3::bigint, version + 1 FROM t RETURNING \(columns)),
        \(keepRevision(owner: "$2", size: """
            coalesce((SELECT p.size FROM note_revisions AS p WHERE p.note_id = n.id AND p.version = n.version - 1), octet_length(n.body))
            """, mergeBase: "NULL")),
        \(appendEvent(seq: "$4", owner: "$2", kind: "'note.created'"))
        SELECT n.id, n.body, n.created_at, n.updated_at, n.version, e.id, e.created_at FROM n, e
        """

    static func restoreTrashed(id: Int64, owner: Owner, in write: PostgresWrite) throws -> (NoteRecord, NoteEvent)? {
        let seq = write.peekSeq()
        try keepTrashPlace(id: id, owner: owner, in: write)
        guard let row = try write.db.query(restoreTrashed, [id, owner.id, write.now, seq]).first else { return nil }
        write.takeSeq()
        return try changed(row, .created)
    }

    /// Out of the trash for good, if it is there at `ifVersion` (nil: any): the row, its
    /// revisions, its attachments (rows now, blobs once committed).
    static func purgeTrashed(id: Int64, ifVersion: Int64? = nil, owner: Owner, in write: PostgresWrite) throws -> TrashPurge {
        if let ifVersion {
            // Locked: a restore waits for this transaction, so the version checked is the one removed.
            let current = try write.db.query("SELECT \(trashedColumns) FROM trashed_notes WHERE id = $1 AND owner = $2 FOR UPDATE", [id, owner.id])
            guard let found = try current.first.map(trashed) else { return .notFound }
            guard found.note.version == ifVersion else { return .versionMismatch(current: found) }
        }
        try keepTrashPlace(id: id, owner: owner, in: write)
        guard
            let row = try write.db.query(
                "DELETE FROM trashed_notes WHERE id = $1 AND owner = $2 RETURNING \(trashedColumns)",
                [id, owner.id]
            ).first
        else { return .notFound }
        try write.db.query("DELETE FROM note_revisions WHERE note_id = $1 AND owner = $2", [id, owner.id])
        try PostgresUploadRows.keepPlaces(where: "note_id = $1 AND owner = $2", [id, owner.id], in: write)
        write.removedUploads += try write.db.query(
            "DELETE FROM uploads WHERE note_id = $1 AND owner = $2 RETURNING id",
            [id, owner.id]
        ).map { try $0.value(0) }
        return .purged(try trashed(row))
    }

    private static func changed(_ row: PostgresRow, _ kind: NoteEventKind, mergeBase: Int64? = nil) throws -> (NoteRecord, NoteEvent) {
        let note = try record(row)
        return (note, NoteEvent(id: try row.value(5), kind: kind, note: note, at: try row.value(6), mergeBase: mergeBase))
    }

    // MARK: - Revisions

    /// Newest first, without bodies; nil when `owner` has no such note live (`inTrash` false)
    /// or in the trash.
    static func revisions(noteID: Int64, before: Int64?, limit: Int, owner: Owner, inTrash: Bool, on db: PostgresConnection) throws -> [NoteRevision]?
    {
        let rows = try db.query(
            """
            SELECT r.version, r.created_at, r.size, r.merge_base
            FROM \(inTrash ? "trashed_notes" : "notes") AS n
            LEFT JOIN LATERAL (SELECT version, created_at, size, merge_base FROM note_revisions
                               WHERE note_id = n.id AND owner = n.owner AND version < $3 ORDER BY version DESC LIMIT $4) AS r ON true
            WHERE n.id = $1 AND n.owner = $2 ORDER BY r.version DESC
            """, [noteID, owner.id, before ?? Int64.max, max(0, limit)])
        guard rows.count > 0 else { return nil }
        return try rows.compactMap { row in
            guard let version: Int64 = try row.value(0) else { return nil }
            return NoteRevision(
                noteID: noteID, version: version, createdAt: try row.value(1), size: try row.value(2),
                mergeBase: try row.value(3), body: nil)
        }
    }

    /// Revision `version` of a note `owner` has anywhere (a merge's base, a restore), or only
    /// live (`inTrash` false) or only in the trash.
    static func revision(noteID: Int64, version: Int64, owner: Owner, inTrash: Bool? = nil, on db: PostgresConnection) throws -> NoteRevision? {
        let place = inTrash.map { "AND EXISTS (SELECT 1 FROM \($0 ? "trashed_notes" : "notes") WHERE id = $1 AND owner = $3)" } ?? ""
        return try db.query(
            """
            SELECT created_at, size, merge_base, body FROM note_revisions WHERE note_id = $1 AND version = $2 AND owner = $3 \(place)
            """, [noteID, version, owner.id]
        ).first.map { row in
            NoteRevision(
                noteID: noteID, version: version, createdAt: try row.value(0), size: try row.value(1),
                mergeBase: try row.value(2), body: PostgresText.decode(try row.value(3)))
        }
    }

    private static let thin = "DELETE FROM note_revisions WHERE (note_id, version) IN (\(RevisionRows.thinned { "$\($0)::bigint" }))"

    /// Deletes the revisions `retention` lets go as of `now` (`RevisionRows.thinned`); how many.
    static func thinRevisions(_ retention: RevisionRetention, now: Int64, on db: PostgresConnection) throws -> Int {
        Int(try db.query(thin, [now - retention.keepAll, now - retention.daily]).affectedRows)
    }

    // MARK: - Events

    /// `below`: event ids of transactions every snapshot now sees as ended (committed or not),
    /// `((pg_snapshot_xmin + xid_offset) << 16)`. Nothing can appear beneath it later. The
    /// offset is read as a sub-select (an InitPlan, run once per statement), not through
    /// `jotter_xid_offset()`, which the planner does not inline: an event-feed read (20,000
    /// events, none new) took 0.23 ms with the function, 0.145 ms so, 0.134 ms without an offset.
    static let horizon = "((pg_snapshot_xmin(pg_current_snapshot())::text::bigint + (SELECT xid_offset FROM event_marks)) << 16)"

    /// The last visible event id: the newest below the horizon, or the high-water mark of
    /// removed users' events once it is below the horizon too.
    private static let last = """
        greatest(CASE WHEN m.high_water < h.below THEN m.high_water ELSE 0 END,
                 coalesce((SELECT max(id) FROM events WHERE id < h.below), 0))
        """

    static let lastEventID = """
        WITH h AS (SELECT \(horizon) AS below) SELECT \(last) FROM event_marks AS m, h
        """

    // $1 owner, $2 after, $3 limit, $4 backlog. One statement, so one snapshot: the bounds and
    // the rows agree. `trimmed`: the newest id not kept — trimmed already, or beyond the
    // newest `backlog` (trimming catches up in the background).
    private static let replay = """
        WITH h AS (SELECT \(horizon) AS below),
        b AS (SELECT greatest(m.trimmed_through,
                              coalesce((SELECT id FROM events WHERE id < h.below ORDER BY id DESC OFFSET $4 LIMIT 1), 0)) AS trimmed,
                     \(last) AS last, h.below
              FROM event_marks AS m, h)
        SELECT b.trimmed, b.last, e.id, e.kind, e.note_id, e.note_body, e.note_created_at, e.note_updated_at, e.note_version,
               e.created_at, e.note_merge_base
        FROM b LEFT JOIN LATERAL (
            SELECT * FROM events WHERE owner = $1 AND id > $2 AND id < b.below AND $2 >= b.trimmed AND $2 <= b.last
            ORDER BY id LIMIT $3
        ) AS e ON true ORDER BY e.id
        """

    static func lastEventID(on db: PostgresConnection) throws -> Int64 {
        try db.query(lastEventID)[0].value(0)
    }

    /// `owner`'s events after `after`, or nil when they can't all be replayed.
    static func events(after: Int64, limit: Int, owner: Owner, backlog: Int, on db: PostgresConnection) throws -> [NoteEvent]? {
        guard after >= 0 else { return nil }
        let rows = try db.query(replay, [owner.id, after, max(0, limit), backlog])
        guard let bounds = rows.first else { return nil }
        let trimmed: Int64 = try bounds.value(0), last: Int64 = try bounds.value(1)
        guard after >= trimmed, after <= last else { return nil }
        return try rows.compactMap { row in
            guard let id: Int64 = try row.value(2) else { return nil }
            return NoteEvent(
                id: id, kind: NoteEventKind(rawValue: try row.value(3)) ?? .updated, note: try record(row, from: 4),
                at: try row.value(9), mergeBase: try row.value(10))
        }
    }

    /// Every owner's events after `after` below the horizon, oldest first: what the event feed delivers.
    static func feed(after: Int64, limit: Int, on db: PostgresConnection) throws -> [(NoteEvent, Owner)] {
        try db.query(
            """
            SELECT id, owner, kind, note_id, note_body, note_created_at, note_updated_at, note_version, created_at, note_merge_base
            FROM events WHERE id > $1 AND id < \(horizon) ORDER BY id LIMIT $2
            """, [after, limit]
        ).map { row in
            (
                NoteEvent(
                    id: try row.value(0), kind: NoteEventKind(rawValue: try row.value(2)) ?? .updated, note: try record(row, from: 3),
                    at: try row.value(8), mergeBase: try row.value(9)),
                Owner(id: try row.value(1))
            )
        }
    }

    // MARK: - Change feed

    /// The feed's bounds in the transaction's snapshot: the last visible event id, the horizon
    /// below which rows are read (as the event stream's), the newest pruned tombstone.
    private static let feedBounds = """
        WITH h AS (SELECT \(horizon) AS below) SELECT \(last), h.below, m.feed_pruned_through FROM event_marks AS m, h
        """

    // $1 owner, $2 after, $3 below, $4 limit, $5 budget: rows are read while the bodies before
    // the one before hold less than the budget (as a listing's).
    private static let feedRows = """
        SELECT note_id, seq, version, id, body, created_at, updated_at, note_version FROM (
            SELECT c.note_id, c.seq, c.version, n.id, n.body, n.created_at, n.updated_at, n.version AS note_version,
                   coalesce(sum(octet_length(n.body)) OVER (ORDER BY c.seq ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS before
            FROM (SELECT * FROM note_changes WHERE owner = $1 AND seq > $2 AND seq < $3 ORDER BY seq LIMIT $4) AS c
            LEFT JOIN notes AS n ON n.id = c.note_id AND n.owner = c.owner AND NOT c.deleted
        ) AS counted WHERE before < $5 ORDER BY seq
        """

    /// A page of `owner`'s change feed; run it in a repeatable-read transaction (one snapshot).
    static func changes(_ query: NoteFeedQuery, owner: Owner, on db: PostgresConnection) throws -> NoteFeedPage {
        let bounds = try db.query(feedBounds)[0]
        let head: Int64 = try bounds.value(0), below: Int64 = try bounds.value(1), pruned: Int64 = try bounds.value(2)
        let (after, walk) = NoteFeedPage.start(since: query.since, prunedThrough: pruned, head: head)
        guard query.limit > 0 else { return NoteFeedPage(walk: walk, head: head) }
        let rows = try db.query(feedRows, [owner.id, after, below, query.limit, Int64(query.maxBodyBytes ?? Int.max)])
        var entries: [NoteFeedEntry] = []
        entries.reserveCapacity(rows.count)
        var notes = NotePage(capacity: rows.count)
        for index in 0..<rows.count {
            let row = rows[index]
            let id: Int64? = try row.value(3)
            // A live note's body into the page's one buffer, as a listing's: no String.
            if id != nil { try append(row, from: 3, to: &notes) }
            entries.append(
                NoteFeedEntry(
                    noteID: try row.int64(0), seq: try row.int64(1), version: try row.int64(id == nil ? 2 : 7),
                    deleted: id == nil))
        }
        if !notes.isEmpty { notes.attachmentsByNote = try PostgresUploadRows.attachments(of: notes.notes.map(\.id), owner: owner, on: db) }
        return NoteFeedPage(entries: entries, notes: notes, walk: walk, head: max(head, entries.last?.seq ?? 0))
    }

    /// Prunes the tombstones older than `retention` as of `now`, raising the horizon; how many went.
    static func pruneFeed(_ retention: FeedRetention, now: Int64, on db: PostgresConnection) throws -> Int {
        let row = try db.query(
            """
            WITH gone AS (DELETE FROM note_changes WHERE deleted AND changed_at < $1 RETURNING seq),
            mark AS (UPDATE event_marks SET feed_pruned_through = greatest(feed_pruned_through, (SELECT max(seq) FROM gone))
                     WHERE EXISTS (SELECT 1 FROM gone))
            SELECT count(*) FROM gone
            """, [now - retention.tombstones])[0]
        return Int(try row.int64(0))
    }

    /// What a trim did: whether it deleted events (`cut`), and whether events beyond the
    /// backlog are left after it (`left`).
    struct Trim: Sendable, Equatable {
        var cut: Bool
        var left: Bool
    }

    /// Deletes the events beyond the newest `backlog` below the horizon, remembering the newest
    /// deleted id; one instance at a time (the others skip: it is not theirs to wait for).
    /// Events beyond the backlog are left when they are above the horizon (a transaction that
    /// began before they committed is still open, in any database of the cluster), when another
    /// instance held the trimming's lock, or when they arrived since the cut (a busy server):
    /// then the caller tries again later, with or without new events.
    @discardableResult
    static func trim(backlog: Int, on db: PostgresConnection) throws -> Trim {
        let cut = try db.query(
            """
            WITH lock AS MATERIALIZED (SELECT pg_try_advisory_xact_lock($2) AS got),
            cut AS MATERIALIZED (SELECT id FROM events, lock WHERE lock.got AND id < \(horizon) ORDER BY id DESC OFFSET $1 LIMIT 1),
            gone AS (DELETE FROM events WHERE id <= (SELECT id FROM cut)),
            mark AS (UPDATE event_marks SET trimmed_through = greatest(trimmed_through, (SELECT id FROM cut)) WHERE EXISTS (SELECT 1 FROM cut))
            SELECT EXISTS (SELECT 1 FROM cut)
            """, [backlog, trimLock])[0].value(0, as: Bool.self)
        let left = try db.query("SELECT EXISTS (SELECT 1 FROM events ORDER BY id DESC OFFSET $1)", [backlog])[0].value(0, as: Bool.self)
        return Trim(cut: cut, left: left)
    }

    /// The advisory lock the trimming holds.
    static let trimLock: Int64 = 0x6A6F_7474_6572_0002
}
