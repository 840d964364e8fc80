import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient.Notes {
    /// `GET /notes/{id}/revisions`: one page of the note's kept versions, newest first. A
    /// deleted note keeps its history in the trash: `inTrash` asks for it there
    /// (`GET /notes/trash/{id}/revisions`; a `404` at the other place).
    ///
    /// ```swift
    /// let page = try await client.notes.revisions("42")          // page.revisions[0] is the current version
    /// ```
    public func revisions(_ id: String, inTrash: Bool = false, limit: Int? = nil, after version: Int? = nil) async throws(JotterClientError)
        -> RevisionList
    {
        var parameters = FormURLEncodedBody()
        if let limit { parameters.append("limit", String(limit)) }
        if let version { parameters.append("after", String(version)) }
        return try await client.send(
            client.makeRequest("GET", Self.historyPath(id, inTrash: inTrash), query: parameters),
            decoding: RevisionList.self
        ).value
    }

    /// Every kept version of the note (in the trash with `inTrash`), newest first (every page).
    public func allRevisions(_ id: String, inTrash: Bool = false) async throws(JotterClientError) -> [RevisionInfo] {
        try await client.everyPage(from: try await revisions(id, inTrash: inTrash, limit: 1000))
    }

    /// `GET /notes/{id}/revisions/{version}`: that version, with its body (of a note in the
    /// trash with `inTrash`: `GET /notes/trash/{id}/revisions/{version}`).
    public func revision(_ id: String, version: Int, inTrash: Bool = false) async throws(JotterClientError) -> Revision {
        try await client.send(
            client.makeRequest("GET", Self.historyPath(id, inTrash: inTrash) + "/\(version)"),
            decoding: RevisionEnvelope.self
        ).value.revision
    }

    private static func historyPath(_ id: String, inTrash: Bool) -> String {
        (inTrash ? "/notes/trash/" : "/notes/") + JotterClient.segment(id) + "/revisions"
    }

    /// `POST /notes/{id}/restore` with `version`: the note at a new version whose body is that revision's.
    ///
    /// ```swift
    /// let note = try await client.notes.restore("42", version: 3)
    /// ```
    public func restore(_ id: String, version: Int, ifMatch etag: String? = nil) async throws(JotterClientError) -> Note {
        var request = client.makeRequest("POST", "/notes/" + JotterClient.segment(id) + "/restore")
        if let etag { request.setValue(etag, forHTTPHeaderField: "If-Match") }
        FormURLEncodedBody([("version", String(version))]).apply(to: &request)
        return try await client.send(request, decoding: NoteEnvelope.self).value.note
    }
}
