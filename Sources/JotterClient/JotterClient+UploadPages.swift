import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient.Uploads {
    /// Which uploads a listing shows.
    public enum Attachment: Sendable, Hashable {
        /// Every upload.
        case any
        /// Only the uploads attached to no note.
        case unattached
        /// Only the attachments of this note.
        case note(String)
    }

    /// `GET /uploads`: one page, newest first.
    ///
    /// ```swift
    /// var page = try await client.uploads.page(limit: 50, attachment: .unattached)
    /// while let next = try await client.uploads.nextPage(after: page) { page = next }
    /// ```
    ///
    /// - Parameters:
    ///   - limit: at most this many (the server's default is 100; over 1000 acts as 1000).
    ///   - after: the id of the last upload of the previous page.
    ///   - attachment: every upload, those in no note, or one note's.
    public func page(limit: Int? = nil, after: String? = nil, attachment: Attachment = .any) async throws(JotterClientError) -> UploadPage {
        var parameters = FormURLEncodedBody()
        if let limit { parameters.append("limit", String(limit)) }
        switch attachment {
        case .any: break
        case .unattached: parameters.append("note_id", "")
        case .note(let id): parameters.append("note_id", id)
        }
        if let after { parameters.append("after", after) }
        return try await client.send(client.makeRequest("GET", "/uploads", query: parameters), decoding: UploadPage.self).value
    }

    /// The page after `page` (following its `next`), or `nil` after the last one.
    public func nextPage(after page: UploadPage) async throws(JotterClientError) -> UploadPage? {
        try await client.page(after: page)
    }

    /// Every upload of a listing, newest first, fetched page by page.
    public func all(attachment: Attachment = .any, pageSize: Int = 1000) async throws(JotterClientError) -> [Upload] {
        try await client.everyPage(from: try await page(limit: pageSize, attachment: attachment))
    }

    /// `PATCH /uploads/{id}`: attaches the upload to note `noteID`, or to none when nil. The
    /// notes it leaves and joins change version. Never retried.
    public func attach(_ id: String, toNote noteID: String?) async throws(JotterClientError) -> Upload {
        var request = client.makeRequest("PATCH", "/uploads/" + JotterClient.segment(id))
        FormURLEncodedBody([("note_id", noteID ?? "")]).apply(to: &request)
        return try await client.send(request, decoding: UploadEnvelope.self).value.upload
    }
}
