import JotterPostgres

// MARK: - Notes

extension PostgresStore {
    public func note(id: Int64, owner: Owner) throws(StoreError) -> NoteRecord? {
        try read { db in try PostgresNoteRows.note(id: id, owner: owner, on: db) }
    }

    public func notes(_ query: NoteQuery, owner: Owner) throws(StoreError) -> [NoteRecord] {
        try read { db in try PostgresNoteRows.page(query, owner: owner, on: db) }
    }

    /// `owner`'s events with id > `after`, in event-id order, at most `limit`; nil when `after`
    /// is older than the kept backlog or above the last event id. Ids have gaps.
    public func events(after: Int64, limit: Int, owner: Owner) throws(StoreError) -> [NoteEvent]? {
        try read { db in try PostgresNoteRows.events(after: after, limit: limit, owner: owner, backlog: options.eventBacklog, on: db) }
    }

    /// The id of the last visible event (0 when none); never goes backwards.
    public func lastEventID() throws(StoreError) -> Int64 {
        try read { db in try PostgresNoteRows.lastEventID(on: db) }
    }

    /// A page of the change feed from one snapshot (a repeatable-read transaction), below the
    /// horizon the event stream reads under.
    public func changes(_ query: NoteFeedQuery, owner: Owner) throws(StoreError) -> NoteFeedPage {
        try read { db in
            try db.transaction(isolation: .repeatableRead) { db in try PostgresNoteRows.changes(query, owner: owner, on: db) }
        }
    }

    public func pruneFeed(_ retention: FeedRetention, asOf now: Int64?, completion: @escaping StoreCompletion<Int>) {
        write({ write in try PostgresNoteRows.pruneFeed(retention, now: now ?? write.now, on: write.db) }, completion: completion)
    }

    public func createNote(body: String, owner: Owner, completion: @escaping StoreCompletion<NoteChange>) {
        write(
            { write in
                let (note, event) = try PostgresNoteRows.create(body: body, owner: owner, in: write)
                return NoteChange(note: note, event: event)
            }, completion: completion)
    }

    public func createNote(
        body: String, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<NoteChange>>
    ) {
        write(
            { [instance] write in
                try PostgresIdempotencyRows.keyed(claim, owner: owner, claimer: instance, on: write.db) {
                    let (note, event) = try PostgresNoteRows.create(body: body, owner: owner, in: write)
                    return (NoteChange(note: note, event: event), "/notes/\(note.id)")
                }
            }, completion: completion)
    }

    /// `body` nil: a touch (version and updated_at grow, body unchanged).
    public func updateNote(id: Int64, body: String?, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>) {
        write({ write in try Self.update(id: id, body: body, ifVersion: ifVersion, owner: owner, in: write) }, completion: completion)
    }

    private static func update(id: Int64, body: String?, ifVersion: Int64?, owner: Owner, in write: PostgresWrite) throws -> NoteWriteOutcome {
        if let (note, event) = try PostgresNoteRows.update(id: id, body: body, ifVersion: ifVersion, owner: owner, in: write) {
            return .done(NoteChange(note: note, event: event))
        }
        return try refusal(id: id, owner: owner, on: write.db)
    }

    public func editNote(
        id: Int64, base: Int64?, body: String, ifVersion: Int64?, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<NoteWriteOutcome>>
    ) {
        write(
            { [instance] write in
                try PostgresIdempotencyRows.keyed(claim, owner: owner, claimer: instance, on: write.db) {
                    let outcome =
                        if let base {
                            try Self.merge(id: id, base: base, body: body, ifVersion: ifVersion, owner: owner, in: write)
                        } else {
                            try Self.update(id: id, body: body, ifVersion: ifVersion, owner: owner, in: write)
                        }
                    return (outcome, outcome.change == nil ? nil : "/notes/\(id)")
                }
            }, completion: completion)
    }

    /// Deletes the note and its attachments (rows now, blobs once committed).
    public func deleteNote(id: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>) {
        write(
            { write in
                if let (note, event) = try PostgresNoteRows.delete(id: id, ifVersion: ifVersion, owner: owner, in: write) {
                    return .done(NoteChange(note: note, event: event))
                }
                return try Self.refusal(id: id, owner: owner, on: write.db)
            }, completion: completion)
    }

    /// The note is read with its row locked, merged (when `base` is older) and written in one
    /// transaction: two instances merging into one note take turns, and each merges into what
    /// the other committed.
    public func mergeNote(
        id: Int64, base: Int64, body: String, ifVersion: Int64?, owner: Owner,
        completion: @escaping StoreCompletion<NoteWriteOutcome>
    ) {
        write({ write in try Self.merge(id: id, base: base, body: body, ifVersion: ifVersion, owner: owner, in: write) }, completion: completion)
    }

    private static func merge(id: Int64, base: Int64, body: String, ifVersion: Int64?, owner: Owner, in write: PostgresWrite) throws
        -> NoteWriteOutcome
    {
        guard let current = try PostgresNoteRows.lockedNote(id: id, owner: owner, on: write.db) else { return .notFound }
        if let ifVersion, ifVersion != current.version { return .versionMismatch(current: current) }
        var text = body, merge: NoteMerge?
        if base != current.version {
            guard base < current.version, let ancestor = try PostgresNoteRows.revision(noteID: id, version: base, owner: owner, on: write.db),
                let ancestorBody = ancestor.body
            else {
                return .noRevision(current: current)
            }
            guard let merged = NoteMerge.merge(base: base, ancestor: ancestorBody, current: current.body, incoming: body) else {
                return .cannotMerge(current: current, base: ancestor)
            }
            (text, merge) = (merged.text, merged.merge)
        }
        guard
            let (note, event) = try PostgresNoteRows.update(
                id: id, body: text, ifVersion: current.version, mergeBase: merge?.base,
                owner: owner, in: write)
        else {
            return try refusal(id: id, owner: owner, on: write.db)
        }
        return .done(NoteChange(note: note, event: event, merge: merge))
    }

    public func trashedNotes(limit: Int, after: Int64?, owner: Owner) throws(StoreError) -> [TrashedNote]? {
        try read { db in try PostgresNoteRows.trashedNotes(limit: limit, after: after, owner: owner, on: db) }
    }

    public func trashedNote(id: Int64, owner: Owner) throws(StoreError) -> TrashedNote? {
        try read { db in try PostgresNoteRows.trashedNote(id: id, owner: owner, on: db) }
    }

    public func restoreTrashedNote(id: Int64, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>) {
        write(
            { write in
                guard let (note, event) = try PostgresNoteRows.restoreTrashed(id: id, owner: owner, in: write) else { return .notFound }
                return .done(NoteChange(note: note, event: event))
            }, completion: completion)
    }

    public func purgeTrashedNote(id: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<TrashPurge>) {
        write({ write in try PostgresNoteRows.purgeTrashed(id: id, ifVersion: ifVersion, owner: owner, in: write) }, completion: completion)
    }

    /// Each due note is purged in the transaction of the sweep, one by one (rows locked by the
    /// delete: two instances sweeping at once purge each note once).
    public func emptyTrash(keep: Int64, asOf now: Int64?, completion: @escaping StoreCompletion<Int>) {
        write(
            { write in
                let due = try write.db.query("SELECT id, owner FROM trashed_notes WHERE deleted_at <= $1", [(now ?? write.now) - keep])
                    .map { (try $0.int64(0), Owner(id: try $0.int64(1))) }
                var purged = 0
                for (id, owner) in due {
                    // Nil when another instance's sweep took it first.
                    if try PostgresNoteRows.purgeTrashed(id: id, owner: owner, in: write).purged != nil { purged += 1 }
                }
                return purged
            }, completion: completion)
    }

    /// Reads revision `version` and writes its body as the next version, in one transaction.
    public func restoreNote(id: Int64, version: Int64, ifVersion: Int64?, owner: Owner, completion: @escaping StoreCompletion<NoteWriteOutcome>) {
        write(
            { write in
                guard let body = try PostgresNoteRows.revision(noteID: id, version: version, owner: owner, on: write.db)?.body else {
                    let refusal = try Self.refusal(id: id, owner: owner, on: write.db)
                    guard case .versionMismatch(let current) = refusal else { return refusal }
                    return ifVersion == nil || ifVersion == current.version ? .noRevision(current: current) : refusal
                }
                if let (note, event) = try PostgresNoteRows.update(id: id, body: body, ifVersion: ifVersion, owner: owner, in: write) {
                    return .done(NoteChange(note: note, event: event))
                }
                return try Self.refusal(id: id, owner: owner, on: write.db)
            }, completion: completion)
    }

    public func thinRevisions(_ retention: RevisionRetention, asOf now: Int64?, completion: @escaping StoreCompletion<Int>) {
        write({ write in try PostgresNoteRows.thinRevisions(retention, now: now ?? write.now, on: write.db) }, completion: completion)
    }

    public func revisions(noteID: Int64, before: Int64?, limit: Int, owner: Owner, inTrash: Bool) throws(StoreError) -> [NoteRevision]? {
        try read { db in try PostgresNoteRows.revisions(noteID: noteID, before: before, limit: limit, owner: owner, inTrash: inTrash, on: db) }
    }

    public func revision(noteID: Int64, version: Int64, owner: Owner, inTrash: Bool) throws(StoreError) -> NoteRevision? {
        try read { db in try PostgresNoteRows.revision(noteID: noteID, version: version, owner: owner, inTrash: inTrash, on: db) }
    }

    /// Why a conditional write matched no row: no such note (decided first), or another version.
    private static func refusal(id: Int64, owner: Owner, on db: PostgresConnection) throws -> NoteWriteOutcome {
        guard let current = try PostgresNoteRows.note(id: id, owner: owner, on: db) else { return .notFound }
        return .versionMismatch(current: current)
    }
}

// MARK: - Uploads

extension PostgresStore {
    public func upload(id: String, owner: Owner) throws(StoreError) -> UploadRecord? {
        try read { db in try PostgresUploadRows.upload(id: id, owner: owner, on: db) }
    }

    public func uploads(_ query: UploadQuery, owner: Owner) throws(StoreError) -> [UploadRecord]? {
        try read { db in try PostgresUploadRows.page(query, owner: owner, on: db) }
    }

    public func attachments(of noteIDs: [Int64], owner: Owner) throws(StoreError) -> [Int64: [UploadRecord]] {
        guard !noteIDs.isEmpty else { return [:] }
        return try read { db in try PostgresUploadRows.attachments(of: noteIDs, owner: owner, on: db) }
    }

    public func noteWithAttachments(id: Int64, owner: Owner) throws(StoreError) -> (NoteRecord, [UploadRecord])? {
        try read { db in try PostgresUploadRows.noteWithAttachments(id: id, owner: owner, on: db) }
    }

    /// A page of notes with their attachments, from one snapshot (a repeatable-read transaction).
    public func notesWithAttachments(_ query: NoteQuery, owner: Owner) throws(StoreError) -> NotePage {
        try read { db in
            try db.transaction(isolation: .repeatableRead) { db in
                var page = NotePage(capacity: query.limit)
                try PostgresNoteRows.page(query, owner: owner, into: &page, on: db)
                page.attachmentsByNote = try PostgresUploadRows.attachments(of: page.notes.map(\.id), owner: owner, on: db)
                return page
            }
        }
    }

    /// Records uploads whose blobs are stored; nil when `noteID` names no note of `owner`'s.
    public func addUploads(_ uploads: [NewUpload], noteID: Int64?, owner: Owner, completion: @escaping StoreCompletion<UploadsAdded?>) {
        addUploads(uploads, noteID: noteID, owner: owner, claiming: nil) { result in
            completion(result.map { if case .done(let added) = $0 { added } else { nil } })
        }
    }

    public func addUploads(
        _ uploads: [NewUpload], noteID: Int64?, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<UploadsAdded?>>
    ) {
        addUploads(uploads, noteID: noteID, owner: owner, claiming: Optional(claim), completion: completion)
    }

    /// Both `addUploads`: the claim, when there is one, is made and kept in the rows' transaction.
    private func addUploads(
        _ uploads: [NewUpload], noteID: Int64?, owner: Owner, claiming claim: IdempotencyKeyClaim?,
        completion: @escaping StoreCompletion<KeyedOutcome<UploadsAdded?>>
    ) {
        let rows = uploads.map { (id: $0.id, filename: $0.filename, contentType: $0.contentType, size: $0.size, sha256: $0.sha256) }
        let blobs = blobs
        write(
            { [instance] write -> KeyedOutcome<UploadsAdded?> in
                let add = { () throws -> (UploadsAdded?, location: String?) in
                    guard let (records, change) = try PostgresUploadRows.add(rows, noteID: noteID, owner: owner, in: write) else {
                        return (nil, nil)
                    }
                    let added = UploadsAdded(uploads: records, change: change.map { NoteChange(note: $0.0, event: $0.1) })
                    return (added, "/uploads/\(records[0].id)")
                }
                guard let claim else { return .done(try add().0) }
                return try PostgresIdempotencyRows.keyed(claim, owner: owner, claimer: instance, on: write.db, add)
            },
            completion: { result in
                // Bytes without a committed row go again.
                if case .success(.done(.some)) = result {
                } else {
                    for upload in uploads { try? blobs.delete(UploadRecord.blobKey(upload.id)) }
                }
                completion(result)
            })
    }

    /// nil when there is no such upload. The blob is deleted once the row's delete committed.
    public func deleteUpload(id: String, owner: Owner, completion: @escaping StoreCompletion<UploadRemoved?>) {
        write(
            { write -> UploadRemoved? in
                guard let (upload, change) = try PostgresUploadRows.delete(id: id, owner: owner, in: write) else { return nil }
                return UploadRemoved(upload: upload, change: change.map { NoteChange(note: $0.0, event: $0.1) })
            }, completion: completion)
    }

    /// nil when the upload or the note does not exist.
    public func attachUpload(id: String, noteID: Int64?, owner: Owner, completion: @escaping StoreCompletion<UploadAttached?>) {
        write(
            { write -> UploadAttached? in
                guard let (upload, events) = try PostgresUploadRows.attach(id: id, noteID: noteID, owner: owner, in: write) else { return nil }
                return UploadAttached(upload: upload, events: events)
            }, completion: completion)
    }
}

// MARK: - Accounts

extension PostgresStore {
    public func users() throws(StoreError) -> [UserRecord] {
        try read { db in try PostgresAccountRows.users(on: db) }
    }

    public func user(named name: String) throws(StoreError) -> UserRecord? {
        try read { db in try PostgresAccountRows.user(named: name, on: db) }
    }

    public func user(id: Int64) throws(StoreError) -> UserRecord? {
        try read { db in try PostgresAccountRows.user(id: id, on: db) }
    }

    public func passwordHash(userID: Int64) throws(StoreError) -> String? {
        try read { db in try PostgresAccountRows.passwordHash(userID: userID, on: db) }
    }

    public func credential(digest: [UInt8]) throws(StoreError) -> (CredentialRecord, UserRecord)? {
        try read { db in try PostgresAccountRows.credential(digest: digest, on: db) }
    }

    public func credentials(userID: Int64, kind: CredentialKind) throws(StoreError) -> [CredentialRecord] {
        try read { db in try PostgresAccountRows.credentials(userID: userID, kind: kind, on: db) }
    }

    /// Runs an account change on a store thread; `completion` once it committed. A removed
    /// user's upload blobs go once the removal has committed.
    public func submit(_ write: AccountWrite, completion: @escaping @Sendable (Result<AccountWriteResult, StoreError>) -> Void) {
        self.write({ transaction in try PostgresAccountRows.apply(write, in: transaction) }, completion: completion)
    }
}

// MARK: - Statistics

extension PostgresStore {
    /// Counts notes and uploads in one snapshot (a scan of each table: for scrape intervals)
    /// and the database's size (`pg_database_size`).
    public func storageStatistics() throws(StoreError) -> StorageStatistics {
        try read { db in
            let row = try db.query(
                """
                SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM uploads), (SELECT coalesce(sum(size), 0) FROM uploads)::bigint,
                       pg_database_size(current_database())
                """)[0]
            return StorageStatistics(
                notes: try row.value(0), uploads: try row.value(1), uploadBytes: try row.value(2), databaseBytes: try row.value(3))
        }
    }

    /// The schema version this build writes and understands; a database above it is refused.
    public static var schemaVersion: Int64 { PostgresSchema.current }

    public var schemaVersion: Int64 { Self.schemaVersion }
}
