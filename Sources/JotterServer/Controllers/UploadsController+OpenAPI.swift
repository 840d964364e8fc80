import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operations of `UploadsController`.
enum UploadsOperations {
    static let id = OpenAPIParameter.path(UploadInput.idField)
    static let missing = OpenAPIResponse.problem("no upload has this id")
    /// A resumable upload's request in another tus version, and one whose bytes fail their checksum.
    static let tusVersion = OpenAPIResponse.problem("`Tus-Resumable` names another tus version")
    static let tusChecksum = OpenAPIResponse.problem("tus: the body's checksum is not `Upload-Checksum`")
    static let etag = OpenAPIHeader("the bytes' SHA-256, quoted", schema: .string(pattern: "^\"[0-9a-f]{64}\"$"))
    static let bytes: [String: JSONSchema] = ["*/*": .binary()]
    static let contentHeaders: [String: OpenAPIHeader] = [
        "ETag": etag,
        "Last-Modified": OpenAPIHeader(
            "when the upload was stored (its bytes never change), as an HTTP date",
            schema: .string(pattern: "^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$")),
        "Accept-Ranges": OpenAPIHeader(schema: .string(enum: ["bytes"])),
        "Content-Disposition": OpenAPIHeader(
            "`inline` for PNG, JPEG, GIF, WebP, plain text and PDF, else `attachment`; with the file name",
            schema: .string(pattern: "^(inline|attachment); ")),
        "Content-Security-Policy": OpenAPIHeader(schema: .string(enum: ["sandbox; default-src 'none'"])),
    ]

    static let create = OpenAPIOperation(
        operationID: "createUploads", summary: "Upload files",
        description:
            "One or more file parts, under any field names (`file` here; repeat it, or use other names, for several); or one file's raw bytes, its type in `Content-Type` and its name in `Content-Disposition: attachment; filename=…` (`note_id` then in the query). A raw body with the resumable-upload draft's fields (`Upload-Complete`, `Upload-Draft-Interop-Version` 3 to 8) or `Tus-Resumable: 1.0.0` creates a resumable upload at `/uploads/{id}` (docs/API.md, \"Resumable uploads\"). Answered once the files and their rows are durable; an aborted, refused or over-limit upload leaves nothing behind (a resumable one keeps what arrived). Only the `X-HTTP-Method-Override` header overrides the method here.",
        tags: ["uploads"],
        parameters: [
            .query(
                "note_id", .string(pattern: "^[0-9]*$"),
                description: "the note to attach the files to (a multipart body's `note_id` field, when there is one, wins)")
        ],
        requestBody: OpenAPIRequestBody(
            required: true,
            content: [
                "multipart/form-data": .object(
                    [
                        "file": .binary(description: "a file part"),
                        "note_id": .string(pattern: "^[0-9]*$", description: "the note to attach the files to; empty means none"),
                    ], optional: ["note_id"]),
                "*/*": .binary(description: "one file's bytes, with Content-Disposition"),
            ]),
        responses: [
            201: .json(.ref(UploadList.self), "stored; a resumable upload not complete yet answers 201 with `Location` and no body"),
            400: .problem("the multipart body is malformed, or a resumable upload's fields are"),
            404: .problem("`note_id` names no note"),
            409: .problem("a request with this `Idempotency-Key` is still running (on any instance), or the upload's length values disagree"),
            412: tusVersion,
            413: .problem("the file parts are over `--max-upload-size`, or the plain fields over `--max-body-size`"),
            415: .problem("the body is not multipart/form-data, nor a raw file with Content-Disposition"),
            422: .problem("there is no file part, or the body has too many parts, or the `Idempotency-Key` was used with another body"),
            429: .problem(
                "the user has as many unfinished resumable uploads as allowed (a complete one-shot creation does not count): `Retry-After` is when the first of them expires"
            ),
            460: tusChecksum,
        ])

    static let options = OpenAPIOperation(
        operationID: "uploadLimits", summary: "Resumable upload limits",
        description: "`Upload-Limit` (the draft) and `Tus-Version`, `Tus-Extension`, `Tus-Max-Size`, `Tus-Checksum-Algorithm` (tus 1.0).",
        tags: ["uploads"],
        responses: [204: .empty("the limits, in fields")])

    static let offset = OpenAPIOperation(
        operationID: "uploadOffset", summary: "A resumable upload's offset",
        description:
            "With the draft's or tus's fields: `Upload-Offset`, `Upload-Complete` (`Upload-Incomplete` in interop version 3), `Upload-Length`, `Upload-Limit`, `Cache-Control: no-store`; a request still appending to it is ended. Without them: the head of `GET /uploads/{id}` (`404` for an unfinished upload).",
        tags: ["uploads"],
        parameters: [id],
        responses: [
            200: .empty("tus: the offset, or the upload's head"), 204: .empty("the draft: the offset"), 404: missing,
            412: tusVersion,
            503: .problem("the upload is being completed right now and was not yet, after 5 s: ask again (`Retry-After`)"),
        ])

    static let alias = OpenAPIOperation.alias(of: "/uploads", note: "the path of the original upload recipe's client")

    static let list = OpenAPIOperation(
        operationID: "listUploads", summary: "List uploads, newest first", tags: ["uploads"],
        parameters: UploadInput.List.parameters,
        responses: [
            200: .json(.ref(UploadPage.self), "a page, and the path of the next one"),
            400: .problem(
                "a query parameter is invalid, or `after` names no upload of the user's, now or in the last week (each one is listed in `errors`)"),
        ])

    static let attach = OpenAPIOperation(
        operationID: "attachUpload", summary: "Attach an upload to a note, or to none",
        description:
            "The note it leaves and the note it joins each get a new version (a `note.updated` event each); attaching it where it is changes nothing. Answered once the change is durable.",
        tags: ["uploads"],
        parameters: [id],
        requestBody: .fields(
            .object(["note_id": .string(pattern: "^([1-9][0-9]*|0)?$", description: "the note to attach it to; empty means none")]),
            required: true),
        responses: [
            200: .json(.ref(UploadEnvelope.self), "the upload as it is now attached"),
            201: .json(
                .ref(UploadList.self),
                "an append (`application/partial-upload`, `application/offset+octet-stream`) completed the resumable upload (interop versions 3–5 also answer an incomplete append 201)"
            ),
            204: .empty("an append was stored; the upload is not complete"),
            409: .problem(
                "an append's `Upload-Offset` is not the upload's offset (`Upload-Offset` in the answer says it); or the upload is attached to a note in the trash (`/problems/note-deleted`), which keeps its attachments until it is restored"
            ),
            412: tusVersion,
            460: tusChecksum,
            400: .problem("the body is malformed"),
            404: .problem("no upload has this id, or `note_id` names no note"),
            415: .problem("the body is not form-urlencoded, multipart or JSON"),
            422: .problem("`note_id` is absent or not a string"),
        ])

    static let show = OpenAPIOperation(
        operationID: "showUpload", summary: "Show an upload", tags: ["uploads"],
        parameters: [id],
        responses: [200: .json(.ref(UploadEnvelope.self), "the upload"), 404: missing])

    static let delete = OpenAPIOperation(
        operationID: "deleteUpload", summary: "Delete an upload",
        description: "The bytes are gone from disk once this answers; a note it was attached to gets a new version.",
        tags: ["uploads"],
        parameters: [id],
        responses: [
            200: .json(.ref(UploadEnvelope.self), "the upload as it was"), 204: .empty("a resumable upload was cancelled"), 404: missing,
            409: .problem(
                "the upload is attached to a note in the trash (`/problems/note-deleted`), which keeps its attachments until it is restored or deleted for good"
            ),
        ])

    static let content = OpenAPIOperation(
        operationID: "uploadContent", summary: "The bytes of an upload",
        description:
            "With its stored Content-Type. One range at most (`bytes=0-99`, `bytes=100-`, `bytes=-100`); a Range of another unit, or several ranges, is answered with the whole content.",
        tags: ["uploads"],
        parameters: [
            id,
            .header("Range", description: "a single byte range"),
            .header("If-Range", description: "the ETag: the Range counts only when it is current"),
            .header(
                "If-None-Match",
                description: "ETags separated by commas, or `*`: when one is current, the answer is `304` (a malformed value never matches)"),
            .header("If-Modified-Since", description: "an HTTP date: without If-None-Match, `304` when the upload is not newer"),
            .header("If-Match", description: "ETags separated by commas, or `*`: when none is current (strong comparison), `412`"),
            .header("If-Unmodified-Since", description: "an HTTP date: without If-Match, `412` when the upload is newer"),
        ],
        responses: [
            200: OpenAPIResponse("the bytes", content: bytes, headers: contentHeaders),
            206: OpenAPIResponse(
                "the range", content: bytes,
                headers: contentHeaders.merging([
                    "Content-Range": OpenAPIHeader("`bytes first-last/size`", schema: .string(pattern: "^bytes [0-9]+-[0-9]+/[0-9]+$"))
                ]) { first, _ in first }),
            304: .empty("unchanged", headers: contentHeaders),
            404: .problem("no upload has this id, or its bytes are gone"),
            412: .problem("`If-Match` names no current ETag, or the upload is newer than `If-Unmodified-Since`"),
            416: .problem(
                "the range is outside the content",
                headers: [
                    "Content-Range": OpenAPIHeader("`bytes */size`", schema: .string(pattern: "^bytes \\*/[0-9]+$"))
                ]),
        ])
}
