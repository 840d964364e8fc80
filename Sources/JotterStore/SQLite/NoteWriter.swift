#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Applies one `NoteWrite` on the writer connection, inside the transaction the writer opened.
///
/// Each write reads the note, decides `.notFound` first and then the version precondition, makes
/// its change and appends its event (trimming the events table to the backlog), all with
/// prepared statements and bound parameters. The FTS index follows through triggers.
struct NoteWriter: Sendable {
    /// Events kept for replay; older ones are deleted as new ones are added.
    let eventBacklog: Int64
    /// The files behind uploads.
    let files: UploadFiles
    /// The clock, in Unix seconds.
    var now: @Sendable () -> Int64 = { Int64(time(nil)) }

    func apply(_ write: NoteWrite, owner: Owner, on db: SQLiteConnection, changes: FileChanges) throws(StoreError) -> NoteWriteResult {
        switch write {
        case .create(let body):
            let time = now()
            try db.run("INSERT INTO notes (body, created_at, updated_at, version, owner) VALUES (?, ?, ?, 1, ?)",
                       [.text(body), .integer(time), .integer(time), .integer(owner.id)])
            let note = NoteRecord(id: db.lastInsertRowID, body: body, createdAt: time, updatedAt: time, version: 1)
            return .done(note, try appendEvent(.created, note, owner: owner, on: db))

        case .update(let id, let body, let ifVersion):
            return try ifAllowed(id, ifVersion, owner: owner, on: db) { current throws(StoreError) in
                var note = current
                note.body = body
                note.updatedAt = now()
                note.version += 1
                try db.run("UPDATE notes SET body = ?, updated_at = ?, version = ? WHERE id = ? AND owner = ?",
                           [.text(note.body), .integer(note.updatedAt), .integer(note.version), .integer(id), .integer(owner.id)])
                return .done(note, try appendEvent(.updated, note, owner: owner, on: db))
            }

        case .touch(let id, let ifVersion):
            return try ifAllowed(id, ifVersion, owner: owner, on: db) { current throws(StoreError) in try touch(current, owner: owner, on: db) }

        case .delete(let id, let ifVersion):
            return try ifAllowed(id, ifVersion, owner: owner, on: db) { note throws(StoreError) in
                // Its attachments go with it: rows now, files once this commits.
                changes.removed += try db.query("DELETE FROM uploads WHERE note_id = ? AND owner = ? RETURNING id",
                                                [.integer(id), .integer(owner.id)]) { $0.string(0) }
                try db.run("DELETE FROM notes WHERE id = ? AND owner = ?", [.integer(id), .integer(owner.id)])
                return .done(note, try appendEvent(.deleted, note, owner: owner, on: db))
            }

        case .addUploads(let uploads, let noteID):
            var note: NoteRecord?
            if let noteID {
                guard let found = try NoteRows.note(id: noteID, owner: owner, on: db) else { return .notFound }
                note = found
            }
            let time = now()
            var records: [UploadRecord] = []
            for upload in uploads {
                let record = UploadRecord(id: UploadFiles.newID(), filename: upload.filename, contentType: upload.contentType,
                                          size: upload.size, sha256: upload.sha256, createdAt: time, noteID: noteID)
                try files.adopt(upload.temporaryPath, as: record.id)
                changes.added.append(record.id)
                try db.run("INSERT INTO uploads (\(UploadRows.columns), owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           [.text(record.id), .text(record.filename), .text(record.contentType), .integer(record.size),
                            .text(record.sha256), .integer(record.createdAt), noteID.map { .integer($0) } ?? .null, .integer(owner.id)])
                records.append(record)
            }
            files.syncDirectory()
            guard let note else { return .uploadsAdded(records, note: nil, event: nil) }
            guard case .done(let touched, let event) = try touch(note, owner: owner, on: db) else { return .notFound }
            return .uploadsAdded(records, note: touched, event: event)

        case .deleteUpload(let id):
            guard let upload = try UploadRows.upload(id: id, owner: owner, on: db) else { return .notFound }
            try db.run("DELETE FROM uploads WHERE id = ? AND owner = ?", [.text(id), .integer(owner.id)])
            changes.removed.append(id)
            guard let noteID = upload.noteID, let note = try NoteRows.note(id: noteID, owner: owner, on: db),
                  case .done(let touched, let event) = try touch(note, owner: owner, on: db) else {
                return .uploadDeleted(upload, note: nil, event: nil)
            }
            return .uploadDeleted(upload, note: touched, event: event)

        case .attachUpload(let id, let noteID):
            guard var upload = try UploadRows.upload(id: id, owner: owner, on: db) else { return .notFound }
            var joined: NoteRecord?
            if let noteID {
                guard let found = try NoteRows.note(id: noteID, owner: owner, on: db) else { return .notFound }
                joined = found
            }
            guard upload.noteID != noteID else { return .uploadAttached(upload, events: []) }
            let left = try upload.noteID.flatMap { old throws(StoreError) in try NoteRows.note(id: old, owner: owner, on: db) }
            try db.run("UPDATE uploads SET note_id = ? WHERE id = ? AND owner = ?", [.integer(noteID), .text(id), .integer(owner.id)])
            upload.noteID = noteID
            var events: [NoteEvent] = []
            for note in [left, joined].compactMap({ $0 }) {
                if case .done(_, let event) = try touch(note, owner: owner, on: db) { events.append(event) }
            }
            return .uploadAttached(upload, events: events)
        }
    }

    /// A new version of `current` (its attachments changed): `note.updated`.
    private func touch(_ current: NoteRecord, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> NoteWriteResult {
        var note = current
        note.updatedAt = now()
        note.version += 1
        try db.run("UPDATE notes SET updated_at = ?, version = ? WHERE id = ? AND owner = ?",
                   [.integer(note.updatedAt), .integer(note.version), .integer(note.id), .integer(owner.id)])
        return .done(note, try appendEvent(.updated, note, owner: owner, on: db))
    }

    /// Runs `change` on the current note if the write may go ahead: a missing note is
    /// `.notFound` whatever `ifVersion` says; a stale `ifVersion` is `.versionMismatch`.
    private func ifAllowed(
        _ id: Int64, _ ifVersion: Int64?, owner: Owner, on db: SQLiteConnection,
        _ change: (NoteRecord) throws(StoreError) -> NoteWriteResult
    ) throws(StoreError) -> NoteWriteResult {
        guard let note = try NoteRows.note(id: id, owner: owner, on: db) else { return .notFound }
        if let ifVersion, ifVersion != note.version { return .versionMismatch(current: note) }
        return try change(note)
    }

    /// Appends an event and trims the backlog; the event id comes from AUTOINCREMENT, so it is
    /// above every id ever issued, trimmed or not.
    private func appendEvent(_ kind: NoteEventKind, _ note: NoteRecord, owner: Owner, on db: SQLiteConnection) throws(StoreError) -> NoteEvent {
        try db.run("""
            INSERT INTO events (kind, note_id, note_body, note_created_at, note_updated_at, note_version, created_at, owner)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(kind.rawValue), .integer(note.id), .text(note.body), .integer(note.createdAt),
                  .integer(note.updatedAt), .integer(note.version), .integer(now()), .integer(owner.id)])
        let id = db.lastInsertRowID
        try db.run("DELETE FROM events WHERE id <= ?", [.integer(id - eventBacklog)])
        return NoteEvent(id: id, kind: kind, note: note)
    }
}
