import JotterAPI
import JotterHTTP
import JotterStore
import JotterWire

extension Note {
    /// The wire form of a stored note with its attachments.
    init(_ record: NoteRecord, attachments: [UploadRecord]) {
        self.init(id: String(record.id), body: record.body, createdAt: Timestamp.date(seconds: record.createdAt),
                  updatedAt: Timestamp.date(seconds: record.updatedAt), version: Int(record.version),
                  attachments: attachments.map(Upload.init))
    }
}

extension Upload {
    /// The wire form of a stored upload.
    package init(_ record: UploadRecord) {
        self.init(id: record.id, filename: record.filename, contentType: record.contentType, size: record.size,
                  sha256: record.sha256, createdAt: Timestamp.date(seconds: record.createdAt),
                  noteID: record.noteID.map(String.init), url: "/uploads/\(record.id)/content")
    }
}

extension RevisionInfo {
    /// The wire form of a listed revision.
    init(_ revision: NoteRevision) {
        self.init(version: Int(revision.version), createdAt: Timestamp.date(seconds: revision.createdAt), size: revision.size,
                  merged: revision.merged)
    }
}

extension Revision {
    /// The wire form of a revision read with its body.
    init(_ revision: NoteRevision) {
        self.init(version: Int(revision.version), createdAt: Timestamp.date(seconds: revision.createdAt), body: revision.body ?? "",
                  merged: revision.merged)
    }
}

extension MergeReport {
    /// The wire form of a store's merge.
    init(_ merge: NoteMerge) {
        self.init(base: Int(merge.base), result: merge.overlapped ? "overlap" : "clean",
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
        var error = HTTPError(HTTPStatus(409), detail: "note \(id) was deleted at \(deletedAt) UTC and is in the trash: nothing was "
            + "changed. POST /notes/\(id)/restore (without a version) brings it back with its revisions; then send your edit "
            + "again with the same Base-Version and it is merged", headers: HTTPHeaders([("ETag", note.etag)]))
        error.type = deletedType
        error.members = ["deleted_at": .string(deletedAt), "note": jsonValue(note)]
        return error
    }

    /// The version the write was made from is not kept (or never was): no merge, no overwrite.
    static func unknownBase(_ base: Int64, current: Note) -> HTTPError {
        var error = HTTPError(HTTPStatus(409), detail: "note \(current.id) has no revision \(base) kept to merge your edit with: "
            + "nothing was changed. Its current version is \(current.version) (in `note`): merge your edit into it and send it "
            + "with Base-Version: \(current.version)", headers: HTTPHeaders([("ETag", current.etag)]))
        error.type = unknownBaseType
        error.members = ["note": jsonValue(current)]
        return error
    }

    /// The merge is past its bounds: both versions go back, nothing was changed.
    static func pastMergeLimits(current: Note, base: NoteRevision) -> HTTPError {
        var error = HTTPError(HTTPStatus(409), detail: "note \(current.id) is too large (or too changed) to merge your edit with on the "
            + "server: nothing was changed. `note` is the current version, `base` the version your edit was made from",
            headers: HTTPHeaders([("ETag", current.etag)]))
        error.type = mergeLimitsType
        error.members = ["note": jsonValue(current), "base": jsonValue(Revision(base))]
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
        let note = StoredNote(record: event.note, attachments: attachments, deletedAt: event.kind == .deleted ? event.at : nil,
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

    /// A path id: a note id as the API writes them, else `404` (no note can have such an id).
    static func id(_ context: RequestContext) throws(HTTPError) -> Int64 {
        let text = context.parameters["id"] ?? ""
        guard let id = noteID(text) else {
            throw HTTPError(.notFound, detail: "note \(text) does not exist")
        }
        return id
    }

    /// The note id `text` names: decimal digits exactly as the API writes ids (`"42"`; never
    /// `"042"` or `"+42"`), else nil.
    static func noteID(_ text: String) -> Int64? {
        guard isDigits(text), let id = Int64(text), String(id) == text else { return nil }
        return id
    }

    /// A `limit` query value: 1…1000 (larger numbers act as 1000), nil when not a whole number from 1.
    static func limit(_ text: String) -> Int? {
        // Digits only; a number too large for Int acts as the maximum, like any over 1000.
        let value = isDigits(text) ? (Int(text) ?? Int.max) : 0
        return value >= 1 ? min(value, 1000) : nil
    }

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
        let fields = try request.query()
        var query = NoteQuery()
        var errors: [HTTPError.FieldError] = []
        if let limit = fields["limit"] {
            if let value = Self.limit(limit) { query.limit = value }
            else { errors.append(.init(field: "limit", message: "must be a whole number from 1 to 1000")) }
        }
        if let after = fields["after"] {
            if isDigits(after), let value = Int64(after) { query.after = value }
            else { errors.append(.init(field: "after", message: "must be a note id (with order=updated, the after of a next link)")) }
        }
        switch fields["order"] {
        case nil, "desc": query.order = .newestFirst
        case "asc": query.order = .oldestFirst
        case "updated": query.order = .recentlyUpdated
        default: errors.append(.init(field: "order", message: "must be desc, asc or updated"))
        }
        if let q = fields["q"], !q.trimmingASCIISpaces().isEmpty { query.search = q }
        guard errors.isEmpty else { throw HTTPError.badQuery(errors) }
        return (query, fields)
    }

    /// `since` and `limit` (default 100) of `GET /notes/changes`; bad ones are `400`.
    static func feedQuery(_ request: Request) throws(HTTPError) -> (since: Int64?, limit: Int) {
        let fields = try request.query()
        var limit = 100, since: Int64?
        var errors: [HTTPError.FieldError] = []
        if let text = fields["limit"] {
            if let value = Self.limit(text) { limit = value }
            else { errors.append(.init(field: "limit", message: "must be a whole number from 1 to 1000")) }
        }
        if let text = fields["since"] {
            let digits = text.hasPrefix("-") ? String(text.dropFirst()) : text
            if isDigits(digits), let value = Int64(text) { since = value }
            else { errors.append(.init(field: "since", message: "must be a cursor: an event id or the cursor of an earlier answer")) }
        }
        guard errors.isEmpty else { throw HTTPError.badQuery(errors) }
        return (since, limit)
    }

    /// `limit` (default 100) and `after` (`cursor`: a version for `GET /notes/{id}/revisions`, a
    /// note id for `GET /notes/trash`); bad ones are `400`.
    static func pageQuery(_ request: Request, cursor: String) throws(HTTPError) -> (limit: Int, after: Int64?) {
        let fields = try request.query()
        var limit = 100, after: Int64?
        var errors: [HTTPError.FieldError] = []
        if let text = fields["limit"] {
            if let value = Self.limit(text) { limit = value }
            else { errors.append(.init(field: "limit", message: "must be a whole number from 1 to 1000")) }
        }
        if let text = fields["after"] {
            if isDigits(text), let value = Int64(text) { after = value }
            else { errors.append(.init(field: "after", message: "must be \(cursor)")) }
        }
        guard errors.isEmpty else { throw HTTPError.badQuery(errors) }
        return (limit, after)
    }

    /// A version field of the body (form: digits; JSON: an integer or a string of digits): nil
    /// when absent, `422` when it is not a version (a whole number from 1).
    /// The largest version a field may name: 2^53 − 1, the largest whole number a JSON number
    /// carries exactly (JSON numbers decode as doubles); versions count writes, so no note
    /// comes near it.
    static let largestVersion: Int64 = 9_007_199_254_740_991

    static func version(_ request: Request, field: String) throws(HTTPError) -> Int64? {
        let invalid = HTTPError.validation([.init(field: field, message: "must be a version: a whole number from 1 to \(largestVersion)")])
        let text: String
        if case .json(let object) = try request.body() {
            switch object[field] {
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
        do {
            guard let found = try request.body().string(field) else { return nil }
            text = found
        } catch {
            throw invalid
        }
        guard isDigits(text), let value = Int64(text), (1...largestVersion).contains(value) else { throw invalid }
        return value
    }

    /// The version an update was made from: the header `Base-Version` (`400` when present and
    /// not a version) or the field `base_version` (`422` when not a version), the field's when
    /// both are given; nil when neither.
    static func baseVersion(_ request: Request) throws(HTTPError) -> Int64? {
        var header: Int64?
        if let given = request.headers["Base-Version"] {
            let text = String(given.trimmingASCIISpaces())
            guard isDigits(text), let value = Int64(text), value >= 1 else {
                throw HTTPError.badRequest("Base-Version must be the version the edit was made from, a whole number from 1 (the digits of its ETag); got \(text.isEmpty ? "nothing" : text)")
            }
            header = value
        }
        return try version(request, field: "base_version") ?? header
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
        request.headers["Base-Version"] != nil || has(request, field: "base_version")
    }

    /// One or more ASCII digits, nothing else (no sign, no space).
    static func isDigits(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
