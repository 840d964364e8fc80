import JotterWire

extension HelloMessage: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["message": .string(example: "Hello Bob!")], additional: .forbidden)
    }
}

extension HealthStatus: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "status": .string(enum: ["ok"]),
                "checks": checksSchema,
                "free_bytes": freeBytesSchema,
            ], optional: ["checks", "free_bytes"], additional: .forbidden,
            description: "Ready: every check is ok. This server always sends `checks` and `free_bytes`; older ones sent `status` alone.")
    }

    /// What `/healthz` checked: each `"ok"` or what is wrong (also in its `503` problem).
    public static var checksSchema: JSONSchema {
        .object(
            [
                "database": .string(description: "the database answers a read", example: "ok"),
                "data_folder": .string(description: "a file can be created in the data folder", example: "ok"),
                "free_space": .string(description: "at least `--min-free-space` is free for the data folder", example: "ok"),
            ], additional: .forbidden, description: "each check: `ok`, or what is wrong")
    }

    public static var freeBytesSchema: JSONSchema {
        .integer(minimum: 0, format: "int64", description: "bytes free for the data folder")
    }
}
