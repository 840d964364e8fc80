import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operations of `NotesController`.
enum NotesOperations {
    static let id = OpenAPIParameter.path(NoteInput.idField)
    static let etag = OpenAPIHeader("the note's version, quoted: `\"3\"`", schema: .string(pattern: "^\"[0-9]+\"$"))
    /// `*` or entity tags in double quotes separated by commas, as the writes read them (an
    /// empty value is no condition).
    /// A tag's characters are RFC 9110's `etagc` but the comma, which separates the list here.
    static let entityTagList = JSONSchema.string(
        pattern: #"^[ \t]*(\*|(W/)?"[\x21\x23-\x2B\x2D-\x7E]*"([ \t]*,[ \t]*(W/)?"[\x21\x23-\x2B\x2D-\x7E]*")*)?[ \t]*$"#)
    static let ifMatch = OpenAPIParameter.header(
        "If-Match", entityTagList,
        description:
            "ETags in double quotes separated by commas (`\"3\"`), or `*`: when none is the note's current one, nothing changes and the answer is `412`; any other form (`3`) is `400`"
    )
    static let ifNoneMatch = OpenAPIParameter.header(
        "If-None-Match", entityTagList,
        description:
            "ETags in double quotes separated by commas, or `*`: when one is the note's current one (`*`: the note exists), nothing changes and the answer is `412`; any other form is `400`"
    )
    static let stale = OpenAPIResponse.problem(
        "`If-Match` names another version, or `If-None-Match` this one; its `ETag` header is the current one", headers: ["ETag": etag])
    static let missing = OpenAPIResponse.problem("no note has this id")
    static let malformedBody = OpenAPIResponse.problem(
        "the body is malformed (bad JSON, percent-encoding, UTF-8 or multipart), `_method` is not PUT, PATCH or DELETE, or (on a write) `If-Match`/`If-None-Match` is not `*` or quoted ETags"
    )
    static let tooLarge = OpenAPIResponse.problem("the body is over the server's limit")
    static let unsupported = OpenAPIResponse.problem(
        "the body is not form-urlencoded, multipart or JSON, or it has a file part (nothing of it is stored)")
    static let notString = OpenAPIResponse.problem("`body` is not a string, or a multipart body has too many parts")

    /// The request fields, as components so the three body types share them.
    static let components: [String: JSONSchema] = [
        "NoteFields": .object(
            [
                "body": .string(description: "the note's text; absent leaves the note unchanged"),
                NoteInput.baseVersionField.name: NoteInput.baseVersionField.schema,
            ],
            optional: ["body", NoteInput.baseVersionField.name],
            description: "A note's fields. Client-sent `id`, `version`, `created_at` and `updated_at` are ignored."),
        "RestoreFields": .object(
            [NoteInput.restoreField.name: NoteInput.restoreField.schema],
            optional: [NoteInput.restoreField.name],
            description: "Which revision of the note to restore; none for a note in the trash."),
        "NoteTombstone": NoteChangeList.deletedNote,
        "NewNoteFields": .object(
            ["body": .string(description: "the note's text; an empty string is a valid note")],
            description: "The fields of a new note."),
    ]

    static let list = OpenAPIOperation(
        operationID: "listNotes", summary: "List notes, newest first", tags: ["notes"],
        parameters: NoteInput.List.parameters,
        responses: [
            200: .json(.ref(NoteList.self), "a page, and the path of the next one"),
            400: .problem("a query parameter is invalid (each one is listed in `errors`), or the query is not valid percent-encoded UTF-8"),
        ])

    static let create = OpenAPIOperation(
        operationID: "createNote", summary: "Create a note",
        description: "Answered once the note is durable.", tags: ["notes"],
        requestBody: .fields(.ref(named: "NewNoteFields"), required: true),
        responses: [
            201: .json(
                .ref(NoteEnvelope.self), "created (`message` is `Note Created`)",
                headers: ["ETag": etag, "Location": OpenAPIHeader("the note's path: `/notes/{id}`", schema: .string(pattern: "^/notes/[0-9]+$"))]),
            303: .empty(
                "a retry with an `Idempotency-Key` whose first answer was kept as a reference (it was over 64 KiB, or older ones past the user's budget): `Location` is the note it created, `Idempotent-Replayed` is `true`",
                headers: ["Location": OpenAPIHeader("the note's path: `/notes/{id}`", schema: .string(pattern: "^/notes/[0-9]+$"))]),
            400: malformedBody,
            409: .problem("a request with this `Idempotency-Key` is still running (on any instance)"),
            413: tooLarge, 415: unsupported,
            422: .problem(
                "`body` is absent or not a string, or a multipart body has too many parts, or the `Idempotency-Key` was used with another body"),
        ])

    static let events = OpenAPIOperation(
        operationID: "noteEvents", summary: "Live changes as server-sent events",
        description: """
            Events `note.created`, `note.updated` and `note.deleted`, whose `data` is the note with its `version` (as it was, for `note.deleted`, with the attachments it keeps in the trash and `deleted_at`: when it was deleted; with `base`, the version the edit was made from, when a merge made it), and `id` an integer that grows across all events and restarts — the same ids as the cursors of `GET /notes/changes`. The first message has no data: as its `id:`, the cursor the stream goes on from, and `retry: 3000`, so a client that has seen no event can resume (`Last-Event-ID`, or `GET /notes/changes?since=`) with no gap. Without `Last-Event-ID` the stream starts with the next event; with it the missed events are replayed first, or, when they can't be, the first message has no `id:` and one `reload` event tells the client to list again (`GET /notes/changes?since=` with its cursor may still answer with the changes: the feed holds more than the replay). A `:` comment every 15 s.
            """,
        tags: ["notes"],
        parameters: [.header("Last-Event-ID", description: "the id of the last event received")],
        responses: [
            200: OpenAPIResponse(
                "the stream; it does not end", content: ["text/event-stream": .string()],
                headers: ["Cache-Control": OpenAPIHeader(schema: .string(enum: ["no-cache"]))])
        ])

    static let changes = OpenAPIOperation(
        operationID: "noteChanges", summary: "Every note changed after a cursor, once each, in commit order",
        description: """
            The change feed: every note changed after `since`, each once in its latest state — the note as `GET /notes/{id}` shows it, or `{"id", "version", "deleted": true}` — in commit order (on PostgreSQL across every instance, as the event stream). `cursor` is the next request's `since`: the id of the last event the page includes, the same ids as the event stream's `id:`, so a client can pull, then subscribe with `Last-Event-ID: <cursor>` (or the other way round) and see every change exactly once. Without `since`, or with a cursor the feed no longer holds (older than a deleted note's tombstone, kept `--feed-days`, default 90; or beyond the last event, as after a restore from an older backup), the answer walks the complete current state with `reset: true` on every page of the walk: the pages before its last carry a negative `cursor` that goes on with the walk; once the page with `more: false` is read, every note the walk did not name is gone. Never an error, never a gap.
            """,
        tags: ["notes"],
        parameters: NoteInput.Feed.parameters,
        responses: [
            200: .json(.ref(NoteChangeList.self), "a page of changes, its cursor, whether more follow"),
            400: .problem("a query parameter is invalid (each one is listed in `errors`), or the query is not valid percent-encoded UTF-8"),
        ])

    static let show = OpenAPIOperation(
        operationID: "showNote", summary: "Show a note", tags: ["notes"],
        parameters: [
            id,
            .header(
                "If-None-Match",
                description:
                    "ETags separated by commas, or `*`: when one is the note's current one, the answer is `304` (a malformed value never matches)"),
            .header("If-Match", description: "ETags separated by commas, or `*`: when none is the note's current one, the answer is `412`"),
        ],
        responses: [
            200: .json(.ref(NoteEnvelope.self), "the note", headers: ["ETag": etag]),
            304: .empty("the note is unchanged", headers: ["ETag": etag]),
            404: missing,
            412: .problem("`If-Match` names no current ETag; its `ETag` header is the current one", headers: ["ETag": etag]),
        ])

    /// `PUT` and `PATCH` do the same.
    static func update(_ method: String) -> OpenAPIOperation {
        OpenAPIOperation(
            operationID: method == "PUT" ? "updateNote" : "patchNote", summary: "Update a note",
            description:
                "A missing note is `404`; then `If-Match` is checked; without a `body` field nothing changes (`No Body Sent`). With `Base-Version` (or the field `base_version`) older than the note's version, the body is merged with what was committed since (a three-way merge with revision `Base-Version` as the common ancestor, made in the write) and the answer says how in `merge`. Also `POST /notes/{id}` with `_method=\(method)` or `X-HTTP-Method-Override: \(method)`. With an `Idempotency-Key`, the same edit sent again (its answer lost) gets the first answer again (`Idempotent-Replayed: true`) and is not merged twice; while the first runs, `409`. Answered once the change is durable.",
            tags: ["notes"],
            parameters: [id, ifMatch, ifNoneMatch, baseVersion],
            requestBody: .fields(.ref(named: "NoteFields"), required: false),
            responses: [
                200: .json(
                    .ref(NoteEnvelope.self), "updated (`Note Updated`; with `merge` when merged), or unchanged (`No Body Sent`)",
                    headers: ["ETag": etag]),
                400: malformedBody, 404: .problem("no note has this id (a note in the trash too, when the write has no `Base-Version`)"),
                409: .problem(
                    "a write with `Base-Version`: that revision is not kept (`type` `/problems/unknown-base`, the current note in `note`), the merge is past the server's bounds (`/problems/merge-too-large`, `note` and the `base` revision), or the note was deleted and is in the trash (`/problems/note-deleted`, with `deleted_at` and the note as it was in `note`: `POST /notes/{id}/restore` brings it back); nothing changed. Or a request with this `Idempotency-Key` is still running (on any instance): then no `ETag`",
                    headers: [
                        "ETag": OpenAPIHeader(
                            "the note's version, quoted: `\"3\"` (absent when the `Idempotency-Key` is still running)",
                            required: false, schema: .string(pattern: "^\"[0-9]+\"$"))
                    ]),
                412: stale, 413: tooLarge, 415: unsupported,
                422: .problem(
                    "`body` is not a string, or a multipart body has too many parts, or the `Idempotency-Key` was used with another body or `Base-Version`"
                ),
                429: .problem(
                    "a write with an older `Base-Version` while the user's budget of merge work is spent (`type` `/problems/merge-budget-spent`), refused before any merge work; nothing changed: send it again after `Retry-After` seconds",
                    headers: ["Retry-After": OpenAPIHeader("seconds", schema: .string(pattern: "^[0-9]+$"))]),
            ])
    }

    static let delete = OpenAPIOperation(
        operationID: "deleteNote", summary: "Move a note to the trash",
        description:
            "The note leaves the list and its own path (`404`), and goes to the trash (`GET /notes/trash`) with its revisions and attachments for `--trash-days` (default 30): `POST /notes/{id}/restore` brings it back until then. Also `POST /notes/{id}` with `_method=DELETE` or `X-HTTP-Method-Override: DELETE`. Answered once the deletion is durable.",
        tags: ["notes"],
        parameters: [id, ifMatch, ifNoneMatch],
        responses: [
            200: .json(
                .ref(NoteEnvelope.self), "the note as it was, with the attachments it keeps in the trash (`Note Deleted`)", headers: ["ETag": etag]),
            400: .problem("`If-Match` or `If-None-Match` is not `*` or quoted ETags"), 404: missing, 412: stale,
        ])

    /// 1 to 18 digits, no leading zero (`NoteInput.headerVersion`), blanks around.
    static let baseVersionPattern = "^[ \\t]*[1-9][0-9]{0,17}[ \\t]*$"

    static let baseVersion = OpenAPIParameter.header(
        "Base-Version", .string(pattern: baseVersionPattern),
        description:
            "the version the edit was made from: the current one is a plain update, an older one is merged; anything but a whole number from 1 of at most 18 digits, without sign or leading zero (the digits of the `ETag`), is `400`"
    )

    static let version = OpenAPIParameter.path(NoteInput.versionField)

    static let revisions = revisionList(
        operationID: "listRevisions", summary: "List a note's revisions, newest first",
        description:
            "Every committed version of the note is kept for `--revision-days` (default 30), then the newest of each day until three times as long, then the newest of each week; the newest is always kept. A note in the trash keeps its revisions there, at `/notes/trash/{id}/revisions`; here it is `404`.",
        missing: missing)

    static let revision = revisionShown(
        operationID: "showRevision", summary: "Show a revision of a note, with its body",
        missing: "no note has this id (a deleted one's are under `/notes/trash/{id}`), or it has no revision kept at this version")

    static let trashedRevisions = revisionList(
        operationID: "listTrashedRevisions", summary: "List a deleted note's revisions, newest first",
        description:
            "The history a note keeps in the trash, as `GET /notes/{id}/revisions` lists a live note's; it goes when the note leaves the trash for good, and moves back with a restore.",
        missing: .problem("no note with this id is in the trash"))

    static let trashedRevision = revisionShown(
        operationID: "showTrashedRevision", summary: "Show a revision of a deleted note, with its body",
        missing: "no note with this id is in the trash, or it has no revision kept at this version")

    private static func revisionShown(operationID: String, summary: String, missing: String) -> OpenAPIOperation {
        OpenAPIOperation(
            operationID: operationID, summary: summary, tags: ["notes"], parameters: [id, version],
            responses: [200: .json(.ref(RevisionEnvelope.self), "the revision"), 404: .problem(missing)])
    }

    private static func revisionList(operationID: String, summary: String, description: String, missing: OpenAPIResponse) -> OpenAPIOperation {
        OpenAPIOperation(
            operationID: operationID, summary: summary, description: description, tags: ["notes"],
            parameters: [id] + NoteInput.revisionsPage.parameters,
            responses: [
                200: .json(.ref(RevisionList.self), "a page, and the path of the next one"),
                400: .problem("a query parameter is invalid (each one is listed in `errors`)"),
                404: missing,
            ])
    }

    static let restore = OpenAPIOperation(
        operationID: "restoreNote", summary: "Restore a note's body from a revision, or the note from the trash",
        description:
            "With `version`: the note gets a new version whose body is revision `version`'s (its attachments stay as they are); a missing note is `404`, then `If-Match` is checked. Without `version`: a note in the trash comes back with its id, body, attachments and revisions, at the next version (a `note.created` event); `If-Match` is not checked. Answered once the change is durable.",
        tags: ["notes"],
        parameters: [id, ifMatch, ifNoneMatch],
        requestBody: .fields(.ref(named: "RestoreFields"), required: false),
        responses: [
            200: .json(.ref(NoteEnvelope.self), "restored (`Note Restored`)", headers: ["ETag": etag]),
            400: malformedBody, 404: .problem("no note has this id (without `version`: none in the trash), or it has no revision kept at `version`"),
            412: stale,
            409: .problem("no `version`, and the note is not in the trash: only one of its revisions can be restored"),
            413: tooLarge, 415: unsupported, 422: .problem("`version` is not a whole number from 1"),
        ])

    static let trash = OpenAPIOperation(
        operationID: "listTrash", summary: "List deleted notes, most recently deleted first",
        description:
            "The notes deleted less than `--trash-days` (default 30) ago, each with its attachments and `deleted_at`; then the retention sweep removes them for good. Notes deleted in the same second are in the order of their deletions. A note restored or removed for good in the last week still marks its place for the `after` cursor.",
        tags: ["notes"],
        parameters: NoteInput.trashPage.parameters,
        responses: [
            200: .json(.ref(TrashList.self), "a page, and the path of the next one"),
            400: .problem(
                "a query parameter is invalid, or `after` names no note in the user's trash, now or in the last week (each one is listed in `errors`)"
            ),
        ])

    static let purge = OpenAPIOperation(
        operationID: "purgeNote", summary: "Remove a note from the trash for good",
        description:
            "With its revisions and attachments: the rows at once, the attachments' bytes once that is durable. Answered once it is durable. `If-Match` and `If-None-Match` are checked against the version the note has in the trash (`ETag` of `GET /notes/trash`'s note): one restored and deleted again since is at a later version, and stays.",
        tags: ["notes"],
        parameters: [id, ifMatch, ifNoneMatch],
        responses: [
            204: .empty("removed"),
            400: .problem("`If-Match` or `If-None-Match` is not `*` or quoted ETags"),
            404: .problem("no note with this id is in the trash"),
            412: .problem(
                "`If-Match` names another version of the note in the trash, or `If-None-Match` this one; its `ETag` header is the current one",
                headers: ["ETag": etag]),
        ])
}
