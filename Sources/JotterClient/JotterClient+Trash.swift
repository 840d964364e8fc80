import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient.Notes {
    /// `GET /notes/trash`: one page of the deleted notes, most recently deleted first, each with
    /// its attachments and `deletedAt`. They stay for the server's `--trash-days`.
    ///
    /// ```swift
    /// let page = try await client.notes.trash()
    /// for deleted in page.notes { print(deleted.id, deleted.deletedAt, deleted.note.body) }
    /// ```
    public func trash(limit: Int? = nil, after id: String? = nil) async throws(JotterClientError) -> TrashList {
        var parameters = FormURLEncodedBody()
        if let limit { parameters.append("limit", String(limit)) }
        if let id { parameters.append("after", id) }
        return try await client.send(client.makeRequest("GET", "/notes/trash", query: parameters), decoding: TrashList.self).value
    }

    /// Every note in the trash, most recently deleted first (every page).
    public func allTrash() async throws(JotterClientError) -> [DeletedNote] {
        try await client.everyPage(from: try await trash(limit: 1000))
    }

    /// `POST /notes/{id}/restore` without a version: brings a note back from the trash with its
    /// id, body and attachments, at its next version. A note not in the trash is `404`
    /// (`isNotFound`); one that is not deleted is `409` (`status == 409`).
    ///
    /// ```swift
    /// let note = try await client.notes.restore("42")
    /// ```
    public func restore(_ id: String) async throws(JotterClientError) -> Note {
        let request = client.makeRequest("POST", "/notes/" + JotterClient.segment(id) + "/restore")
        return try await client.send(request, decoding: NoteEnvelope.self).value.note
    }

    /// `DELETE /notes/trash/{id}`: removes a note from the trash for good, with its revisions
    /// and attachments (their bytes too). A note not in the trash is `404` (`isNotFound`). With
    /// `ifMatch` (the `etag` of the note as `trash()` listed it), only if it is still that
    /// version: one restored and deleted again since (on another device) is `412`
    /// (`isConflict`), and stays.
    public func deleteFromTrash(_ id: String, ifMatch etag: String? = nil) async throws(JotterClientError) {
        var request = client.makeRequest("DELETE", "/notes/trash/" + JotterClient.segment(id))
        if let etag { request.setValue(etag, forHTTPHeaderField: "If-Match") }
        _ = try await client.send(request)
    }

    /// Note `id` as the trash holds it, nil when it is not there: the trash read a page after
    /// another (1,000 at a time, by each page's `next`) until it is found.
    func trashed(_ id: String) async throws(JotterClientError) -> DeletedNote? {
        var page: TrashList? = try await trash(limit: 1000)
        while let current = page {
            if let found = current.notes.first(where: { $0.id == id }) { return found }
            page = try await client.page(after: current)
        }
        return nil
    }
}
