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
    public var createdAt: Date
    public var noteID: String?
    /// `/uploads/{id}/content`.
    public var url: String

    enum CodingKeys: String, CodingKey {
        case id, filename, size, sha256, url
        case contentType = "content_type"
        case createdAt = "created_at"
        case noteID = "note_id"
    }

    public init(id: String, filename: String, contentType: String, size: Int64, sha256: String, createdAt: Date,
                noteID: String?, url: String) {
        self.id = id
        self.filename = filename
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
        self.createdAt = createdAt
        self.noteID = noteID
        self.url = url
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        filename = try container.decode(String.self, forKey: .filename)
        contentType = try container.decode(String.self, forKey: .contentType)
        size = try container.decode(Int64.self, forKey: .size)
        sha256 = try container.decode(String.self, forKey: .sha256)
        createdAt = try container.decodeTimestamp(forKey: .createdAt)
        noteID = try container.decodeIfPresent(String.self, forKey: .noteID)
        url = try container.decode(String.self, forKey: .url)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(filename, forKey: .filename)
        try container.encode(contentType, forKey: .contentType)
        try container.encode(size, forKey: .size)
        try container.encode(sha256, forKey: .sha256)
        try container.encodeTimestamp(createdAt, forKey: .createdAt)
        try container.encode(noteID, forKey: .noteID)  // null, not absent, when unattached
        try container.encode(url, forKey: .url)
    }
}

/// `{"uploads":[…]}`.
public struct UploadList: Codable, Sendable, Hashable {
    public var uploads: [Upload]
    public init(uploads: [Upload]) { self.uploads = uploads }
}

/// One page of `GET /uploads`: `{"uploads":[…],"next":"/uploads?…"}`; `next` is nil on the last page.
public struct UploadPage: Codable, Sendable, Hashable {
    public var uploads: [Upload]
    /// The path-absolute URL of the next page, or nil.
    public var next: String?
    public init(uploads: [Upload], next: String?) {
        self.uploads = uploads
        self.next = next
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uploads, forKey: .uploads)
        try container.encode(next, forKey: .next)  // null, not absent, on the last page
    }
}

/// `{"upload":{…}}`.
public struct UploadEnvelope: Codable, Sendable, Hashable {
    public var upload: Upload
    public init(upload: Upload) { self.upload = upload }
}
