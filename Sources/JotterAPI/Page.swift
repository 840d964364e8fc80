/// A wire type that listings answer a page at a time (`Page`).
public protocol PageItem: Codable, Sendable, Hashable {
    /// The field a page's items stand under: `notes` in `{"notes":[…],"next":null}`.
    static var pageKey: StaticString { get }
}

/// One page of a listing: `{"notes":[…],"next":"/notes?limit=100&after=17"}`, its items under
/// `Item.pageKey`; `next`, the path-absolute URL of the next page, is `null` on the last page.
///
/// Each listing has its own name too: `NoteList`, `TrashList`, `RevisionList`, `UploadPage`.
/// Its items read as `page.items`, or by the listing's own word (`list.notes`).
public struct Page<Item: PageItem>: Codable, Sendable, Hashable {
    public var items: [Item]
    /// The path-absolute URL of the next page, or nil on the last page.
    public var next: String?

    public init(_ items: [Item], next: String?) {
        self.items = items
        self.next = next
    }

    /// The two fields: the items under `Item.pageKey`, and `next`.
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }

        static var items: Key { Key(stringValue: Item.pageKey.description) }
        static var next: Key { Key(stringValue: "next") }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        items = try container.decode([Item].self, forKey: .items)
        next = try container.decodeIfPresent(String.self, forKey: .next)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(items, forKey: .items)
        try container.encode(next, forKey: .next)  // `null` on the last page, never absent
    }
}

/// `GET /notes`: one page of notes.
public typealias NoteList = Page<Note>
/// `GET /notes/trash`: one page of the trash, most recently deleted first.
public typealias TrashList = Page<DeletedNote>
/// `GET /notes/{id}/revisions`: one page of a note's revisions, newest first.
public typealias RevisionList = Page<RevisionInfo>
/// `GET /uploads`: one page of uploads, newest first.
public typealias UploadPage = Page<Upload>

extension Note: PageItem { public static var pageKey: StaticString { "notes" } }
extension DeletedNote: PageItem { public static var pageKey: StaticString { "notes" } }
extension RevisionInfo: PageItem { public static var pageKey: StaticString { "revisions" } }
extension Upload: PageItem { public static var pageKey: StaticString { "uploads" } }

extension Page where Item == Note {
    /// The page's notes (`items`).
    public var notes: [Note] { items }
}

extension Page where Item == DeletedNote {
    /// The page's deleted notes (`items`).
    public var notes: [DeletedNote] { items }
}

extension Page where Item == RevisionInfo {
    /// The page's revisions (`items`).
    public var revisions: [RevisionInfo] { items }
}

extension Page where Item == Upload {
    /// The page's uploads (`items`).
    public var uploads: [Upload] { items }
}
