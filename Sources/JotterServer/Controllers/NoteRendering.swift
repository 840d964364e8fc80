import JotterAPI
import JotterHTTP
import JotterStore
import JotterWire

extension Note {
    /// The wire form of a stored note with its attachments.
    init(_ record: NoteRecord, attachments: [UploadRecord]) {
        self.init(
            id: String(record.id), body: record.body, createdAt: Timestamp.date(seconds: record.createdAt),
            updatedAt: Timestamp.date(seconds: record.updatedAt), version: Int(record.version),
            attachments: attachments.map(Upload.init))
    }
}

extension Upload {
    /// The wire form of a stored upload.
    package init(_ record: UploadRecord) {
        self.init(
            id: record.id, filename: record.filename, contentType: record.contentType, size: record.size,
            sha256: record.sha256, createdAt: Timestamp.date(seconds: record.createdAt),
            noteID: record.noteID.map(String.init), url: "/uploads/\(record.id)/content")
    }
}

extension RevisionStamp {
    /// The wire form of what a stored revision says of its version.
    init(_ revision: NoteRevision) {
        self.init(version: Int(revision.version), createdAt: Timestamp.date(seconds: revision.createdAt), merged: revision.merged)
    }
}

extension RevisionInfo {
    /// The wire form of a listed revision.
    init(_ revision: NoteRevision) { self.init(RevisionStamp(revision), size: revision.size) }
}

extension Revision {
    /// The wire form of a revision read with its body.
    init(_ revision: NoteRevision) { self.init(RevisionStamp(revision), body: revision.body ?? "") }
}

extension MergeReport {
    /// The wire form of a store's merge.
    init(_ merge: NoteMerge) {
        self.init(
            base: Int(merge.base), result: merge.overlapped ? "overlap" : "clean",
            regions: merge.regions.map { Region(start: $0.lowerBound, end: $0.upperBound) })
    }
}

/// The `409`s of a write that cannot be merged: problem+json whose `type` says why, with what
/// the client needs to merge by hand.
enum NoteConflicts {
    static let unknownBaseType = "/problems/unknown-base"
    static let mergeLimitsType = "/problems/merge-too-large"
    static let deletedType = "/problems/note-deleted"

    /// A write made from a version of a note that has since been deleted: the note is in the
    /// trash, and an edit does not bring it back. `note` is the note as it was deleted, and the
    /// `ETag` its version then, as in every other `409` of a write.
    static func deleted(_ trashed: TrashedNote, attachments: [UploadRecord]) -> HTTPError {
        let id = trashed.note.id, deletedAt = Timestamp.format(trashed.deletedAt)
        let note = Note(trashed.note, attachments: attachments)
        return conflict(
            deletedType, etag: note.etag,
            detail: "note \(id) was deleted at \(deletedAt) UTC and is in the trash: nothing was "
                + "changed. POST /notes/\(id)/restore (without a version) brings it back with its revisions; then send your edit "
                + "again with the same Base-Version and it is merged",
            members: ["deleted_at": .string(deletedAt), "note": jsonValue(note)])
    }

    /// The version the write was made from is not kept (or never was): no merge, no overwrite.
    static func unknownBase(_ base: Int64, current: Note) -> HTTPError {
        conflict(
            unknownBaseType, etag: current.etag,
            detail: "note \(current.id) has no revision \(base) kept to merge your edit with: "
                + "nothing was changed. Its current version is \(current.version) (in `note`): merge your edit into it and send it "
                + "with Base-Version: \(current.version)",
            members: ["note": jsonValue(current)])
    }

    /// The merge is past its bounds: both versions go back, nothing was changed.
    static func pastMergeLimits(current: Note, base: NoteRevision) -> HTTPError {
        conflict(
            mergeLimitsType, etag: current.etag,
            detail: "note \(current.id) is too large (or too changed) to merge your edit with on the "
                + "server: nothing was changed. `note` is the current version, `base` the version your edit was made from",
            members: ["note": jsonValue(current), "base": jsonValue(Revision(base))])
    }

    /// A `409` of a write that changed nothing: its problem `type`, the note's current `ETag`
    /// (as in every other `409` of a write), and what the client needs to go on in `members`.
    private static func conflict(_ type: String, etag: String, detail: String, members: [String: JSONValue]) -> HTTPError {
        var error = HTTPError(HTTPStatus(409), detail: detail, headers: HTTPHeaders([("ETag", etag)]))
        error.type = type
        error.members = members
        return error
    }

    static func jsonValue(_ value: some Encodable) -> JSONValue {
        (try? JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(value))) ?? .null
    }
}

/// Notes as the API shows them: with their attachments, read in one go per page.
enum NoteRendering {
    static func notes(_ records: [NoteRecord], owner: Owner, store: some UploadStore) throws -> [Note] {
        let attachments = try store.attachments(of: records.map(\.id), owner: owner)
        return records.map { Note($0, attachments: attachments[$0.id] ?? []) }
    }

    static func note(_ record: NoteRecord, owner: Owner, store: some UploadStore) throws -> Note {
        try notes([record], owner: owner, store: store)[0]
    }

    /// Notes in the trash, with the attachments they keep there and when they were deleted.
    static func trashed(_ trashed: [TrashedNote], owner: Owner, store: some UploadStore) throws -> [DeletedNote] {
        let attachments = try store.attachments(of: trashed.map(\.note.id), owner: owner)
        return trashed.map {
            DeletedNote(note: Note($0.note, attachments: attachments[$0.note.id] ?? []), deletedAt: Timestamp.date(seconds: $0.deletedAt))
        }
    }

    /// The server-sent event for a change: `data` is the note (as it was, when deleted, with
    /// the attachments it keeps in the trash), with `base` when a merge made this version.
    static func event(_ event: NoteEvent, owner: Owner, store: some UploadStore) throws -> ServerSentEvent {
        // A new note has no attachments yet (uploads attach by later writes, each with its own
        // event): no read. A note back from the trash (`note.created` past version 1) has its
        // own again; a deleted one keeps them in the trash until it is emptied.
        let needsAttachments = event.kind != .created || event.note.version > 1
        let attachments = needsAttachments ? try store.attachments(of: [event.note.id], owner: owner)[event.note.id] ?? [] : []
        let note = StoredNote(
            record: event.note, attachments: attachments, deletedAt: event.kind == .deleted ? event.at : nil,
            mergeBase: event.mergeBase)
        var json = JSONWriter(capacity: note.estimatedJSONSize)
        note.write(to: &json)
        let data = String(decoding: json.bytes, as: UTF8.self)
        return ServerSentEvent(id: event.id, event: event.kind.rawValue, data: data)
    }
}

/// Parsing of the pieces of a notes request.
enum NoteInput {
    /// Note bodies in one page of `GET /notes`, in bytes: a page is cut short (with `next`) once
    /// its notes hold this many, so a list of large notes is never built whole in memory.
    static let pageBudget = 4 << 20

    /// The path's `id`: a note id as the API writes them (`noteID`).
    static let idField = InputField<Int64>(
        "id", schema: .string(pattern: "^([1-9][0-9]*|0)$", example: "42"),
        description: "the note's id, as the API writes it (decimal digits, no leading zero); any other id is `404`",
        message: "must be a note id", parse: noteID)

    /// A path id (`idField`), else `404` (no note can have such an id).
    static func id(_ context: RequestContext) throws(HTTPError) -> Int64 {
        let text = context.parameters[idField.name] ?? ""
        guard let id = idField.parse(text) else {
            throw HTTPError(.notFound, detail: "note \(text) does not exist")
        }
        return id
    }

    /// The note id `text` names: decimal digits exactly as the API writes ids (`"42"`; never
    /// `"042"` or `"+42"`), else nil.
    @Sendable static func noteID(_ text: String) -> Int64? {
        guard isDigits(text), let id = Int64(text), String(id) == text else { return nil }
        return id
    }

    /// A page's `limit`: 1…1000, larger numbers act as 1000 (digits only; a number too large for
    /// `Int` acts as the maximum too); `description` says what a page holds.
    static func limit(_ description: String) -> InputField<Int> {
        InputField(
            "limit", schema: .integer(minimum: 1, description: "values over 1000 act as 1000"), description: description,
            message: "must be a whole number of at least 1 (over 1000 acts as 1000)"
        ) { text in
            let value = isDigits(text) ? (Int(text) ?? Int.max) : 0
            return value >= 1 ? min(value, 1000) : nil
        }
    }

    /// A page's `after`: the cursor, digits; `cursor` says what it is in the `400`.
    static func after(cursor: String, description: String) -> InputField<Int64> {
        InputField(
            "after", schema: .integer(minimum: 0, maximum: Int64.max, format: "int64"), description: description,
            message: "must be \(cursor)"
        ) { isDigits($0) ? Int64($0) : nil }
    }

    /// The query of `GET /notes`.
    enum List {
        static let limit = NoteInput.limit("notes per page (default 100)")
        static let after = NoteInput.after(
            cursor: "a note id (with order=updated, the after of a next link)",
            description:
                "cursor: a note id; with the default order the page has smaller ids, with `order=asc` larger ones; with `order=updated` the event id of a note's last change, as the `next` link sets it (the page has notes changed before)"
        )
        static let order = InputField<NoteOrder>.choice(
            "order", ["desc": .newestFirst, "asc": .oldestFirst, "updated": .recentlyUpdated],
            description:
                "`desc` (default) newest first, `asc` oldest first, `updated` the last changed first (commit order of each note's last change)")
        static let search = InputField.text("q", description: "full-text search over the notes' bodies; blank means none")
        static let parameters: [OpenAPIParameter] = [.query(limit), .query(after), .query(order), .query(search)]
    }

    /// The query of `GET /notes/changes`.
    enum Feed {
        static let since = InputField<Int64>(
            "since", schema: .integer(format: "int64"),
            description: "the cursor of an earlier answer, or an event id (`0`: before the first); absent: everything (a walk)",
            message: "must be a cursor: an event id or the cursor of an earlier answer"
        ) { text in
            isDigits(text.hasPrefix("-") ? String(text.dropFirst()) : text) ? Int64(text) : nil
        }
        static let limit = NoteInput.limit("changes per page (default 100; a page is also cut at 4 MiB of bodies)")
        static let parameters: [OpenAPIParameter] = [.query(since), .query(limit)]
    }

    /// A page's `limit` (default 100) and `after`, as `GET /notes/{id}/revisions` and
    /// `GET /notes/trash` read them.
    struct Page {
        let limit: InputField<Int>
        let after: InputField<Int64>
        var parameters: [OpenAPIParameter] { [.query(limit), .query(after)] }
    }

    static let revisionsPage = Page(
        limit: limit("revisions per page (default 100)"),
        after: after(cursor: "a version", description: "cursor: a version; the page has older ones"))
    static let trashPage = Page(
        limit: limit("notes per page (default 100)"),
        after: after(cursor: "a note id", description: "cursor: the id of the last note of the previous page"))

    /// The path's `version` of a revision (as `noteID` reads it).
    static let versionField = InputField<Int64>(
        "version", schema: .string(pattern: "^[1-9][0-9]*$", example: "3"),
        description: "the note's version the revision is",
        message: "must be a version", parse: noteID)

    /// The `body` field: `nil` when absent, `422` when not a string.
    static func body(_ request: Request) throws(HTTPError) -> String? {
        try request.body().string("body")
    }

    /// The new body of an update: as `body`, except that an empty `body` field of a form is
    /// none — the tutorial's edit screen sends `body=` for a note it did not touch, and its
    /// controller answers "No Body Sent" with the note unchanged. An empty JSON string empties.
    static func updatedBody(_ request: Request) throws(HTTPError) -> String? {
        let body = try request.body()
        guard let text = try body.string("body") else { return nil }
        if text.isEmpty, case .form = body { return nil }
        return text
    }

    /// `limit`, `after`, `order`, `q` of `GET /notes`; every bad one listed in one `400`.
    static func query(_ request: Request) throws(HTTPError) -> (NoteQuery, given: FormFields) {
        try QueryInput.read(request) { input in
            var query = NoteQuery()
            if let limit = input[List.limit] { query.limit = limit }
            query.after = input[List.after]
            query.order = input[List.order] ?? .newestFirst
            if let q = input[List.search], !q.trimmingASCIISpaces().isEmpty { query.search = q }
            return (query, input.fields)
        }
    }

    /// `since` and `limit` (default 100) of `GET /notes/changes`; bad ones are `400`.
    static func feedQuery(_ request: Request) throws(HTTPError) -> (since: Int64?, limit: Int) {
        try QueryInput.read(request) { input in
            let limit = input[Feed.limit] ?? 100
            return (input[Feed.since], limit)
        }
    }

    /// `limit` (default 100) and `after` of a page of revisions or of the trash; bad ones are `400`.
    static func pageQuery(_ request: Request, _ fields: Page) throws(HTTPError) -> (limit: Int, after: Int64?) {
        try QueryInput.read(request) { input in (input[fields.limit] ?? 100, input[fields.after]) }
    }

    /// The largest version a field may name: 2^53 − 1, the largest whole number a JSON number
    /// carries exactly (JSON numbers decode as doubles); versions count writes, so no note
    /// comes near it.
    static let largestVersion: Int64 = 9_007_199_254_740_991

    /// A body field that names a version: a whole number from 1 to `largestVersion` (in a form,
    /// its digits).
    static func bodyVersion(_ name: String, description: String) -> InputField<Int64> {
        InputField(
            name, schema: .integer(minimum: 1, maximum: largestVersion, description: description),
            message: "must be a version: a whole number from 1 to \(largestVersion)"
        ) { text in
            isDigits(text) ? Int64(text).flatMap { (1...largestVersion).contains($0) ? $0 : nil } : nil
        }
    }

    /// `base_version` of an update.
    static let baseVersionField = bodyVersion(
        "base_version",
        description: "the version the edit was made from (in a form: its digits), as the `Base-Version` header: an older one is merged")
    /// `version` of a restore.
    static let restoreField = bodyVersion(
        "version", description: "the revision to restore (in a form: its digits); absent: the note comes back from the trash")

    /// The version `field` of the body names (form: digits; JSON: an integer, or a string of
    /// digits): nil when absent, `422` when it is not a version.
    static func version(_ request: Request, field: InputField<Int64>) throws(HTTPError) -> Int64? {
        let invalid = HTTPError.validation([field.error])
        if case .json(let object) = try request.body() {
            switch object[field.name] {
            case .integer(let value)?:
                guard (1...largestVersion).contains(value) else { throw invalid }
                return value
            case .number(let value)?:
                // JSON numbers decode as doubles: a whole one within range is a version.
                guard value >= 1, value <= Double(largestVersion), value.rounded() == value else { throw invalid }
                return Int64(value)
            default: break
            }
        }
        let text: String?
        do {
            text = try request.body().string(field.name)
        } catch {
            throw invalid
        }
        guard let text else { return nil }
        guard let value = field.parse(text) else { throw invalid }
        return value
    }

    /// The version an update was made from: the header `Base-Version` (`400` when present and
    /// not a version as `headerVersion` reads it) or the field `base_version` (`422` when not a
    /// version), the field's when both are given; nil when neither.
    static func baseVersion(_ request: Request) throws(HTTPError) -> Int64? {
        let header = try headerVersion(request, "Base-Version")
        return try version(request, field: baseVersionField) ?? header
    }

    /// The version header `name` carries, blanks around: a version as the API writes it
    /// (`versionNumber`) of at most 18 digits; nil when absent, `400` naming the header when it
    /// is anything else (`01`, `+1`, `1.0`), so nothing is stored.
    static func headerVersion(_ request: Request, _ name: String) throws(HTTPError) -> Int64? {
        guard let given = request.headers[name] else { return nil }
        let text = String(given.trimmingASCIISpaces())
        guard text.utf8.count <= 18, let value = versionNumber(text) else {
            throw HTTPError.badRequest(
                "\(name) must be the version the edit was made from, a whole number from 1 without sign or leading zero (the digits of its ETag); got \(text.isEmpty ? "nothing" : text)"
            )
        }
        return value
    }

    /// A version as the API writes it (the digits of an `ETag`, the path's `{version}`): decimal
    /// digits from 1, no sign, no leading zero; else nil.
    @Sendable static func versionNumber(_ text: String) -> Int64? {
        noteID(text).flatMap { $0 >= 1 ? $0 : nil }
    }

    /// Whether the body has field `name`, whatever its value (a malformed body has none).
    static func has(_ request: Request, field name: String) -> Bool {
        switch try? request.body() {
        case .form(let fields)?: fields[name] != nil
        case .json(let object)?: object[name] != nil
        case .empty?, nil: false
        }
    }

    /// Whether a write says which version it was made from (`Base-Version` or `base_version`,
    /// well-formed or not).
    static func namesBase(_ request: Request) -> Bool {
        request.headers["Base-Version"] != nil || has(request, field: baseVersionField.name)
    }

    /// One or more ASCII digits, nothing else (no sign, no space).
    static func isDigits(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
