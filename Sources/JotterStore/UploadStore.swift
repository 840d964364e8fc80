/// A stored file's row: what the API shows of an upload.
public struct UploadRecord: Sendable, Hashable {
    /// 24 lowercase hex digits, chosen by the store.
    public var id: String
    public var filename: String
    public var contentType: String
    public var size: Int64
    public var sha256: String
    /// Unix seconds, UTC.
    public var createdAt: Int64
    /// The note it is attached to, if any.
    public var noteID: Int64?

    public init(id: String, filename: String, contentType: String, size: Int64, sha256: String, createdAt: Int64, noteID: Int64?) {
        self.id = id
        self.filename = filename
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
        self.createdAt = createdAt
        self.noteID = noteID
    }
}

/// A file received in a request, still in its temporary file, to be stored.
public struct NewUpload: Sendable, Hashable {
    public var temporaryPath: String
    public var filename: String
    public var contentType: String
    public var size: Int64
    public var sha256: String

    public init(temporaryPath: String, filename: String, contentType: String, size: Int64, sha256: String) {
        self.temporaryPath = temporaryPath
        self.filename = filename
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
    }
}

/// Reading stored uploads, each scoped by its `Owner`. Writes go through `NoteStore.submit`
/// (`.addUploads`, `.deleteUpload`), so that attaching a file and changing its note are one
/// transaction.
public protocol UploadStore: Sendable {
    func upload(id: String, owner: Owner) throws -> UploadRecord?
    /// One page of `owner`'s uploads, newest first, after the `query.after` cursor and filtered
    /// by `query.attachment`; nil when `query.after` names no upload of theirs.
    func uploads(_ query: UploadQuery, owner: Owner) throws -> [UploadRecord]?
    /// The attachments of each of `noteIDs` (oldest first); notes without any are absent.
    func attachments(of noteIDs: [Int64], owner: Owner) throws -> [Int64: [UploadRecord]]
    /// Where the bytes of upload `id` are on disk.
    func contentPath(of id: String) -> String
    /// A note and its attachments, read together (one snapshot, one lock).
    func noteWithAttachments(id: Int64, owner: Owner) throws -> (NoteRecord, [UploadRecord])?
    /// A page of notes, each with its attachments, read together.
    func notesWithAttachments(_ query: NoteQuery, owner: Owner) throws -> [(NoteRecord, [UploadRecord])]
}

/// A page request for `UploadStore.uploads(_:)`.
///
/// ```swift
/// let loose = try store.uploads(UploadQuery(limit: 50, attachment: .unattached))
/// ```
public struct UploadQuery: Sendable, Hashable {
    /// Which uploads a listing shows.
    public enum Attachment: Sendable, Hashable {
        /// Every upload.
        case any
        /// Only uploads attached to no note.
        case unattached
        /// Only the attachments of this note.
        case note(Int64)
    }

    /// At most this many uploads (0 or less gives none).
    public var limit: Int
    /// A cursor: the id of the last upload of the previous page (uploads older than it follow).
    public var after: String?
    public var attachment: Attachment

    public init(limit: Int = 100, after: String? = nil, attachment: Attachment = .any) {
        self.limit = limit
        self.after = after
        self.attachment = attachment
    }
}
