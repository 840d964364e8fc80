#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a revision says of the note's version it keeps, alike in a listing's entry
/// (`RevisionInfo`) and in a revision read with its body (`Revision`): on the wire, its fields
/// stand beside the form's own in one object.
public struct RevisionStamp: Codable, Sendable, Hashable {
    /// The note's version this revision is (its ETag then was `"<version>"`).
    public var version: Int
    /// When the version was committed (whole seconds; UTC `yyyy-MM-dd HH:mm:ss` on the wire).
    @Timestamped public var createdAt: Date
    /// Whether a server-side merge made this version.
    public var merged: Bool

    enum CodingKeys: String, CodingKey {
        case version
        case createdAt = "created_at"
        case merged
    }

    public init(version: Int, createdAt: Date, merged: Bool) {
        self.version = version
        self.createdAt = createdAt
        self.merged = merged
    }

    /// A form's JSON: this stamp's fields and `value` under `key`, in one object.
    func encode<Key: CodingKey>(to encoder: any Encoder, with value: some Encodable, at key: Key) throws {
        try encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(value, forKey: key)
    }

    /// The stamp of a form's JSON, and its value under `key`.
    static func decode<Value: Decodable, Key: CodingKey>(from decoder: any Decoder, with key: Key) throws -> (Self, Value) {
        (try Self(from: decoder), try decoder.container(keyedBy: Key.self).decode(Value.self, forKey: key))
    }
}

/// A revision in either form: its stamp's fields read as its own (`revision.version`,
/// `.createdAt`, `.merged`).
@dynamicMemberLookup
public protocol StampedRevision {
    var stamp: RevisionStamp { get set }
}

extension StampedRevision {
    public subscript<Field>(dynamicMember field: WritableKeyPath<RevisionStamp, Field>) -> Field {
        get { stamp[keyPath: field] }
        set { stamp[keyPath: field] = newValue }
    }
}

/// One kept version of a note in a listing (`GET /notes/{id}/revisions`): no body, its size.
public struct RevisionInfo: StampedRevision, Codable, Sendable, Hashable {
    public var stamp: RevisionStamp
    /// The body's length in UTF-8 bytes.
    public var size: Int64

    enum CodingKeys: String, CodingKey { case size }

    public init(_ stamp: RevisionStamp, size: Int64) {
        self.stamp = stamp
        self.size = size
    }

    public init(from decoder: any Decoder) throws { (stamp, size) = try RevisionStamp.decode(from: decoder, with: CodingKeys.size) }

    public func encode(to encoder: any Encoder) throws { try stamp.encode(to: encoder, with: size, at: CodingKeys.size) }
}

/// One kept version of a note, with its body (`GET /notes/{id}/revisions/{version}`).
public struct Revision: StampedRevision, Codable, Sendable, Hashable {
    public var stamp: RevisionStamp
    /// The note's text at this version.
    public var body: String

    enum CodingKeys: String, CodingKey { case body }

    public init(_ stamp: RevisionStamp, body: String) {
        self.stamp = stamp
        self.body = body
    }

    public init(from decoder: any Decoder) throws { (stamp, body) = try RevisionStamp.decode(from: decoder, with: CodingKeys.body) }

    public func encode(to encoder: any Encoder) throws { try stamp.encode(to: encoder, with: body, at: CodingKeys.body) }
}

/// `{"revision":{…}}`.
public struct RevisionEnvelope: Codable, Sendable, Hashable {
    public var revision: Revision

    public init(revision: Revision) { self.revision = revision }
}
