#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One kept version of a note in a listing (`GET /notes/{id}/revisions`): no body.
public struct RevisionInfo: Codable, Sendable, Hashable {
    /// The note's version this revision is (its ETag then was `"<version>"`).
    public var version: Int
    /// When the version was committed (whole seconds; UTC `yyyy-MM-dd HH:mm:ss` on the wire).
    @Timestamped public var createdAt: Date
    /// The body's length in UTF-8 bytes.
    public var size: Int64
    /// Whether a server-side merge made this version.
    public var merged: Bool

    enum CodingKeys: String, CodingKey {
        case version
        case createdAt = "created_at"
        case size, merged
    }

    public init(version: Int, createdAt: Date, size: Int64, merged: Bool) {
        self.version = version
        self.createdAt = createdAt
        self.size = size
        self.merged = merged
    }
}

/// One kept version of a note, with its body (`GET /notes/{id}/revisions/{version}`).
public struct Revision: Codable, Sendable, Hashable {
    public var version: Int
    /// When the version was committed (whole seconds; UTC `yyyy-MM-dd HH:mm:ss` on the wire).
    @Timestamped public var createdAt: Date
    public var body: String
    public var merged: Bool

    enum CodingKeys: String, CodingKey {
        case version
        case createdAt = "created_at"
        case body, merged
    }

    public init(version: Int, createdAt: Date, body: String, merged: Bool) {
        self.version = version
        self.createdAt = createdAt
        self.body = body
        self.merged = merged
    }
}

/// `{"revision":{…}}`.
public struct RevisionEnvelope: Codable, Sendable, Hashable {
    public var revision: Revision

    public init(revision: Revision) { self.revision = revision }
}
