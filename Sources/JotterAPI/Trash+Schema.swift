import JotterWire

extension DeletedNote: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "id": .string(pattern: "^[0-9]+$", description: "decimal digits, as a string; the note's id again once restored", example: "42"),
                "body": .string(description: "the note's text when it was deleted"),
                "created_at": Timestamp.schema,
                "updated_at": Timestamp.schema,
                "version": .integer(minimum: 1, description: "the note's version when it was deleted; a restore makes the next one"),
                "attachments": .array(of: .ref(Upload.self), description: "the files attached to the note, kept while it is in the trash"),
                "deleted_at": Timestamp.schema(description: "when the note was deleted; it leaves the trash for good `--trash-days` later"),
            ], additional: .forbidden, description: "A note in the trash.")
    }
}

extension DeletedNote: DescribedPageItem {
    public static let pageSchema = PageSchema(
        name: "TrashList", order: "most recently deleted first", link: "it repeats `limit` and sets `after` to this page's last id",
        example: "/notes/trash?limit=100&after=17", description: "One page of the trash.")
}
