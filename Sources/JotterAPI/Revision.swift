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
    public var createdAt: Date
    /// The body's length in UTF-8 bytes.
    public var size: Int64
    /// Whether a server-side merge made this version.
    public var merged: Bool

    enum CodingKeys: String, CodingKey {
        case version, size, merged
        case createdAt = "created_at"
    }

    public init(version: Int, createdAt: Date, size: Int64, merged: Bool) {
        self.version = version
        self.createdAt = createdAt
        self.size = size
        self.merged = merged
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        createdAt = try container.decodeTimestamp(forKey: .createdAt)
        size = try container.decode(Int64.self, forKey: .size)
        merged = try container.decode(Bool.self, forKey: .merged)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encodeTimestamp(createdAt, forKey: .createdAt)
        try container.encode(size, forKey: .size)
        try container.encode(merged, forKey: .merged)
    }
}

/// `{"revisions":[…],"next":"/notes/7/revisions?limit=100&after=12"}`: a page of a note's
/// revisions, newest first; `next` is `null` on the last page.
public struct RevisionList: Codable, Sendable, Hashable {
    public var revisions: [RevisionInfo]
    public var next: String?

    public init(revisions: [RevisionInfo], next: String?) {
        self.revisions = revisions
        self.next = next
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(revisions, forKey: .revisions)
        try container.encode(next, forKey: .next)  // null, not absent, on the last page
    }
}

/// One kept version of a note, with its body (`GET /notes/{id}/revisions/{version}`).
public struct Revision: Codable, Sendable, Hashable {
    public var version: Int
    /// When the version was committed (whole seconds; UTC `yyyy-MM-dd HH:mm:ss` on the wire).
    public var createdAt: Date
    public var body: String
    public var merged: Bool

    enum CodingKeys: String, CodingKey {
        case version, body, merged
        case createdAt = "created_at"
    }

    public init(version: Int, createdAt: Date, body: String, merged: Bool) {
        self.version = version
        self.createdAt = createdAt
        self.body = body
        self.merged = merged
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        createdAt = try container.decodeTimestamp(forKey: .createdAt)
        body = try container.decode(String.self, forKey: .body)
        merged = try container.decode(Bool.self, forKey: .merged)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encodeTimestamp(createdAt, forKey: .createdAt)
        try container.encode(body, forKey: .body)
        try container.encode(merged, forKey: .merged)
    }
}

/// `{"revision":{…}}`.
public struct RevisionEnvelope: Codable, Sendable, Hashable {
    public var revision: Revision

    public init(revision: Revision) { self.revision = revision }
}
