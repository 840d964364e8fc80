import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operations of `BackupController`.
enum BackupOperations {
    static let id = OpenAPIParameter.path(
        "id", .string(pattern: "^[0-9a-f]{24}$", example: "5f0c9a1b2d3e4f5061728394"),
        description: "the snapshot's id; any other id is `404`")
    static let missing = OpenAPIResponse.problem("no snapshot has this id")
    static let bytes: [String: JSONSchema] = ["application/octet-stream": .binary()]
    static let ranges = OpenAPIHeader(schema: .string(enum: ["bytes"]))

    static func file(_ operationID: String, _ summary: String, parameters: [OpenAPIParameter]) -> OpenAPIOperation {
        OpenAPIOperation(
            operationID: operationID, summary: summary,
            description: "One range at most, so a download that stopped can continue; the snapshot's files never change.",
            tags: ["backups"],
            parameters: parameters + [.header("Range", description: "a single byte range")],
            responses: [
                200: OpenAPIResponse("the bytes", content: bytes, headers: ["Accept-Ranges": ranges]),
                206: OpenAPIResponse(
                    "the range", content: bytes,
                    headers: [
                        "Accept-Ranges": ranges,
                        "Content-Range": OpenAPIHeader("`bytes first-last/size`", schema: .string(pattern: "^bytes [0-9]+-[0-9]+/[0-9]+$")),
                    ]),
                404: .problem("no snapshot has this id, or it has no such file"),
                416: .problem(
                    "the range is outside the file",
                    headers: [
                        "Content-Range": OpenAPIHeader("`bytes */size`", schema: .string(pattern: "^bytes \\*/[0-9]+$"))
                    ]),
            ])
    }

    static let create = OpenAPIOperation(
        operationID: "createBackup", summary: "Take an online backup",
        description:
            "A consistent snapshot while writes go on: the database by SQLite's `VACUUM INTO`, every upload it names hard-linked beside it. Answered once the snapshot is complete; fetch its files, then delete it (it is removed an hour after it was made otherwise). No credentials: guard `/admin/` in front of the server.",
        tags: ["backups"],
        responses: [
            201: .json(
                .ref(BackupEnvelope.self), "the snapshot and its files",
                headers: [
                    "Location": OpenAPIHeader("`/admin/backups/{id}`", schema: .string(pattern: "^/admin/backups/[0-9a-f]{24}$"))
                ]),
            409: .problem("another backup is being made"),
            500: .problem("the snapshot failed; nothing was left behind"),
        ])

    static let delete = OpenAPIOperation(
        operationID: "deleteBackup", summary: "Remove a snapshot", tags: ["backups"],
        parameters: [id],
        responses: [204: .empty("removed"), 404: missing])

    static let database = file("backupDatabase", "The snapshot's database file", parameters: [id])

    static let upload = file(
        "backupUpload", "An upload file of the snapshot",
        parameters: [
            id, .path("upload", .string(pattern: Upload.idPattern, example: "7c1a0e5b9d3f4a2e8b6c0d1f"), description: "an upload the snapshot names"),
        ])
}
