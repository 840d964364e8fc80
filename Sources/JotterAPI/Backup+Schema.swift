import JotterWire

extension Backup: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(
            [
                "id": .string(
                    pattern: "^([0-9a-f]{24})?$", description: "the snapshot's id on the server (empty in a backup taken from a data folder)",
                    example: "5f0c9a1b2d3e4f5061728394"),
                "created_at": Timestamp.schema,
                "jotter_version": .string(description: "the jotter that made it", example: "0.1.0"),
                "schema_version": .integer(minimum: 1, description: "the database schema version of the snapshot"),
                "notes": .integer(minimum: 0, format: "int64", description: "notes in the snapshot"),
                "last_event_id": .integer(minimum: 0, format: "int64", description: "the last change event issued before the snapshot"),
                "database_size": .integer(minimum: 0, format: "int64", description: "bytes of `jotter.sqlite`"),
                "uploads": .array(of: .ref(Upload.self), description: "every upload the snapshot names, with its size and SHA-256"),
                "files_url": .string(
                    description: "where the snapshot's files are served: `/admin/backups/{id}/files` (`.` in a backup folder's `backup.json`)",
                    example: "/admin/backups/5f0c9a1b2d3e4f5061728394/files"),
            ], additional: .forbidden, description: "An online backup: a database snapshot and the uploads it names.")
    }
}

extension BackupEnvelope: SchemaDescribing {
    public static var schema: JSONSchema {
        .object(["backup": .ref(Backup.self)], additional: .forbidden)
    }
}
