import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient {
    /// The `/notes` resource: list, search, create, read, update, delete, and live events.
    ///
    /// ```swift
    /// let note = try await client.notes.create("Buy milk")
    /// let updated = try await client.notes.update(note.id, body: "Buy oat milk", ifMatch: note.etag)
    /// try await client.notes.delete(note.id)
    /// ```
    public var notes: Notes { Notes(client: self) }

    /// The calls on `/notes`; get it from `client.notes`.
    public struct Notes: Sendable {
        let client: JotterClient

        /// The order of a listing.
        public enum Order: String, Sendable {
            case newestFirst = "desc", oldestFirst = "asc"
            /// The last changed first, as notes apps sort (`order=updated`); its `after` cursor is
            /// the one the server's `next` link carries, not a note id.
            case recentlyUpdated = "updated"
        }

        /// `GET /notes`: one page of notes; `next` is set when there are more.
        ///
        /// ```swift
        /// var page = try await client.notes.list(query: "milk", limit: 20)
        /// while let next = try await client.notes.nextPage(after: page) { page = next }
        /// ```
        ///
        /// - Parameters:
        ///   - query: full-text search words (`nil`: every note).
        ///   - limit: notes per page (server default 100, at most 1000).
        ///   - after: the id the page starts after (a cursor; with `.newestFirst`, smaller ids).
        ///   - order: newest first (default), oldest first, or the last changed first.
        public func list(
            query: String? = nil, limit: Int? = nil, after: String? = nil,
            order: Order = .newestFirst
        ) async throws(JotterClientError) -> NoteList {
            var parameters = FormURLEncodedBody()
            if let limit { parameters.append("limit", String(limit)) }
            if order != .newestFirst { parameters.append("order", order.rawValue) }
            if let query { parameters.append("q", query) }
            if let after { parameters.append("after", after) }
            return try await client.send(client.makeRequest("GET", "/notes", query: parameters), decoding: NoteList.self).value
        }

        /// The page after `page` (following its `next`), or `nil` after the last one.
        public func nextPage(after page: NoteList) async throws(JotterClientError) -> NoteList? {
            try await client.page(after: page)
        }

        /// Every note, page by page as the iteration goes (pages of `pageSize`).
        ///
        /// ```swift
        /// for try await note in client.notes.all(query: "milk") { print(note.body) }
        /// ```
        public func all(query: String? = nil, pageSize: Int? = nil, order: Order = .newestFirst) -> NoteSequence {
            NoteSequence(notes: self, query: query, pageSize: pageSize, order: order)
        }

        /// `GET /notes/changes`: every note changed after `cursor`, each once in its latest state,
        /// in commit order — one page; pass its `cursor` back for the next. The cursors are
        /// the event stream's ids: `events(lastEventID: page.cursor)` goes on from a page with no
        /// gap and no change twice, and a stream's event id is a cursor here.
        ///
        /// ```swift
        /// var cursor: Int64? = nil            // nil: everything; else the cursor kept from last time
        /// var page: NoteChangeList
        /// repeat {
        ///     page = try await client.notes.changes(since: cursor)
        ///     for change in page.changes { print(change.id, change.note?.body ?? "(deleted)") }
        ///     cursor = page.cursor
        /// } while page.more
        /// ```
        ///
        /// A page with `reset` true belongs to a walk of the complete state (no cursor, or one the
        /// server no longer holds): once its last page (`more` false) is read, drop every note
        /// the walk did not name.
        ///
        /// - Parameters:
        ///   - cursor: the `cursor` of an earlier page, or an event id; nil: everything.
        ///   - limit: changes per page (server default 100, at most 1000).
        public func changes(since cursor: Int64? = nil, limit: Int? = nil) async throws(JotterClientError) -> NoteChangeList {
            try await client.send(changesRequest(since: cursor, limit: limit), decoding: NoteChangeList.self).value
        }

        /// `changes(since:limit:)`, each chunk of the page's body told to `received` as it arrives.
        func changes(since cursor: Int64?, limit: Int?, received: @Sendable (Int) -> Void) async throws(JotterClientError) -> NoteChangeList {
            try JotterClient.decode(NoteChangeList.self, from: await client.send(changesRequest(since: cursor, limit: limit), received: received).0)
        }

        private func changesRequest(since cursor: Int64?, limit: Int?) -> URLRequest {
            var parameters = FormURLEncodedBody()
            if let cursor { parameters.append("since", String(cursor)) }
            if let limit { parameters.append("limit", String(limit)) }
            return client.makeRequest("GET", "/notes/changes", query: parameters)
        }

        /// `POST /notes`: creates a note. Retried as `RetryPolicy` says, every attempt with the
        /// same `Idempotency-Key` (made for this call), so the retries create it once.
        ///
        /// A call that throws without an answer (cancelled, timed out, offline) may still have
        /// created the note: its key is gone with the call, so calling again could create a
        /// second one. When that matters, keep a key with the unsent text and use
        /// `create(_:idempotencyKey:)`: a resend with that key gets the first answer again.
        ///
        /// ```swift
        /// let note = try await client.notes.create("Buy milk")     // note.id == "1", note.version == 1
        /// ```
        public func create(_ body: String) async throws(JotterClientError) -> Note {
            try await write("POST", "/notes", body: body, ifMatch: nil)
        }

        /// `GET /notes/{id}`: the note; its `etag` is the `ETag` to send back in `ifMatch`.
        ///
        /// ```swift
        /// let note = try await client.notes.get("42")     // throws isNotFound when there is none
        /// ```
        public func get(_ id: String) async throws(JotterClientError) -> Note {
            try await client.send(client.makeRequest("GET", "/notes/" + JotterClient.segment(id)), decoding: NoteEnvelope.self).value.note
        }

        /// `GET /notes/{id}` with `If-None-Match`: `nil` when the note still has that ETag
        /// (`304`), else the changed note.
        ///
        /// ```swift
        /// if let changed = try await client.notes.get(note.id, ifNoneMatch: note.etag) { show(changed) }
        /// ```
        public func get(_ id: String, ifNoneMatch etag: String) async throws(JotterClientError) -> Note? {
            let request = client.makeRequest("GET", "/notes/" + JotterClient.segment(id), headers: ["If-None-Match": etag])
            let (data, response) = try await client.send(request)
            if response.statusCode == 304 { return nil }
            return try JotterClient.decode(NoteEnvelope.self, from: data).note
        }

        /// `PUT /notes/{id}`: replaces the body with exactly `body` (`""` empties the note). With
        /// `ifMatch` (a note's `etag`) the server refuses with `412` (`isConflict`) when the note
        /// changed since that version.
        ///
        /// Every attempt carries one `Idempotency-Key` (`idempotencyKey`, or one made for this
        /// call): a retry after a lost answer (by `RetryPolicy`, or by URLSession itself on a
        /// reused connection), which meets its first attempt's own write, gets that answer again
        /// from the server. Where the server kept only a reference to it (an answer over 64 KiB)
        /// it answers `303` to the note, which URLSession follows as a `GET` with the same
        /// `If-Match`: on that `412` the note is read, and when it holds exactly `body` the call
        /// returns it — the write succeeded. Pass a key kept with the edit to resend it after the
        /// call itself failed (cancelled, offline).
        ///
        /// ```swift
        /// do {
        ///     note = try await client.notes.update(note.id, body: text, ifMatch: note.etag)
        /// } catch {
        ///     guard error.isConflict else { throw error }
        ///     note = try await client.notes.get(note.id)     // someone else saved first
        /// }
        /// ```
        public func update(
            _ id: String, body: String, ifMatch etag: String? = nil, idempotencyKey: String? = nil
        ) async throws(JotterClientError) -> Note {
            var request = client.makeRequest(
                "PUT", "/notes/" + JotterClient.segment(id), headers: ["Idempotency-Key": idempotencyKey ?? UUID().uuidString])
            if let etag { request.setValue(etag, forHTTPHeaderField: "If-Match") }
            Self.jsonBody(body, to: &request)
            do {
                return try await client.send(request, decoding: NoteEnvelope.self).value.note
            } catch  where error.isConflict && etag != nil {
                // A retry whose first attempt committed gets that answer again by its key, but
                // one kept only as a reference (over 64 KiB) is a 303 to the note, which
                // URLSession follows as a GET that keeps If-Match, and fails it: if the note
                // holds exactly this text, that write succeeded.
                if let current = try? await get(id), current.body == body { return current }
                throw error
            }
        }

        /// `DELETE /notes/{id}`: moves the note, with its attachments, to the trash (`trash()`,
        /// `restore(_:)`) for the server's `--trash-days`; returns the note as it was. With
        /// `ifMatch`, only if it is still that version; a `404` or `412` then (a retry after a
        /// lost answer meeting its first attempt's deletion) returns the note when the trash
        /// holds it at exactly that version: it was deleted as asked.
        public func delete(_ id: String, ifMatch etag: String? = nil) async throws(JotterClientError) -> Note {
            var request = client.makeRequest("DELETE", "/notes/" + JotterClient.segment(id))
            if let etag { request.setValue(etag, forHTTPHeaderField: "If-Match") }
            do {
                return try await client.send(request, decoding: NoteEnvelope.self).value.note
            } catch  where (error.isNotFound || error.isConflict) && etag != nil {
                // Read until it is found, however many notes were deleted since.
                if let etag, let trashed = try? await trashed(id), trashed.note.etag == etag { return trashed.note }
                throw error
            }
        }

        private func write(_ method: String, _ path: String, body: String, ifMatch etag: String?) async throws(JotterClientError) -> Note {
            var request = client.makeRequest(method, path)
            if let etag { request.setValue(etag, forHTTPHeaderField: "If-Match") }
            // JSON, not a form: an empty form field is "no body sent" (the note left as it was).
            Self.jsonBody(body, to: &request)
            return try await client.send(request, decoding: NoteEnvelope.self).value.note
        }
    }
}
