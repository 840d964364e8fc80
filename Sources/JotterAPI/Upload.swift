#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A stored file, as the API sends it. `noteID` is the note it is attached to, or `nil`.
public struct Upload: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var filename: String
    public var contentType: String
    public var size: Int64
    public var sha256: String
    /// When it was stored (whole seconds; `yyyy-MM-dd HH:mm:ss` UTC on the wire).
    @Timestamped public var createdAt: Date
    /// `null` on the wire while unattached.
    @Nullable public var noteID: String?
    /// `/uploads/{id}/content`.
    public var url: String

    enum CodingKeys: String, CodingKey {
        case id, filename
        case contentType = "content_type"
        case size, sha256
        case createdAt = "created_at"
        case noteID = "note_id"
        case url
    }

    public init(
        id: String, filename: String, contentType: String, size: Int64, sha256: String, createdAt: Date,
        noteID: String?, url: String
    ) {
        self.id = id
        self.filename = filename
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
        self.createdAt = createdAt
        self.noteID = noteID
        self.url = url
    }
}

/// `{"uploads":[…]}`.
public struct UploadList: Codable, Sendable, Hashable {
    public var uploads: [Upload]
    public init(uploads: [Upload]) { self.uploads = uploads }
}

/// `{"upload":{…}}`.
public struct UploadEnvelope: Codable, Sendable, Hashable {
    public var upload: Upload
    public init(upload: Upload) { self.upload = upload }
}
