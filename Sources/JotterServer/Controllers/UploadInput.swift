import JotterHTTP
import JotterStore

/// Parsing of the pieces of an uploads request.
enum UploadInput {
    /// `limit`, `after`, `note_id` of `GET /uploads`; every bad one listed in one `400`.
    static func query(_ request: Request) throws(HTTPError) -> UploadQuery {
        let fields = try request.query()
        var query = UploadQuery()
        var errors: [HTTPError.FieldError] = []
        if let limit = fields["limit"] {
            if let value = NoteInput.limit(limit) { query.limit = value }
            else { errors.append(.init(field: "limit", message: "must be a whole number from 1 to 1000")) }
        }
        if let after = fields["after"] {
            if isUploadID(after) { query.after = after }
            else { errors.append(.init(field: "after", message: "must be the id of an upload")) }
        }
        if let note = fields["note_id"] {
            if note.isEmpty { query.attachment = .unattached }
            else if let id = NoteInput.noteID(note) { query.attachment = .note(id) }
            else { errors.append(.init(field: "note_id", message: "must be a note id, or empty for uploads attached to no note")) }
        }
        guard errors.isEmpty else { throw HTTPError.badQuery(errors) }
        return query
    }

    /// The `next` link of a page that has more: the same filter and limit, after its last upload.
    static func next(_ query: UploadQuery, last: String) -> String {
        let filter = switch query.attachment {
        case .any: ""
        case .unattached: "&note_id="
        case .note(let id): "&note_id=\(id)"
        }
        return "/uploads?limit=\(query.limit)\(filter)&after=\(last)"
    }

    /// The `note_id` of `POST /uploads` or `PATCH /uploads/{id}`: nil when empty (no note),
    /// `404` when it can name no note.
    static func noteField(_ text: String) throws(HTTPError) -> Int64? {
        guard !text.isEmpty else { return nil }
        guard let id = NoteInput.noteID(text) else { throw HTTPError(.notFound, detail: "note \(text) does not exist") }
        return id
    }

    /// The note of a multipart `POST /uploads` (`noteField`): its `note_id` field, else the
    /// query's (as for a raw body). A query's that could name no note is `404` even beside a
    /// field.
    static func multipartNote(form: String?, query: String?) throws(HTTPError) -> Int64? {
        let fromQuery = try query.map(noteField) ?? nil
        return try form.map(noteField) ?? fromQuery
    }

    /// 24 lowercase hex digits: the only form an upload id takes.
    static func isUploadID(_ text: String) -> Bool {
        text.utf8.count == 24 && text.utf8.allSatisfy { ASCII.isHexLowercase($0) }
    }
}
