import JotterWire

extension RevisionInfo: SchemaDescribing {
    public static var schema: JSONSchema {
        .object([
            "version": .integer(minimum: 1, description: "the note's version this revision is"),
            "created_at": Timestamp.schema(description: "when this version was committed"),
            "size": .integer(minimum: 0, description: "the body's length in UTF-8 bytes"),
            "merged": .boolean(description: "whether a server-side merge made this version"),
        ], additional: .forbidden, description: "A kept version of a note, without its body.")
    }
}

extension RevisionList: SchemaDescribing {
    public static var schema: JSONSchema {
        .object([
            "revisions": .array(of: .ref(RevisionInfo.self), description: "newest first"),
            "next": JSONSchema.string(description: "the path of the next page (it repeats `limit` and sets `after` to this page's last version), or `null` on the last page",
                                      example: "/notes/7/revisions?limit=100&after=12").orNull,
        ], additional: .forbidden, description: "One page of a note's revisions.")
    }
}

extension Revision: SchemaDescribing {
    public static var schema: JSONSchema {
        .object([
            "version": .integer(minimum: 1, description: "the note's version this revision is"),
            "created_at": Timestamp.schema(description: "when this version was committed"),
            "body": .string(description: "the note's text at this version"),
            "merged": .boolean(description: "whether a server-side merge made this version"),
        ], additional: .forbidden, description: "A kept version of a note.")
    }
}

extension RevisionEnvelope: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["revision": .ref(Revision.self)], additional: .forbidden, description: "One revision of a note.")
    }
}
