import JotterWire

extension RevisionInfo: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            RevisionStamp.properties.merging(["size": .integer(minimum: 0, description: "the body's length in UTF-8 bytes")]) { $1 },
            additional: .forbidden, description: "A kept version of a note, without its body.")
    }
}

extension RevisionInfo: DescribedPageItem {
    public static let pageSchema = PageSchema(
        name: "RevisionList", order: "newest first", link: "it repeats `limit` and sets `after` to this page's last version",
        example: "/notes/7/revisions?limit=100&after=12", description: "One page of a note's revisions.")
}

extension Revision: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            RevisionStamp.properties.merging(["body": .string(description: "the note's text at this version")]) { $1 },
            additional: .forbidden, description: "A kept version of a note.")
    }
}

extension RevisionStamp {
    /// Its fields, which both forms' schemas list beside their own.
    static var properties: [String: JSONSchema] {
        [
            "version": .integer(minimum: 1, description: "the note's version this revision is"),
            "created_at": Timestamp.schema(description: "when this version was committed"),
            "merged": .boolean(description: "whether a server-side merge made this version"),
        ]
    }
}

extension RevisionEnvelope: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["revision": .ref(Revision.self)], additional: .forbidden, description: "One revision of a note.")
    }
}
