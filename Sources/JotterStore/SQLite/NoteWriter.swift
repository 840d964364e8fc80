#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JotterSystem

/// The note and upload writes, each applied on the writer connection inside the transaction
/// (and savepoint) the writer opened.
///
/// Each write reads the note, decides `.notFound` first and then the version precondition, makes
/// its change and appends its event (trimming the events table to the backlog), all with
/// prepared statements and bound parameters. The full-text index follows at the end of the
/// transaction (`FullTextIndex`). What must happen after the commit — files to delete, events
/// to publish — goes into `effects`.
struct NoteWriter: Sendable {
    /// Events kept for replay; older ones are deleted as new ones are added.
    let eventBacklog: Int64
    /// The events table is trimmed to the backlog once every this many events.
    static let trimInterval: Int64 = 64
    /// The clock, in Unix seconds.
    var now: @Sendable () -> Int64 = { WallClock.seconds() }

    func create(body: String, owner: Owner, on db: SQLiteConnection, effects: WriteEffects) throws(StoreError) -> NoteChange {
        let time = now()
        try db.run(
            "INSERT INTO notes (body, created_at, updated_at, version, owner) VALUES (?, ?, ?, 1, ?)",
            [.text(body), .integer(time), .integer(time), .integer(owner.id)])
        let note = NoteRecord(id: db.lastInsertRowID, body: body, createdAt: time, updatedAt: time, version: 1)
        FullTextIndex.added(id: note.id, body: body, on: db)
        try RevisionRows.keep(note, owner: owner, on: db)
        return NoteChange(note: note, event: try appendEvent(.created, note, owner: owner, on: db, effects: effects))
    }

    /// An update, or (body nil) a touch.
    func update(
        id: Int64, body: String?, ifVersion: Int64?, owner: Owner, on db: SQLiteConnection,
        effects: WriteEffects
    ) throws(StoreError) -> NoteWriteOutcome {
        try ifAllowed(id, ifVersion, owner: owner, on: db) { current throws(StoreError) in
            guard let body else { return .done(try touch(current, owner: owner, on: db, effects: effects)) }
            return .done(try replaceBody(of: current, with: body, owner: owner, on: db, effects: effects))
        }
    }

    /// `body` over version `base`: an update, or a merge with the current body (`NoteStore.mergeNote`).
    func merge(
        id: Int64, base: Int64, body: String, ifVersion: Int64?, owner: Owner, on db: SQLiteConnection,
        effects: WriteEffects
    ) throws(StoreError) -> NoteWriteOutcome {
        try ifAllowed(id, ifVersion, owner: owner, on: db) { current throws(StoreError) in
            if base == current.version { return .done(try replaceBody(of: current, with: body, owner: owner, on: db, effects: effects)) }
            guard base < current.version, let ancestor = try RevisionRows.revision(noteID: id, version: base, owner: owner, on: db),
                let ancestorBody = ancestor.body
            else {
                return .noRevision(current: current)
            }
            guard let (text, merge) = NoteMerge.merge(base: base, ancestor: ancestorBody, current: current.body, incoming: body) else {
                return .cannotMerge(current: current, base: ancestor)
            }
            var change = try replaceBody(of: current, with: text, mergeBase: base, owner: owner, on: db, effects: effects)
            change.merge = merge
            return .done(change)
        }
    }

    /// A new version whose body is revision `version`'s.
    func restore(
        id: Int64, version: Int64, ifVersion: Int64?, owner: Owner, on db: SQLiteConnection,
        effects: WriteEffects
    ) throws(StoreError) -> NoteWriteOutcome {
        try ifAllowed(id, ifVersion, owner: owner, on: db) { current throws(StoreError) in
            guard let body = try RevisionRows.revision(noteID: id, version: version, owner: owner, on: db)?.body else {
                return .noRevision(current: current)
            }
            return .done(try replaceBody(of: current, with: body, owner: owner, on: db, effects: effects))
        }
    }

    /// The next version of `current` with `body`, kept as a revision (`mergeBase`: made by a merge).
    private func replaceBody(
        of current: NoteRecord, with body: String, mergeBase: Int64? = nil, owner: Owner, on db: SQLiteConnection,
        effects: WriteEffects
    ) throws(StoreError) -> NoteChange {
        var note = current
        note.body = body
        note.updatedAt = now()
        note.version += 1
        try db.run(
            "UPDATE notes SET body = ?, updated_at = ?, version = ? WHERE id = ? AND owner = ?",
            [.text(note.body), .integer(note.updatedAt), .integer(note.version), .integer(note.id), .integer(owner.id)])
        FullTextIndex.changed(id: note.id, from: current.body, to: body, on: db)
        try RevisionRows.keep(note, mergeBase: mergeBase, owner: owner, on: db)
        return NoteChange(note: note, event: try appendEvent(.updated, note, mergeBase: mergeBase, owner: owner, on: db, effects: effects))
    }

    /// Deletes the revisions retention lets go (`RevisionRows.thinned`) as of `at` (nil: now).
    func thinRevisions(_ retention: RevisionRetention, at: Int64?, on db: SQLiteConnection) throws(StoreError) -> Int {
        try RevisionRows.thin(retention, now: at ?? now(), on: db)
    }

    /// Prunes the feed's tombstones older than `retention` as of `at` (nil: now), raising the
    /// horizon to the newest pruned; how many went.
    func pruneFeed(_ retention: FeedRetention, at: Int64?, on db: SQLiteConnection) throws(StoreError) -> Int {
        let cutoff = (at ?? now()) - retention.tombstones
        guard
            let newest = try db.first(
                "SELECT max(seq) FROM note_changes WHERE deleted = 1 AND changed_at < ?",
                [.integer(cutoff)], row: { $0.optionalInt64(0) }) ?? nil
        else { return 0 }
        try db.run("UPDATE feed_marks SET pruned_through = max(pruned_through, ?)", [.integer(newest)])
        return try db.query("DELETE FROM note_changes WHERE deleted = 1 AND changed_at < ? RETURNING note_id", [.integer(cutoff)]) { $0.int64(0) }
            .count
    }

    func delete(id: Int64, ifVersion: Int64?, owner: Owner, on db: SQLiteConnection, effects: WriteEffects) throws(StoreError) -> NoteWriteOutcome {
        try ifAllowed(id, ifVersion, owner: owner, on: db) { note throws(StoreError) in
            // Into the trash: its revisions and attachments stay under its id.
            try db.run("DELETE FROM notes WHERE id = ? AND owner = ?", [.integer(id), .integer(owner.id)])
            FullTextIndex.removed(id: id, body: note.body, on: db)
            let event = try appendEvent(.deleted, note, owner: owner, on: db, effects: effects)
            try db.run("DELETE FROM trash_places WHERE id = ?", [.integer(id)])  // in the trash again: its place is its row's
            try db.run(
                """
                INSERT INTO trashed_notes (id, owner, body, created_at, updated_at, version, deleted_at, deleted_seq)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(id), .integer(owner.id), .text(note.body), .integer(note.createdAt), .integer(note.updatedAt),
                    .integer(note.version), .integer(event.at), .integer(event.id),
                ])
            return .done(NoteChange(note: note, event: event))
        }
    }

    /// Back from the trash at a new version (`note.created`): its id, body, revisions and attachments.
    func restoreTrashed(id: Int64, owner: Owner, on db: SQLiteConnection, effects: WriteEffects) throws(StoreError) -> NoteWriteOutcome {
        guard let trashed = try TrashRows.note(id: id, owner: owner, on: db) else { return .notFound }
        var note = trashed.note
        note.updatedAt = now()
        try TrashRows.leave(id: id, now: note.updatedAt, on: db)
        note.version += 1
        try db.run(
            "INSERT INTO notes (id, body, created_at, updated_at, version, owner) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .integer(id), .text(note.body), .integer(note.createdAt), .integer(note.updatedAt), .integer(note.version),
                .integer(owner.id),
            ])
        FullTextIndex.added(id: id, body: note.body, on: db)
        try RevisionRows.keep(note, owner: owner, on: db)
        return .done(NoteChange(note: note, event: try appendEvent(.created, note, owner: owner, on: db, effects: effects)))
    }

    /// Out of the trash for good, if it is there at `ifVersion` (nil: any): the row, its
    /// revisions, its attachments (rows now, files once committed).
    func purgeTrashed(
        id: Int64, ifVersion: Int64? = nil, owner: Owner, on db: SQLiteConnection, effects: WriteEffects
    ) throws(StoreError) -> TrashPurge {
        guard let trashed = try TrashRows.note(id: id, owner: owner, on: db) else { return .notFound }
        if let ifVersion, trashed.note.version != ifVersion { return .versionMismatch(current: trashed) }
        let time = now()
        try TrashRows.leave(id: id, now: time, on: db)
        try RevisionRows.removeAll(noteID: id, owner: owner, on: db)
        try UploadRows.keepPlaces(where: "note_id = ? AND owner = ?", [.integer(id), .integer(owner.id)], now: time, on: db)
        effects.removed += try db.query(
            "DELETE FROM uploads WHERE note_id = ? AND owner = ? RETURNING id",
            [.integer(id), .integer(owner.id)]
        ) { $0.string(0) }
        return .purged(trashed)
    }

    /// Every note deleted `keep` seconds or more before `at` (nil: now), purged; how many.
    func emptyTrash(keep: Int64, at: Int64?, on db: SQLiteConnection, effects: WriteEffects) throws(StoreError) -> Int {
        let due = try db.query("SELECT id, owner FROM trashed_notes WHERE deleted_at <= ?", [.integer((at ?? now()) - keep)]) {
            ($0.int64(0), Owner(id: $0.int64(1)))
        }
        for (id, owner) in due { _ = try purgeTrashed(id: id, owner: owner, on: db, effects: effects) }
        return due.count
    }

    /// Rows for uploads whose files are in place; nil when the note does not exist.
    func addUploads(
        _ uploads: [NewUpload], noteID: Int64?, owner: Owner, on db: SQLiteConnection,
        effects: WriteEffects
    ) throws(StoreError) -> UploadsAdded? {
        var note: NoteRecord?
        if let noteID {
            guard let found = try NoteRows.note(id: noteID, owner: owner, on: db) else { return nil }
            note = found
        }
        let time = now()
        var records: [UploadRecord] = []
        for upload in uploads {
            let record = UploadRecord(
                id: upload.id, filename: upload.filename, contentType: upload.contentType,
                size: upload.size, sha256: upload.sha256, createdAt: time, noteID: noteID)
            try db.run(
                "INSERT INTO uploads (\(UploadRows.columns), owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(record.id), .text(record.filename), .text(record.contentType), .integer(record.size),
                    .text(record.sha256), .integer(record.createdAt), noteID.map { .integer($0) } ?? .null, .integer(owner.id),
                ])
            records.append(record)
        }
        return UploadsAdded(
            uploads: records, change: try note.map { note throws(StoreError) in try touch(note, owner: owner, on: db, effects: effects) })
    }

    func deleteUpload(id: String, owner: Owner, on db: SQLiteConnection, effects: WriteEffects) throws(StoreError) -> UploadRemoved? {
        guard let upload = try UploadRows.upload(id: id, owner: owner, on: db) else { return nil }
        try refuseIfTrashed(upload, owner: owner, on: db)
        try UploadRows.keepPlaces(where: "id = ? AND owner = ?", [.text(id), .integer(owner.id)], now: now(), on: db)
        try db.run("DELETE FROM uploads WHERE id = ? AND owner = ?", [.text(id), .integer(owner.id)])
        effects.removed.append(id)
        guard let noteID = upload.noteID, let note = try NoteRows.note(id: noteID, owner: owner, on: db) else {
            return UploadRemoved(upload: upload, change: nil)
        }
        return UploadRemoved(upload: upload, change: try touch(note, owner: owner, on: db, effects: effects))
    }

    func attachUpload(id: String, noteID: Int64?, owner: Owner, on db: SQLiteConnection, effects: WriteEffects) throws(StoreError) -> UploadAttached?
    {
        guard var upload = try UploadRows.upload(id: id, owner: owner, on: db) else { return nil }
        try refuseIfTrashed(upload, owner: owner, on: db)
        var joined: NoteRecord?
        if let noteID {
            guard let found = try NoteRows.note(id: noteID, owner: owner, on: db) else { return nil }
            joined = found
        }
        guard upload.noteID != noteID else { return UploadAttached(upload: upload, events: []) }
        let left = try upload.noteID.flatMap { old throws(StoreError) in try NoteRows.note(id: old, owner: owner, on: db) }
        try db.run("UPDATE uploads SET note_id = ? WHERE id = ? AND owner = ?", [.integer(noteID), .text(id), .integer(owner.id)])
        upload.noteID = noteID
        var events: [NoteEvent] = []
        for note in [left, joined].compactMap({ $0 }) {
            events.append(try touch(note, owner: owner, on: db, effects: effects).event)
        }
        return UploadAttached(upload: upload, events: events)
    }

    /// Throws `noteInTrash` when `upload` is attached to a note in the trash, which keeps its
    /// attachments as they were until it leaves the trash.
    private func refuseIfTrashed(_ upload: UploadRecord, owner: Owner, on db: SQLiteConnection) throws(StoreError) {
        if let noteID = upload.noteID, try TrashRows.note(id: noteID, owner: owner, on: db) != nil { throw .noteInTrash(noteID) }
    }

    /// A new version of `current` (its attachments changed): `note.updated`.
    private func touch(_ current: NoteRecord, owner: Owner, on db: SQLiteConnection, effects: WriteEffects) throws(StoreError) -> NoteChange {
        var note = current
        note.updatedAt = now()
        note.version += 1
        try db.run(
            "UPDATE notes SET updated_at = ?, version = ? WHERE id = ? AND owner = ?",
            [.integer(note.updatedAt), .integer(note.version), .integer(note.id), .integer(owner.id)])
        try RevisionRows.keep(note, owner: owner, on: db)
        return NoteChange(note: note, event: try appendEvent(.updated, note, owner: owner, on: db, effects: effects))
    }

    /// Runs `change` on the current note if the write may go ahead: a missing note is
    /// `.notFound` whatever `ifVersion` says; a stale `ifVersion` is `.versionMismatch`.
    private func ifAllowed(
        _ id: Int64, _ ifVersion: Int64?, owner: Owner, on db: SQLiteConnection,
        _ change: (NoteRecord) throws(StoreError) -> NoteWriteOutcome
    ) throws(StoreError) -> NoteWriteOutcome {
        guard let note = try NoteRows.note(id: id, owner: owner, on: db) else { return .notFound }
        if let ifVersion, ifVersion != note.version { return .versionMismatch(current: note) }
        return try change(note)
    }

    /// Appends an event and trims the backlog; the event id comes from AUTOINCREMENT, so it is
    /// above every id ever issued, trimmed or not. Published once the transaction commits.
    /// The note's row in the change feed (`NoteFeed`) moves to this event: every write that
    /// changes a note comes through here, so the feed misses none.
    private func appendEvent(
        _ kind: NoteEventKind, _ note: NoteRecord, mergeBase: Int64? = nil, owner: Owner, on db: SQLiteConnection,
        effects: WriteEffects
    ) throws(StoreError) -> NoteEvent {
        let time = now()
        try db.run(
            """
            INSERT INTO events (kind, note_id, note_body, note_created_at, note_updated_at, note_version, note_merge_base, created_at, owner)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(kind.rawValue), .integer(note.id), .text(note.body), .integer(note.createdAt),
                .integer(note.updatedAt), .integer(note.version), .integer(mergeBase), .integer(time), .integer(owner.id),
            ])
        let id = db.lastInsertRowID
        try db.run(
            """
            INSERT INTO note_changes (note_id, owner, seq, version, deleted, changed_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (note_id) DO UPDATE SET owner = excluded.owner, seq = excluded.seq, version = excluded.version,
                deleted = excluded.deleted, changed_at = excluded.changed_at
            """,
            [
                .integer(note.id), .integer(owner.id), .integer(id), .integer(note.version), .integer(kind == .deleted ? 1 : 0),
                .integer(time),
            ])
        // Trimmed every `trimInterval` events: readers ignore what is past the backlog anyway
        // (`NoteRows.events`), and a delete of one old row per write dirtied two more pages.
        if id % Self.trimInterval == 0 { try db.run("DELETE FROM events WHERE id <= ?", [.integer(id - eventBacklog)]) }
        let event = NoteEvent(id: id, kind: kind, note: note, at: time, mergeBase: mergeBase)
        effects.events.append(event)
        return event
    }
}
