import JotterWire

extension Note: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "id": .string(pattern: "^[0-9]+$", description: "decimal digits, as a string", example: "42"),
                "body": .string(description: "the note's text; may be empty", example: "Buy milk"),
                "created_at": Timestamp.schema,
                "updated_at": Timestamp.schema,
                "version": .integer(minimum: 1, description: "grows with every change, attachments included; the ETag is `\"<version>\"`"),
                "attachments": .array(of: .ref(Upload.self), description: "the files attached to the note, oldest first"),
            ], additional: .forbidden, description: "A note.")
    }
}

extension NoteEnvelope: SchemaDescribing {
    /// The messages a write answers with.
    public static let messages = ["Note Created", "Note Updated", "No Body Sent", "Note Deleted", "Note Restored"]

    public static var schema: JSONSchema {
        .object(
            [
                "note": .ref(Note.self),
                "message": .string(enum: messages, description: "what a write did; absent when the note is only read"),
                "merge": .ref(MergeReport.self),
            ], optional: ["message", "merge"], additional: .forbidden,
            description:
                "One note, and what a write did to it; `merge` when a write made from an older version (`Base-Version`) was merged into the current one."
        )
    }
}

extension MergeReport: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "base": .integer(minimum: 1, description: "the version the write was made from (the common ancestor)"),
                "result": .string(
                    enum: ["clean", "overlap"],
                    description:
                        "`clean`: every change of both sides applied; `overlap`: both sides changed the same text somewhere, and both sides' text is kept there (`regions`)"
                ),
                "regions": .array(of: .ref(MergeReport.Region.self), description: "where both sides changed the same text, in order"),
            ], additional: .forbidden, description: "How a write made from an older version was merged.")
    }
}

extension MergeReport.Region: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "start": .integer(minimum: 0, description: "UTF-16 offset into the merged body"),
                "end": .integer(minimum: 0, description: "UTF-16 offset into the merged body, exclusive"),
            ], additional: .forbidden, description: "A stretch of the merged body where both sides' text is kept.")
    }
}

extension Note: DescribedPageItem {
    public static let pageSchema = PageSchema(
        name: "NoteList", order: nil, link: "it repeats `limit`, `order` and `q` and sets `after`", example: "/notes?limit=100&after=17",
        description: "One page of notes.")
}

extension Timestamp {
    /// A timestamp on the wire: UTC `yyyy-MM-dd HH:mm:ss`.
    public static var schema: JSONSchema { schema(description: nil) }

    /// The same, with what the field means after the format (`JSONSchema.timestamp`).
    public static func schema(description: String?) -> JSONSchema { .timestamp(description: description) }
}

extension NoteChangeList: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "changes": .array(
                    of: .oneOf([.ref(Note.self), .ref(named: "NoteTombstone")]),
                    description: "every note changed after `since`, each once, in its latest state, in commit order"),
                "cursor": .integer(
                    format: "int64",
                    description:
                        "the next request's `since`: the id of the last event the page includes (the event stream's `id:` space), or, on a page of a walk (`reset`) that `more` pages follow, a negative number that goes on with the walk"
                ),
                "more": .boolean(description: "whether more changes follow at once"),
                "reset": .boolean(
                    description:
                        "whether the page belongs to a walk of the complete current state (no `since`, or one the feed no longer holds): once a page with `more` false is read, every note the walk's pages did not name is gone"
                ),
            ], additional: .forbidden, description: "A page of the change feed.")
    }

    /// A deleted note's entry in the feed.
    public static var deletedNote: JSONSchema {
        .object(
            [
                "id": .string(pattern: "^[0-9]+$", description: "the note's id", example: "42"),
                "version": .integer(minimum: 1, description: "the version it was deleted at"),
                "deleted": .boolean(description: "always `true`"),
            ], additional: .forbidden, description: "A note that was deleted.")
    }
}
