import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operation of `OpenAPIController`, and the document's own prose.
enum OpenAPIOperations {
    static let document = OpenAPIOperation(
        operationID: "openAPI", summary: "This document", tags: ["service"],
        responses: [200: .json(.object([:], description: "OpenAPI 3.1"), "the OpenAPI description of every endpoint")])

    static let info = OpenAPIInfo(
        title: "Jotter", version: "1",
        description: """
            Notes, file uploads and hello. The wire contract is `docs/API.md`.

            - Every error is `application/problem+json` (RFC 9457) with a `detail` and the `request_id` of the log line; validation failures list the bad fields in `errors` (`422` for body fields, `400` for query parameters).
            - Request bodies may be `application/x-www-form-urlencoded` (also when there is no Content-Type), `multipart/form-data` or `application/json` (an object); other types are `415`, except on `/echo`. File parts are taken only by `/uploads`, `/upload` and `/echo` (elsewhere a file part is `415`, and nothing of it is stored); a body sent where none is taken (every `GET`, `DELETE /uploads/{id}`) is `413`.
            - A `POST` with `X-HTTP-Method-Override: PUT|PATCH|DELETE`, or a `_method` field in a form or JSON body (not on `/uploads` and `/echo`), is routed as that method: `POST /notes/{id}` with `_method=DELETE` deletes the note.
            - `HEAD` works wherever `GET` does. An unknown path is `404`; a known path with another method is `405` with `Allow`.
            - `--max-body-size` (1 MiB) bounds a body that is not multipart and the plain fields of multipart; `--max-upload-size` (1 GiB) bounds the file parts of a request; over either is `413`.
            - A request-target over 6,000 bytes is `414`, a request head over 6,500 bytes `431`, a header line starting with a space or tab (obsolete folding) `400`; each closes the connection.
            - A write the disk has no room for is `507`, and nothing of it is kept; deletions still work.
            - Every response carries `X-Request-Id` and `X-Content-Type-Options: nosniff`.
            """, servers: ["http://127.0.0.1:8080"])

    /// The component schemas: the wire types' own, and the request fields.
    static var components: [String: JSONSchema] {
        JSONSchema.components(WireSchemas.types).merging(NotesOperations.components) { first, _ in first }
            .merging(HealthOperations.components) { first, _ in first }
    }
}
