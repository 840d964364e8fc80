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
    /// Every attempt carries one `Idempotency-Key`: the `idempotencyKey` given, or one made for
    /// this call, so the client's own retry after a lost answer gets the first answer again
    /// (for 24 hours) instead of being merged a second time. Keep a key with the edit to
    /// resend it safely after the call itself failed (cancelled, offline).
    ///
    /// ```swift
    /// let answer = try await client.notes.update(note.id, body: text, baseVersion: note.version)
    /// if answer.merge?.result == "overlap" { show(answer.note) }
    /// ```
    public func update(
        _ id: String, body: String, baseVersion: Int,
        idempotencyKey: String? = nil
    ) async throws(JotterClientError) -> NoteEnvelope {
        let headers = ["Base-Version": String(baseVersion), "Idempotency-Key": idempotencyKey ?? UUID().uuidString]
        var request = client.makeRequest("PUT", "/notes/" + JotterClient.segment(id), headers: headers)
        Self.jsonBody(body, to: &request)
        return try await client.send(request, decoding: NoteEnvelope.self).value
    }

    /// `{"body":"…"}` as JSON: an empty text empties the note (an empty form field is "no body
    /// sent"), and the body on the wire is the text's UTF-8 bytes plus little more (no `\/`
    /// for `/`, no percent-encoding), so a note under the server's `--max-body-size` fits.
    static func jsonBody(_ body: String, to request: inout URLRequest) {
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        request.httpBody = try? encoder.encode(["body": body])
    }
}
