extension ProblemDetails: SchemaDescribing {
    public static var componentName: String { "Problem" }

    public static var schema: JSONSchema {
        .object(
            [
                "type": .string(
                    description:
                        "`about:blank` (the status says what kind of problem it is), or a type a route defines: `/problems/unknown-base`, `/problems/merge-too-large` and `/problems/note-deleted` on a note write (`/problems/note-deleted` also on moving or deleting an upload attached to a note in the trash, without `note` and `deleted_at`), the resumable-upload draft's types",
                    example: "about:blank"),
                "title": .string(description: "the status's reason phrase", example: "Not Found"),
                "status": .integer(minimum: 400, maximum: 599, description: "the response's status code"),
                "detail": .string(description: "what was wrong, for people", example: "note 42 does not exist"),
                "errors": .array(of: .ref(FieldError.self), description: "the invalid fields: body fields on a 422, query parameters on a 400"),
                "request_id": .string(description: "the request's id, as in the server's log and the `X-Request-Id` header"),
                "note": .ref(named: "Note"),
                "base": .ref(named: "Revision"),
                "deleted_at": .timestamp(description: "`/problems/note-deleted`: when the note was deleted", example: "2026-12-01 09:30:00"),
            ], optional: ["detail", "errors", "note", "base", "deleted_at"], additional: .forbidden,
            description: "An RFC 9457 problem (`application/problem+json`).")
    }
}

extension ProblemDetails.FieldError: SchemaDescribing {
    public static var componentName: String { "FieldError" }

    public static var schema: JSONSchema {
        .object(
            [
                "field": .string(example: "body"),
                "message": .string(example: "is required"),
            ], additional: .forbidden, description: "One invalid field or query parameter.")
    }
}
