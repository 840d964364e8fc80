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

/// What the OpenAPI document says of a listing's pages, beside its items' own schema.
public struct PageSchema: Sendable {
    /// The page's component name (`NoteList`).
    public var name: String
    /// The items' order (`newest first`), when the listing has one of its own.
    public var order: String?
    /// What the `next` link repeats and sets.
    public var link: String
    /// A `next` link.
    public var example: String
    public var description: String
}

/// A page item whose pages the OpenAPI document describes.
public protocol DescribedPageItem: PageItem, SchemaDescribing {
    static var pageSchema: PageSchema { get }
}

extension Page: SchemaDescribing where Item: DescribedPageItem {
    public static var componentName: String { Item.pageSchema.name }

    /// The items under `Item.pageKey`, and `next`, the path of the next page or `null` on the
    /// last page.
    public static var schema: JSONSchema {
        let page = Item.pageSchema
        return .object(
            [
                Item.pageKey.description: .array(of: .ref(Item.self), description: page.order),
                "next": JSONSchema.string(description: "the path of the next page (\(page.link)), or `null` on the last page", example: page.example)
                    .orNull,
            ], additional: .forbidden, description: page.description)
    }
}
