#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A note in the trash (`GET /notes/trash`): the note as it was deleted — its fields at the
/// top level, as in a `note.deleted` event — and `deleted_at`.
public struct DeletedNote: Codable, Sendable, Hashable, Identifiable {
    /// The note as it was when deleted, with its attachments (kept while it is in the trash).
    public var note: Note
    /// When it was deleted (whole seconds; UTC `yyyy-MM-dd HH:mm:ss` on the wire). It leaves the
    /// trash for good the server's `--trash-days` later.
    public var deletedAt: Date

    public var id: String { note.id }

    enum CodingKeys: String, CodingKey {
        case deletedAt = "deleted_at"
    }

    public init(note: Note, deletedAt: Date) {
        self.note = note
        self.deletedAt = deletedAt
    }

    public init(from decoder: any Decoder) throws {
        note = try Note(from: decoder)
        deletedAt = try decoder.container(keyedBy: CodingKeys.self).decodeTimestamp(forKey: .deletedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        try note.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeTimestamp(deletedAt, forKey: .deletedAt)
    }
}
