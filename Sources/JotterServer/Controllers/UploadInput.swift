import JotterAPI
import JotterHTTP
import JotterStore

/// Parsing of the pieces of an uploads request.
enum UploadInput {
    /// The path's `id` of an upload (`isUploadID`); any other is `404`.
    static let idField = InputField<String>(
        "id", schema: .string(pattern: Upload.idPattern, example: "7c1a0e5b9d3f4a2e8b6c0d1f"),
        description: "the upload's id; any other id is `404`", message: "must be the id of an upload"
    ) { isUploadID($0) ? $0 : nil }

    /// The query of `GET /uploads`.
    enum List {
        static let limit = NoteInput.limit("uploads per page (default 100)")
        static let after = InputField<String>(
            "after", schema: .string(pattern: Upload.idPattern),
            description: "cursor: the id of the last upload of the previous page (deleted since: the listing goes on after its place)",
            message: idField.message, parse: idField.parse)
        static let note = InputField<UploadQuery.Attachment>(
            "note_id", schema: .string(pattern: "^([1-9][0-9]*|0)?$"),
            description: "only the attachments of this note; empty (`note_id=`): only the uploads attached to no note",
            message: "must be a note id, or empty for uploads attached to no note"
        ) { text in
            text.isEmpty ? .unattached : NoteInput.noteID(text).map { .note($0) }
        }
        static let parameters: [OpenAPIParameter] = [.query(limit), .query(after), .query(note)]
    }

    /// `limit`, `after`, `note_id` of `GET /uploads`; every bad one listed in one `400`.
    static func query(_ request: Request) throws(HTTPError) -> UploadQuery {
        try QueryInput.read(request) { input in
            var query = UploadQuery()
            if let limit = input[List.limit] { query.limit = limit }
            query.after = input[List.after]
            if let note = input[List.note] { query.attachment = note }
            return query
        }
    }

    /// The `next` link of a page that has more: the same filter and limit, after its last upload.
    static func next(_ query: UploadQuery, last: String) -> String {
        let filter =
            switch query.attachment {
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
    @Sendable static func isUploadID(_ text: String) -> Bool {
        text.utf8.count == 24 && text.utf8.allSatisfy { ASCII.isHexLowercase($0) }
    }
}
