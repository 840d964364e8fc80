import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient.Notes {
    /// `POST /notes` with the `Idempotency-Key` given: a resend with the same key (after an
    /// answer that was lost) gets the first answer again and creates nothing twice, for 24 hours.
    ///
    /// ```swift
    /// let key = UUID().uuidString                       // kept with the unsent note
    /// let note = try await client.notes.create("Buy milk", idempotencyKey: key)
    /// ```
    public func create(_ body: String, idempotencyKey: String) async throws(JotterClientError) -> Note {
        var request = client.makeRequest("POST", "/notes", headers: ["Idempotency-Key": idempotencyKey])
        Self.jsonBody(body, to: &request)
        return try await client.send(request, decoding: NoteEnvelope.self).value.note
    }

    /// `PUT /notes/{id}` with `Base-Version`: the body was edited from version `baseVersion`;
    /// when the note has changed since, the server merges both edits (a three-way merge) and
    /// the answer's `merge` says how (`overlap` when both changed the same text, both kept).
    /// A base the server no longer keeps is `409` `/problems/unknown-base`, a merge past the
    /// server's bounds `409` `/problems/merge-too-large`, a note in the trash `409`
    /// `/problems/note-deleted`; nothing changes then.
    ///
    /// ```swift
    /// let answer = try await client.notes.update(note.id, body: text, baseVersion: note.version)
    /// if answer.merge?.result == "overlap" { show(answer.note) }
    /// ```
    public func update(_ id: String, body: String, baseVersion: Int) async throws(JotterClientError) -> NoteEnvelope {
        var request = client.makeRequest("PUT", "/notes/" + JotterClient.segment(id), headers: ["Base-Version": String(baseVersion)])
        Self.jsonBody(body, to: &request)
        return try await client.send(request, decoding: NoteEnvelope.self).value
    }

    /// `{"body":"…"}` as JSON: an empty text empties the note (an empty form field is "no body sent").
    static func jsonBody(_ body: String, to request: inout URLRequest) {
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONEncoder().encode(["body": body])
    }

    /// `GET /notes/changes`: the notes changed after `cursor` (`nil`: all of them), each once in
    /// its latest state, in commit order; follow `cursor` while `more`.
    ///
    /// ```swift
    /// var page = try await client.notes.changes(since: nil)
    /// while page.more { page = try await client.notes.changes(since: page.cursor) }
    /// ```
    public func changes(since cursor: Int64?, limit: Int? = nil) async throws(JotterClientError) -> NoteChangeList {
        var parameters = FormURLEncodedBody()
        if let cursor { parameters.append("since", String(cursor)) }
        if let limit { parameters.append("limit", String(limit)) }
        return try await client.send(client.makeRequest("GET", "/notes/changes", query: parameters), decoding: NoteChangeList.self).value
    }
}

/// One page of `GET /notes/changes`: `{"changes":[…],"cursor":17,"more":false,"reset":false}`.
public struct NoteChangeList: Decodable, Sendable, Hashable {
    /// The changes of this page, in commit order, each note once.
    public var changes: [NoteChange]
    /// The id of the last event included (the event stream's `id:`): the next page's `since`.
    public var cursor: Int64
    /// Whether more changes follow (ask again from `cursor`).
    public var more: Bool
    /// The cursor was older than what the feed keeps: the pages of this walk (until `more` is
    /// false) are the complete current state; a note they do not list is gone.
    public var reset: Bool

    enum CodingKeys: String, CodingKey { case changes, cursor, more, reset }

    /// Decodes the page (`reset` absent is `false`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        changes = try container.decode([NoteChange].self, forKey: .changes)
        cursor = try container.decode(Int64.self, forKey: .cursor)
        more = try container.decodeIfPresent(Bool.self, forKey: .more) ?? false
        reset = try container.decodeIfPresent(Bool.self, forKey: .reset) ?? false
    }
}

/// One change of the feed: a note in its latest state, or the deletion of one.
public enum NoteChange: Decodable, Sendable, Hashable {
    /// The note as `GET /notes/{id}` returns it.
    case note(Note)
    /// `{"id","version","deleted":true}`: the note was deleted (moved to the trash or purged).
    case deleted(id: String, version: Int)

    /// The note's id.
    public var id: String {
        switch self {
        case .note(let note): note.id
        case .deleted(let id, _): id
        }
    }

    enum CodingKeys: String, CodingKey { case id, version, deleted }

    /// Decodes a full note, or `{"id","version","deleted":true}`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decodeIfPresent(Bool.self, forKey: .deleted) == true {
            self = .deleted(id: try container.decode(String.self, forKey: .id), version: try container.decode(Int.self, forKey: .version))
        } else {
            self = .note(try Note(from: decoder))
        }
    }
}
