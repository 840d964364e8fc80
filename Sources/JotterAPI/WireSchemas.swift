import JotterWire

/// Every wire type with a schema, for the OpenAPI document's components.
public enum WireSchemas {
    public static var types: [any SchemaDescribing.Type] {
        [
            Note.self, NoteEnvelope.self, MergeReport.self, MergeReport.Region.self, NoteList.self, NoteChangeList.self, RevisionInfo.self,
            RevisionList.self, Revision.self, RevisionEnvelope.self, DeletedNote.self, TrashList.self, Upload.self, UploadList.self, UploadPage.self,
            UploadEnvelope.self,
            HelloMessage.self, HealthStatus.self, ProblemDetails.self, ProblemDetails.FieldError.self,
            EchoResponse.self, EchoResponse.File.self, Backup.self, BackupEnvelope.self,
            UserInfo.self, UserList.self, SessionInfo.self, TokenInfo.self, TokenList.self, IssuedToken.self,
        ]
    }
}

extension JSONSchema {
    /// One page of a listing: its `items` under `key`, and `next`, the path of the next page
    /// (`link` says what it repeats and sets) or `null` on the last page.
    static func page(_ key: String, _ items: JSONSchema, link: String, example: String, description: String) -> JSONSchema {
        .object(
            [
                key: items,
                "next": JSONSchema.string(description: "the path of the next page (\(link)), or `null` on the last page", example: example).orNull,
            ], additional: .forbidden, description: description)
    }
}
