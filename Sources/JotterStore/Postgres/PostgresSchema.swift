import JotterPostgres

/// The PostgreSQL schema: forward migrations, versioned like the SQLite store's.
///
/// `schema_version` holds one row with the version of the last migration applied. Opening runs
/// the missing migrations in one transaction under a transaction-level advisory lock, so N
/// instances starting at once migrate once (the others wait, then find nothing to do). A
/// database whose version is above `current` was written by a newer jotter and is refused
/// before anything is changed.
enum PostgresSchema {
    /// The advisory lock key migrations run under ("jotter" in ASCII, then 1).
    static let migrationLock: Int64 = 0x6A6F_7474_6572_0001

    /// Migration `i` takes the schema from version `i` to `i + 1`. Append only.
    static let migrations: [String] = [
        // 1: everything the SQLite schema has at its version 3 (notes with full-text search,
        // events, uploads, users, credentials; every row owned).
        """
        -- Search: the body lower-cased, diacritics removed (decomposed, combining marks
        -- U+0300-U+036F dropped, composed again: what unicode61's remove_diacritics 2 does), cut
        -- into runs of letters and digits (every other character separates words, as in
        -- unicode61), each run a lexeme at its position. Built without PostgreSQL's parser,
        -- which splits runs it takes for numbers ('2e3x' -> '2e3', 'x'). Text escapes
        -- (PostgresText: U+FFFF and the character after it) separate words like NUL does.
        -- Left out, as to_tsvector leaves them out: words over 2046 bytes, and the words after
        -- the first 900 kB (a tsvector holds at most 1 MB).
        CREATE FUNCTION jotter_search_vector(body text) RETURNS tsvector
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            RETURN (SELECT coalesce(string_agg('''' || replace(replace(word, '\\', '\\\\'), '''', '''''') || ''':'
                                               || least(position, 16383), ' '), '')::tsvector
                    FROM (SELECT word, position, sum(octet_length(word) + 8) OVER (ORDER BY position) AS bytes
                          FROM regexp_split_to_table(
                                   normalize(regexp_replace(normalize(lower(regexp_replace(body, '\\uffff.', ' ', 'g')), NFD),
                                                            '[\\u0300-\\u036f]+', '', 'g'), NFC),
                                   '[^[:alnum:]]+') WITH ORDINALITY AS split(word, position)
                          WHERE word <> '' AND octet_length(word) <= 2046) AS words
                    WHERE bytes <= 900000);
        -- One search word: its words in a phrase, the last one a prefix ('a*b' -> 'a' <-> 'b':*);
        -- NULL when it has none.
        CREATE FUNCTION jotter_word_query(word text) RETURNS tsquery
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            RETURN (SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || ''''
                                      || CASE WHEN pos = last THEN ':*' ELSE '' END, ' <-> ' ORDER BY pos)::tsquery
                    FROM (SELECT lexeme, pos, max(pos) OVER () AS last
                          FROM unnest(jotter_search_vector(word)) AS v(lexeme, positions, weights), unnest(positions) AS pos) AS words);
        -- Every search word, AND-ed; NULL (nothing matches) when one of them has no word.
        CREATE FUNCTION jotter_search_query(words text[]) RETURNS tsquery
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            RETURN (SELECT CASE WHEN count(*) = count(q) THEN string_agg('(' || q::text || ')', ' & ')::tsquery END
                    FROM (SELECT jotter_word_query(w) AS q FROM unnest(words) AS w) AS each_word);

        CREATE TABLE notes (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- never reused
            owner bigint NOT NULL DEFAULT 0,                     -- users.id; 0: unclaimed
            body text NOT NULL,                                  -- NUL escaped (PostgresText)
            created_at bigint NOT NULL,                          -- Unix seconds, UTC
            updated_at bigint NOT NULL,
            version bigint NOT NULL,
            search tsvector GENERATED ALWAYS AS (jotter_search_vector(body)) STORED
        );
        CREATE INDEX notes_by_owner ON notes (owner, id);
        CREATE INDEX notes_search ON notes USING gin (search);

        -- Change events. The id orders them by committing transaction: (txid << 16) | seq, and
        -- readers only read below the oldest transaction still running, so one that commits
        -- late is never skipped.
        CREATE TABLE events (
            txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
            seq integer NOT NULL CHECK (seq BETWEEN 0 AND 65535),  -- the event's place in its transaction
            id bigint GENERATED ALWAYS AS ((txid::text::bigint << 16) | seq) STORED PRIMARY KEY,
            owner bigint NOT NULL DEFAULT 0,
            kind text NOT NULL,                                  -- note.created | note.updated | note.deleted
            note_id bigint NOT NULL,
            note_body text NOT NULL,
            note_created_at bigint NOT NULL,
            note_updated_at bigint NOT NULL,
            note_version bigint NOT NULL,
            created_at bigint NOT NULL
        );
        CREATE INDEX events_by_owner ON events (owner, id);
        -- trimmed_through: the newest event id trimmed from the backlog; high_water: the newest
        -- id deleted with its user (so the last event id never goes backwards).
        CREATE TABLE event_marks (
            one boolean PRIMARY KEY DEFAULT true CHECK (one),
            trimmed_through bigint NOT NULL DEFAULT 0,
            high_water bigint NOT NULL DEFAULT 0
        );
        INSERT INTO event_marks DEFAULT VALUES;

        CREATE TABLE uploads (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
            id text NOT NULL UNIQUE,                             -- random, chosen by the server; the blob is uploads/<id>
            owner bigint NOT NULL DEFAULT 0,
            filename text NOT NULL,
            content_type text NOT NULL,
            size bigint NOT NULL,
            sha256 text NOT NULL,
            created_at bigint NOT NULL,
            note_id bigint                                       -- NULL: not attached
        );
        CREATE INDEX uploads_by_owner ON uploads (owner, seq);
        CREATE INDEX uploads_by_note ON uploads (note_id, seq) WHERE note_id IS NOT NULL;

        CREATE TABLE users (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text NOT NULL,
            password_hash text NOT NULL,                         -- Argon2id, libsodium's crypto_pwhash_str format
            is_admin boolean NOT NULL DEFAULT false,
            created_at bigint NOT NULL
        );
        -- Unique ignoring ASCII case, like SQLite's NOCASE (lower() under "C" folds ASCII only).
        CREATE UNIQUE INDEX users_by_name ON users (lower(name COLLATE "C"));
        CREATE TABLE credentials (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            user_id bigint NOT NULL,
            kind text NOT NULL,                                  -- token | session
            label text NOT NULL,
            digest bytea NOT NULL UNIQUE,                        -- SHA-256 of the secret; the secret is never stored
            created_at bigint NOT NULL,
            last_used_at bigint,
            expires_at bigint,
            revoked_at bigint
        );
        CREATE INDEX credentials_by_user ON credentials (user_id, kind);
        """,
        // 2: Idempotency-Key answers (IdempotencyStore), shared by every instance.
        """
        CREATE TABLE idempotency_keys (
            owner bigint NOT NULL,
            key text NOT NULL,                                   -- the request's path, a space, the client's key
            fingerprint bytea NOT NULL,                          -- SHA-256 of what makes two requests the same
            claimed_at bigint NOT NULL,                          -- Unix seconds, UTC
            expires_at bigint NOT NULL,                          -- claimed: claimed_at + lease; answered: + 24 h
            status integer,                                      -- NULL: claimed, not answered yet
            head text,
            body bytea,                                          -- NULL once answered: kept as a reference (location)
            location text,
            bytes bigint NOT NULL DEFAULT 0,                     -- head + body, counted against the owner's budget
            PRIMARY KEY (owner, key)
        );
        CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
        """,
        // 3: the token buckets of the sign-in limiter and the per-token rate limit
        // (LimitCounters), shared by every instance. Unlogged: counters need no crash safety
        // (after a crash every bucket is full again) and skip the WAL.
        """
        CREATE UNLOGGED TABLE limit_buckets (
            key text PRIMARY KEY,                                -- "address 192.0.2.1", "name ann", "token 42"
            tokens float8 NOT NULL,                              -- after the last take
            updated float8 NOT NULL,                             -- the database's clock, Unix seconds
            allowed boolean NOT NULL,                            -- whether the last take got a token
            full_at float8 NOT NULL                              -- when the bucket is full again: then it may go
        );
        """,
        // 4: resumable uploads in progress (IETF draft, tus), as SQLite's version 5.
        """
        CREATE TABLE partial_uploads (
            id text PRIMARY KEY,
            owner bigint NOT NULL,
            protocol text NOT NULL,                              -- ietf-3 … ietf-8 | tus | raw
            filename text NOT NULL,
            content_type text NOT NULL,
            length bigint,                                       -- declared total; NULL while unknown
            upload_offset bigint NOT NULL,                       -- bytes kept as of the last request's end
            note_id bigint,                                      -- attached to on completion
            expected_sha256 text,                                -- from Repr-Digest, checked on completion
            backend_state text NOT NULL DEFAULT '',              -- an S3 multipart upload's id and parts
            created_at bigint NOT NULL,                          -- Unix seconds, UTC
            expires_at bigint NOT NULL
        );
        CREATE INDEX partial_uploads_by_owner ON partial_uploads (owner);
        CREATE INDEX partial_uploads_by_expiry ON partial_uploads (expires_at);
        """,
        // 5: where deleted uploads were, so that a listing's cursor naming one goes on after its
        // place (`PostgresUploadRows.page`); kept a week.
        """
        CREATE TABLE removed_uploads (
            id text PRIMARY KEY,
            owner bigint NOT NULL,
            seq bigint NOT NULL,                                 -- its seq in uploads
            removed_at bigint NOT NULL                           -- Unix seconds, UTC
        );
        CREATE INDEX removed_uploads_by_time ON removed_uploads (removed_at);
        """,
        // 6: resumable uploads whose bytes are an S3 multipart upload (`BucketPartialUploadStore`):
        // who holds each upload, its parts, the SHA-256 state after them, and the bytes after
        // the last part (each request's own piece, so no byte is written twice).
        """
        ALTER TABLE partial_uploads
            ADD COLUMN generation bigint NOT NULL DEFAULT 0,     -- bumped by every request that takes the upload over
            ADD COLUMN writer_until bigint NOT NULL DEFAULT 0,   -- the appending request's lease: Unix seconds, the database's clock
            ADD COLUMN next_part integer NOT NULL DEFAULT 1,     -- the next multipart part number to hand out (never reused)
            ADD COLUMN parts_sha256 bytea,                       -- SHA-256 state (JotterHTTP.SHA256.state) after the parts' bytes
            ADD COLUMN sealed boolean NOT NULL DEFAULT false;    -- being completed
        CREATE TABLE partial_upload_parts (
            upload_id text NOT NULL REFERENCES partial_uploads (id) ON DELETE CASCADE,
            number integer NOT NULL,                             -- S3 part number
            size bigint NOT NULL,
            etag text NOT NULL,
            PRIMARY KEY (upload_id, number)
        );
        CREATE TABLE partial_upload_tails (
            upload_id text NOT NULL REFERENCES partial_uploads (id) ON DELETE CASCADE,
            start bigint NOT NULL,                               -- offset of the piece's first byte in the upload
            bytes bytea NOT NULL,
            PRIMARY KEY (upload_id, start)
        );
        -- Uploaded bytes do not compress: stored out of line as they are, without trying.
        ALTER TABLE partial_upload_tails ALTER COLUMN bytes SET STORAGE EXTERNAL;
        """,
        // 7: revisions, as SQLite's version 7: every committed version of a note keeps its
        // body; a note's current version is kept from the start.
        """
        CREATE TABLE note_revisions (
            note_id bigint NOT NULL,
            version bigint NOT NULL,
            owner bigint NOT NULL,
            body text NOT NULL,                                  -- as notes.body (PostgresText)
            size bigint NOT NULL,                                -- the body's UTF-8 bytes, decoded
            created_at bigint NOT NULL,                          -- Unix seconds, UTC: when the version committed
            merge_base bigint,                                   -- the base version, when a merge made it
            PRIMARY KEY (note_id, version)
        );
        CREATE INDEX note_revisions_by_time ON note_revisions (created_at);
        INSERT INTO note_revisions (note_id, version, owner, body, size, created_at)
            SELECT id, version, owner, body,
                   octet_length(body) - 3 * (length(body) - length(replace(body, U&'\\FFFF0', ''))) / 2
                                      - (length(body) - length(replace(body, U&'\\FFFFF', ''))) / 2,
                   updated_at FROM notes;
        """,
        // 8: the trash, as SQLite's version 8.
        """
        CREATE TABLE trashed_notes (
            id bigint PRIMARY KEY,                               -- the note's id, its again when restored
            owner bigint NOT NULL,
            body text NOT NULL,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            version bigint NOT NULL,
            deleted_at bigint NOT NULL                           -- Unix seconds, UTC
        );
        CREATE INDEX trashed_notes_by_owner ON trashed_notes (owner, deleted_at);
        CREATE INDEX trashed_notes_by_time ON trashed_notes (deleted_at);
        """,
        // 9: who claimed an unanswered Idempotency-Key: the instance whose session holds the
        // advisory lock of that number (PostgresIdempotencyRows). NULL for claims made before.
        """
        ALTER TABLE idempotency_keys ADD COLUMN claimer bigint;
        """,
        // 10: the change feed, as SQLite's version 9: one row per note ever made, written with
        // every event (`PostgresNoteRows.appendEvent`), `seq` that event's id; tombstones pruned
        // by `FeedRetention` raise `event_marks.feed_pruned_through`. Existing notes get distinct
        // places up to the last event id, which is the horizon. Events keep a merge's base.
        """
        CREATE TABLE note_changes (
            note_id bigint PRIMARY KEY,
            owner bigint NOT NULL,
            seq bigint NOT NULL,                                 -- the id of the note's latest event
            version bigint NOT NULL,
            deleted boolean NOT NULL,                            -- the latest event is note.deleted (a tombstone)
            changed_at bigint NOT NULL                           -- Unix seconds, UTC: when that event was made
        );
        CREATE INDEX note_changes_by_owner ON note_changes (owner, seq);
        CREATE INDEX note_changes_tombstones ON note_changes (changed_at) WHERE deleted;
        ALTER TABLE event_marks ADD COLUMN feed_pruned_through bigint NOT NULL DEFAULT 0;
        UPDATE event_marks SET feed_pruned_through = greatest(high_water, trimmed_through, coalesce((SELECT max(id) FROM events), 0));
        INSERT INTO note_changes (note_id, owner, seq, version, deleted, changed_at)
            SELECT n.id, n.owner, row_number() OVER (ORDER BY e.last NULLS FIRST, n.updated_at, n.id), n.version, false, n.updated_at
            FROM notes AS n LEFT JOIN (SELECT note_id, max(id) AS last FROM events GROUP BY note_id) AS e ON e.note_id = n.id;
        ALTER TABLE events ADD COLUMN note_merge_base bigint;
        """,
        // 11: the trash's order within a second, as SQLite's version 11: `deleted_seq` is the
        // id of the note.deleted event; notes trashed before take their tombstone's place (or
        // their note.deleted event's id).
        // `trash_places`: where notes restored or purged were in that order, kept a week.
        """
        ALTER TABLE trashed_notes ADD COLUMN deleted_seq bigint NOT NULL DEFAULT 0;
        UPDATE trashed_notes AS t SET deleted_seq = coalesce(
            (SELECT c.seq FROM note_changes AS c WHERE c.note_id = t.id AND c.deleted),
            (SELECT max(e.id) FROM events AS e WHERE e.note_id = t.id AND e.kind = 'note.deleted'), 0);
        DROP INDEX trashed_notes_by_owner;
        CREATE INDEX trashed_notes_by_owner ON trashed_notes (owner, deleted_at, deleted_seq);
        CREATE TABLE trash_places (
            id bigint PRIMARY KEY,                               -- the note's id
            owner bigint NOT NULL,
            deleted_at bigint NOT NULL,
            deleted_seq bigint NOT NULL,
            left_at bigint NOT NULL                              -- Unix seconds, UTC: when it left the trash
        );
        CREATE INDEX trash_places_by_time ON trash_places (left_at);
        """,
        // 12: tus's Upload-Metadata as the creation request sent it, as SQLite's version 12.
        """
        ALTER TABLE partial_uploads ADD COLUMN tus_metadata text;
        ALTER TABLE uploads ADD COLUMN tus_metadata text;
        """,
        // 13: event ids that can always go on upward: `((txid + xid_offset) << 16) | seq`, the
        // offset the database's own (`event_marks.xid_offset`, each event keeping the one it was
        // made with). A database restored into another cluster, whose transaction ids start
        // lower, raises it (`PostgresHistory`). Existing events keep their ids (offset 0).
        """
        ALTER TABLE event_marks ADD COLUMN xid_offset bigint NOT NULL DEFAULT 0;
        CREATE FUNCTION jotter_xid_offset() RETURNS bigint
            LANGUAGE sql STABLE PARALLEL SAFE
            RETURN (SELECT xid_offset FROM event_marks);
        ALTER TABLE events ADD COLUMN xid_offset bigint NOT NULL DEFAULT jotter_xid_offset();
        ALTER TABLE events DROP COLUMN id,
            ADD COLUMN id bigint GENERATED ALWAYS AS (((txid::text::bigint + xid_offset) << 16) | seq) STORED PRIMARY KEY;
        CREATE INDEX events_by_owner ON events (owner, id);
        """,
    ]

    /// The schema version this binary writes and understands.
    static var current: Int64 { Int64(migrations.count) }

    /// Brings the database to `current`, or refuses it (untouched) when it is newer, or when it
    /// has tables but no `schema_version`.
    static func prepare(_ db: PostgresConnection, name: String) throws -> SchemaMigration? {
        try db.transaction { db -> SchemaMigration? in
            try db.query("SELECT pg_advisory_xact_lock($1)", [migrationLock])
            let found = try storedVersion(db, name: name)
            guard found <= current else { throw StoreError.newerSchema(file: name, found: found, supported: current) }
            guard found < current else { return nil }
            if found == 0 {
                try db.execute("CREATE TABLE schema_version (version bigint NOT NULL); INSERT INTO schema_version VALUES (0)")
            }
            for next in Int(found)..<migrations.count {
                try db.execute(migrations[next])
            }
            try db.query("UPDATE schema_version SET version = $1", [current])
            return SchemaMigration(from: found, to: current)
        }
    }

    /// The stored version; 0 for a database with no tables in the current schema.
    static func storedVersion(_ db: PostgresConnection, name: String) throws -> Int64 {
        let tables: Int64 = try db.query(
            """
            SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()
            """)[0].value(0)
        let hasVersion: Bool = try db.query("SELECT to_regclass('schema_version') IS NOT NULL")[0].value(0)
        if hasVersion {
            return try db.query("SELECT version FROM schema_version").first?.value(0) ?? 0
        }
        guard tables == 0 else { throw StoreError.notJotterDatabase(file: name) }
        return 0
    }
}
