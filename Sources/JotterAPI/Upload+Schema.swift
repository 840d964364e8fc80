import JotterWire

extension Upload: SchemaDescribing {
    /// An upload id: 24 lowercase hexadecimal digits.
    public static let idPattern = "^[0-9a-f]{24}$"

    public static var schema: JSONSchema {
        .object(
            [
                "id": .string(pattern: idPattern, example: "7c1a0e5b9d3f4a2e8b6c0d1f"),
                "filename": .string(
                    minLength: 1,
                    description:
                        "the client's file name made safe (the last path segment, without control characters, at most 255 UTF-8 bytes); metadata only",
                    example: "photo.png"),
                "content_type": .string(
                    description:
                        "the part's media type, lowercased, without the client's parameters; `application/octet-stream` when unusable; text (`text/*`) whose bytes are UTF-8 adds `; charset=utf-8`",
                    example: "image/png"),
                "size": .integer(minimum: 0, format: "int64", description: "bytes"),
                "sha256": .string(pattern: "^[0-9a-f]{64}$", description: "SHA-256 of the bytes, lowercase hexadecimal"),
                "created_at": Timestamp.schema,
                "note_id": JSONSchema.string(pattern: "^[0-9]+$", description: "the note it is attached to, or `null`").orNull,
                "url": .string(pattern: "^/uploads/[0-9a-f]{24}/content$", description: "where its bytes are served"),
            ], additional: .forbidden, description: "A stored file.")
    }
}

extension UploadList: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["uploads": .array(of: .ref(Upload.self), description: "newest first")], additional: .forbidden)
    }
}

extension Upload: DescribedPageItem {
    public static let pageSchema = PageSchema(
        name: "UploadPage", order: "newest first", link: "it repeats `limit` and `note_id` and sets `after`",
        example: "/uploads?limit=100&after=7c1a0e5b9d3f4a2e8b6c0d1f", description: "One page of uploads.")
}

extension UploadEnvelope: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["upload": .ref(Upload.self)], additional: .forbidden)
    }
}
