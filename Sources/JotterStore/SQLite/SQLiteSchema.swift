/// The SQLite schema: forward migrations, applied in order at start-up in one transaction.
///
/// `schema_version` holds one row with the version of the last migration applied. A database
/// whose version is above `current` was written by a newer jotter and is refused before
/// anything — not even the journal mode — is changed.
enum SQLiteSchema {
    /// Migration `i` takes the schema from version `i` to `i + 1`. Append only; never edit one
    /// that has shipped.
    static let migrations: [String] = [
        // 1: notes, their full-text index, events.
        """
        CREATE TABLE notes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,   -- AUTOINCREMENT: ids are never reused
            body TEXT NOT NULL,
            created_at INTEGER NOT NULL,            -- Unix seconds, UTC
            updated_at INTEGER NOT NULL,
            version INTEGER NOT NULL
        );
        -- External-content FTS5 index over notes.body, kept in step by the triggers below (so in
        -- the same transaction as every change to notes, whoever makes it).
        CREATE VIRTUAL TABLE notes_fts USING fts5(
            body, content = 'notes', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER notes_fts_after_insert AFTER INSERT ON notes BEGIN
            INSERT INTO notes_fts(rowid, body) VALUES (new.id, new.body);
        END;
        CREATE TRIGGER notes_fts_after_delete AFTER DELETE ON notes BEGIN
            INSERT INTO notes_fts(notes_fts, rowid, body) VALUES ('delete', old.id, old.body);
        END;
        CREATE TRIGGER notes_fts_after_update AFTER UPDATE OF body ON notes
        WHEN old.body IS NOT new.body BEGIN
            INSERT INTO notes_fts(notes_fts, rowid, body) VALUES ('delete', old.id, old.body);
            INSERT INTO notes_fts(rowid, body) VALUES (new.id, new.body);
        END;
        -- Change events, trimmed to the backlog size; AUTOINCREMENT keeps ids growing after trims.
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,                     -- note.created | note.updated | note.deleted
            note_id INTEGER NOT NULL,
            note_body TEXT NOT NULL,
            note_created_at INTEGER NOT NULL,
            note_updated_at INTEGER NOT NULL,
            note_version INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        );
        """,
        // 2: uploads, optionally attached to a note (deleted with it, by the writer).
        """
        CREATE TABLE uploads (
            id TEXT PRIMARY KEY,                    -- random, chosen by the server; the file is uploads/<id>
            filename TEXT NOT NULL,                 -- the client's name, cleaned: metadata only
            content_type TEXT NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            note_id INTEGER                         -- NULL: not attached
        );
        CREATE INDEX uploads_by_note ON uploads (note_id) WHERE note_id IS NOT NULL;
        """,
        // 3: users and their credentials; every note, upload and event belongs to one user.
        // Existing rows get owner 0 ("unclaimed"): the first user created takes them over.
        """
        CREATE TABLE users (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE COLLATE NOCASE,
            password_hash TEXT NOT NULL,            -- Argon2id, libsodium's crypto_pwhash_str format
            is_admin INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL
        );
        CREATE TABLE credentials (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id INTEGER NOT NULL,
            kind TEXT NOT NULL,                     -- token | session
            label TEXT NOT NULL,
            digest BLOB NOT NULL UNIQUE,            -- SHA-256 of the secret; the secret is never stored
            created_at INTEGER NOT NULL,
            last_used_at INTEGER,
            expires_at INTEGER,
            revoked_at INTEGER
        );
        CREATE INDEX credentials_by_user ON credentials (user_id, kind);
        ALTER TABLE notes ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE uploads ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE events ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX notes_by_owner ON notes (owner, id);
        CREATE INDEX uploads_by_owner ON uploads (owner);
        CREATE INDEX events_by_owner ON events (owner, id);
        """,
        // 4: Idempotency-Key answers (IdempotencyStore), shared by every request of the owner.
        """
        CREATE TABLE idempotency_keys (
            owner INTEGER NOT NULL,
            key TEXT NOT NULL,                      -- the request's path, a space, the client's key
            fingerprint BLOB NOT NULL,              -- SHA-256 of what makes two requests the same
            claimed_at INTEGER NOT NULL,            -- Unix seconds, UTC
            expires_at INTEGER NOT NULL,            -- claimed: claimed_at + lease; answered: + 24 h
            status INTEGER,                         -- NULL: claimed, not answered yet
            head TEXT,
            body BLOB,                              -- NULL once answered: kept as a reference (location)
            location TEXT,
            bytes INTEGER NOT NULL DEFAULT 0,       -- head + body, counted against the owner's budget
            PRIMARY KEY (owner, key)
        ) WITHOUT ROWID;
        CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
        """,
        // 5: resumable uploads in progress (IETF draft, tus); their bytes are partial/<id>. On
        // completion the row becomes an ordinary upload with the same id.
        """
        CREATE TABLE partial_uploads (
            id TEXT PRIMARY KEY,                    -- random, chosen by the server, as an upload's
            owner INTEGER NOT NULL,
            protocol TEXT NOT NULL,                 -- ietf-3 … ietf-8 | tus | raw
            filename TEXT NOT NULL,
            content_type TEXT NOT NULL,
            length INTEGER,                         -- declared total; NULL while unknown
            upload_offset INTEGER NOT NULL,         -- bytes kept as of the last request's end
            note_id INTEGER,                        -- attached to on completion
            expected_sha256 TEXT,                   -- from Repr-Digest, checked on completion
            backend_state TEXT NOT NULL DEFAULT '', -- an S3 multipart upload's id and parts
            created_at INTEGER NOT NULL,            -- Unix seconds, UTC
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX partial_uploads_by_owner ON partial_uploads (owner);
        CREATE INDEX partial_uploads_by_expiry ON partial_uploads (expires_at);
        """,
        // 6: where deleted uploads were, so that a listing's cursor naming one goes on after its
        // place (`UploadRows.page`); kept a week.
        """
        CREATE TABLE removed_uploads (
            id TEXT PRIMARY KEY,
            owner INTEGER NOT NULL,
            position INTEGER NOT NULL,              -- its rowid in uploads
            removed_at INTEGER NOT NULL             -- Unix seconds, UTC
        ) WITHOUT ROWID;
        CREATE INDEX removed_uploads_by_time ON removed_uploads (removed_at);
        """,
        // 7: revisions: every committed version of a note keeps its body (`NoteRevision`),
        // thinned by the retention sweep. A note's current version is kept from the start.
        """
        CREATE TABLE note_revisions (
            note_id INTEGER NOT NULL,
            version INTEGER NOT NULL,
            owner INTEGER NOT NULL,
            body TEXT NOT NULL,
            size INTEGER NOT NULL,                  -- the body's UTF-8 bytes
            created_at INTEGER NOT NULL,            -- Unix seconds, UTC: when the version committed
            merge_base INTEGER,                     -- the base version, when a merge made it
            PRIMARY KEY (note_id, version)
        );
        CREATE INDEX note_revisions_by_time ON note_revisions (created_at);
        INSERT INTO note_revisions (note_id, version, owner, body, size, created_at)
            SELECT id, version, owner, body, length(CAST(body AS BLOB)), updated_at FROM notes;
        """,
        // 8: the trash: a deleted note's row moves here; its revisions and its attachments'
        // rows stay under its id until it is restored or leaves the trash.
        """
        CREATE TABLE trashed_notes (
            id INTEGER PRIMARY KEY,                 -- the note's id, its again when restored
            owner INTEGER NOT NULL,
            body TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            version INTEGER NOT NULL,
            deleted_at INTEGER NOT NULL             -- Unix seconds, UTC
        );
        CREATE INDEX trashed_notes_by_owner ON trashed_notes (owner, deleted_at);
        CREATE INDEX trashed_notes_by_time ON trashed_notes (deleted_at);
        """,
        // 9: the change feed (`NoteFeed`): one row per note ever made, written with every event
        // (`NoteWriter.appendEvent`), `seq` that event's id; a deleted note's row is a tombstone
        // until `FeedRetention` prunes it, which raises `feed_marks.pruned_through`. Existing
        // notes get distinct places up to the last event id (in order of their last event kept,
        // then of updated_at), and the horizon is that id: a cursor from before is walked from
        // the start. Events keep a merge's base version.
        """
        CREATE TABLE note_changes (
            note_id INTEGER PRIMARY KEY,
            owner INTEGER NOT NULL,
            seq INTEGER NOT NULL,                   -- the id of the note's latest event
            version INTEGER NOT NULL,
            deleted INTEGER NOT NULL,               -- 1: the latest event is note.deleted (a tombstone)
            changed_at INTEGER NOT NULL             -- Unix seconds, UTC: when that event was made
        );
        CREATE INDEX note_changes_by_owner ON note_changes (owner, seq);
        CREATE INDEX note_changes_tombstones ON note_changes (changed_at) WHERE deleted = 1;
        CREATE TABLE feed_marks (
            one INTEGER PRIMARY KEY CHECK (one = 1),
            pruned_through INTEGER NOT NULL         -- the newest seq pruned (or before the feed began)
        );
        INSERT INTO feed_marks (one, pruned_through) VALUES (1, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0));
        INSERT INTO note_changes (note_id, owner, seq, version, deleted, changed_at)
            SELECT n.id, n.owner, row_number() OVER (ORDER BY e.last NULLS FIRST, n.updated_at, n.id), n.version, 0, n.updated_at
            FROM notes AS n LEFT JOIN (SELECT note_id, max(id) AS last FROM events GROUP BY note_id) AS e ON e.note_id = n.id;
        ALTER TABLE events ADD COLUMN note_merge_base INTEGER;
        """,
        // 10: a claim names the store instance that made it (`SQLiteInstance`): once that
        // instance is gone, an unanswered claim is taken over instead of waiting for its lease.
        """
        ALTER TABLE idempotency_keys ADD COLUMN claimer INTEGER;
        """,
        // 11: the trash's order within a second: `deleted_seq` is the id of the note.deleted
        // event, so of two notes deleted in one second the later deletion comes first (not the
        // later-made note). Notes trashed before take their tombstone's place in the feed (or,
        // pruned from it, their note.deleted event's id while the backlog holds it).
        // `trash_places`: where notes restored or purged were in that order, kept a week, so a
        // listing's cursor naming one goes on after its place (`TrashRows.page`).
        """
        ALTER TABLE trashed_notes ADD COLUMN deleted_seq INTEGER NOT NULL DEFAULT 0;
        UPDATE trashed_notes SET deleted_seq = coalesce(
            (SELECT seq FROM note_changes WHERE note_id = trashed_notes.id AND deleted = 1),
            (SELECT max(id) FROM events WHERE note_id = trashed_notes.id AND kind = 'note.deleted'), 0);
        DROP INDEX trashed_notes_by_owner;
        CREATE INDEX trashed_notes_by_owner ON trashed_notes (owner, deleted_at, deleted_seq);
        CREATE TABLE trash_places (
            id INTEGER PRIMARY KEY,                 -- the note's id
            owner INTEGER NOT NULL,
            deleted_at INTEGER NOT NULL,
            deleted_seq INTEGER NOT NULL,
            left_at INTEGER NOT NULL                -- Unix seconds, UTC: when it left the trash
        );
        CREATE INDEX trash_places_by_time ON trash_places (left_at);
        """,
        // 12: tus's Upload-Metadata as the creation request sent it (NULL: none was sent), which
        // every HEAD answers; the completed upload keeps it. Bounded by the request-head limit.
        """
        ALTER TABLE partial_uploads ADD COLUMN tus_metadata TEXT;
        ALTER TABLE uploads ADD COLUMN tus_metadata TEXT;
        """,
    ]

    /// The schema version this binary writes and understands.
    static var current: Int64 { Int64(migrations.count) }

    /// Checks the version, switches to WAL and migrates to `current`; says what it migrated.
    ///
    /// - Throws: `StoreError.newerSchema` (database untouched) or `.notJotterDatabase`.
    static func prepare(_ db: SQLiteConnection, fileName: String) throws(StoreError) -> SchemaMigration? {
        // Look before touching: a read changes nothing in the file.
        let found = try storedVersion(db, fileName: fileName)
        guard found <= current else { throw .newerSchema(file: fileName, found: found, supported: current) }

        let mode = try db.first("PRAGMA journal_mode = WAL") { $0.string(0) }
        guard mode?.lowercased() == "wal" else {
            throw .sqlite(code: 1, message: "could not switch \(fileName) to WAL mode (got \(mode ?? "nothing"))")
        }
        guard found < current else { return nil }

        try db.run("BEGIN IMMEDIATE")
        do throws(StoreError) {
            // Another process may have migrated between our look and the lock: look again.
            let version = try storedVersion(db, fileName: fileName)
            guard version <= current else { throw StoreError.newerSchema(file: fileName, found: version, supported: current) }
            guard version < current else {
                try db.run("COMMIT")
                return nil
            }
            if version == 0 {
                try db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                try db.run("INSERT INTO schema_version (version) VALUES (0)")
            }
            for next in Int(version)..<migrations.count {
                try db.execute(migrations[next])
            }
            try db.run("UPDATE schema_version SET version = ?", [.integer(current)])
            try db.run("COMMIT")
            return SchemaMigration(from: version, to: current)
        } catch {
            if !db.isAutocommit { try? db.run("ROLLBACK") }
            throw error
        }
    }

    /// The stored schema version; 0 for an empty database.
    static func storedVersion(_ db: SQLiteConnection, fileName: String) throws(StoreError) -> Int64 {
        let hasVersionTable =
            try db.first(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ) { _ in true } ?? false
        if hasVersionTable {
            return try db.first("SELECT version FROM schema_version") { $0.int64(0) } ?? 0
        }
        let otherTables =
            try db.first(
                "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            ) { $0.int64(0) } ?? 0
        guard otherTables == 0 else { throw .notJotterDatabase(file: fileName) }
        return 0
    }
}
