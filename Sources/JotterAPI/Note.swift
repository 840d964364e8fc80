#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A note as the API sends it.
///
/// `id` is a string of digits (`"42"`): the original server sent ids as strings and the
/// original iPhone client compares them as strings. Its times are `Date`s, sent as UTC
/// `yyyy-MM-dd HH:mm:ss` (`Timestamp`).
public struct Note: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var body: String
    /// When it was created (whole seconds).
    @Timestamped public var createdAt: Date
    /// When it last changed (whole seconds).
    @Timestamped public var updatedAt: Date
    /// Grows with every change, attachments included; the ETag is `"<version>"`.
    public var version: Int
    public var attachments: [Upload]

    enum CodingKeys: String, CodingKey {
        case id, body
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case version, attachments
    }

    public init(id: String, body: String, createdAt: Date, updatedAt: Date, version: Int, attachments: [Upload] = []) {
        self.id = id
        self.body = body
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.attachments = attachments
    }

    /// The strong entity tag of this version: `"3"`.
    public var etag: String { "\"\(version)\"" }
}

/// `{"note":{…},"message":"Note Created"}`: the answer to a single-note request; `merge` when
/// the server merged the write into a newer version (`Base-Version`).
public struct NoteEnvelope: Codable, Sendable, Hashable {
    public var note: Note
    public var message: String?
    public var merge: MergeReport?

    public init(note: Note, message: String? = nil, merge: MergeReport? = nil) {
        self.note = note
        self.message = message
        self.merge = merge
    }
}

/// `{"base":3,"result":"overlap","regions":[{"start":0,"end":12}]}`: how a write made from an
/// older version was merged.
public struct MergeReport: Codable, Sendable, Hashable {
    /// Where both sides changed the same text, both kept: UTF-16 offsets into the merged body.
    public struct Region: Codable, Sendable, Hashable {
        public var start: Int
        /// Exclusive.
        public var end: Int

        public init(start: Int, end: Int) {
            self.start = start
            self.end = end
        }
    }

    /// The version the write was made from (the common ancestor).
    public var base: Int
    /// `clean` (no text both sides changed) or `overlap` (`regions`).
    public var result: String
    public var regions: [Region]

    public init(base: Int, result: String, regions: [Region]) {
        self.base = base
        self.result = result
        self.regions = regions
    }
}
