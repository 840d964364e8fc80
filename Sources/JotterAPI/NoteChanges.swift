/// `{"changes":[…],"cursor":1234,"more":false,"reset":false}`: a page of the change feed
/// (`GET /notes/changes`): every note changed after the cursor sent, each once, in its latest
/// state, in commit order.
///
/// `cursor` goes into the next request's `since`. It is an event id — the event stream's
/// `id:` — except inside a walk of the complete state (`reset`), whose pages before the last
/// carry a negative cursor that goes on with the walk. When `reset` is true the pages, up to
/// the one with `more` false, name every note that exists: drop what they did not name.
public struct NoteChangeList: Codable, Sendable, Hashable {
    public var changes: [NoteChangeEntry]
    public var cursor: Int64
    /// Whether more changes follow at once (ask again with `cursor`).
    public var more: Bool
    /// Whether this page belongs to a walk of the complete current state.
    public var reset: Bool

    public init(changes: [NoteChangeEntry], cursor: Int64, more: Bool, reset: Bool) {
        self.changes = changes
        self.cursor = cursor
        self.more = more
        self.reset = reset
    }
}

/// A note in the change feed: the note as it is now, or that it was deleted.
public enum NoteChangeEntry: Codable, Sendable, Hashable {
    case note(Note)
    /// `{"id":"42","version":7,"deleted":true}`: the note was deleted at `version`.
    case deleted(id: String, version: Int)

    public var id: String {
        switch self {
        case .note(let note): note.id
        case .deleted(let id, _): id
        }
    }

    public var version: Int {
        switch self {
        case .note(let note): note.version
        case .deleted(_, let version): version
        }
    }

    /// The note, unless it was deleted.
    public var note: Note? {
        if case .note(let note) = self { return note }
        return nil
    }

    enum CodingKeys: String, CodingKey {
        case id, version, deleted
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decodeIfPresent(Bool.self, forKey: .deleted) == true {
            self = .deleted(id: try container.decode(String.self, forKey: .id), version: try container.decode(Int.self, forKey: .version))
        } else {
            self = .note(try Note(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .note(let note):
            try note.encode(to: encoder)
        case .deleted(let id, let version):
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(true, forKey: .deleted)
            try container.encode(id, forKey: .id)
            try container.encode(version, forKey: .version)
        }
    }
}
