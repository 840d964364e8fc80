import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

/// Where a resumable upload stands, kept in a file between runs (`resumableUpload(fileAt:state:)`).
struct ResumableUploadState: Codable, Equatable {
    /// The upload resource (`/uploads/{id}`), absolute.
    var location: String
    /// The file it uploads, as it was when the upload began: a changed file starts again.
    var path: String
    var size: Int64
    var modified: Double
}

extension JotterClient.Uploads {
    /// Uploads a file resumably (tus 1.0 over `/uploads`, in chunks of `chunkSize`): where it
    /// stands is kept in `state`, so that a call after an interruption — in this process or a
    /// new one — asks the server for its offset and sends only the rest. The state file is
    /// removed once the upload is complete; a state file for another file (or for this file
    /// changed since) is ignored and replaced.
    ///
    /// ```swift
    /// let state = URL(fileURLWithPath: "photo.jpg.jotter-upload")
    /// let upload = try await client.uploads.resumableUpload(fileAt: url, state: state) { progress in
    ///     print(progress.completed, "of", progress.total ?? 0)   // resumed bytes count from the start
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - noteID: attach the finished upload to this note.
    ///   - filename, contentType: as `upload(fileAt:)`.
    ///   - progress: the bytes the server has acknowledged so far, resumed ones included (a
    ///     trailing closure is this one).
    ///   - resumed: called once with the offset the upload went on from (0 for a new one).
    public func resumableUpload(
        fileAt url: URL, state: URL, noteID: String? = nil, filename: String? = nil, contentType: String? = nil,
        chunkSize: Int = 8 << 20, progress: (@Sendable (TransferProgress) -> Void)? = nil,
        resumed: (@Sendable (Int64) -> Void)? = nil
    ) async throws(JotterClientError) -> Upload {
        let attributes: [FileAttributeKey: Any]
        do { attributes = try FileManager.default.attributesOfItem(atPath: url.path) } catch {
            throw .localFile("cannot read \(url.path): \(error.localizedDescription)")
        }
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        let tus = ["Tus-Resumable": "1.0.0"]

        var location: URL?
        var offset: Int64 = 0
        if let data = try? Data(contentsOf: state), let saved = try? JSONDecoder().decode(ResumableUploadState.self, from: data),
            saved.path == url.path, saved.size == size, saved.modified == modified, let known = URL(string: saved.location)
        {
            do {
                let (_, head) = try await client.send(client.makeRequest("HEAD", url: known, headers: tus))
                if let text = head.value(forHTTPHeaderField: "Upload-Offset"), let value = Int64(text), value <= size {
                    location = known
                    offset = value
                }
            } catch  where error.isNotFound {
                // Expired or cancelled: start again.
            }
        }
        if location == nil {
            let name = filename ?? url.lastPathComponent
            let type = contentType ?? MultipartFormData.contentType(forExtension: url.pathExtension)
            let metadata = "filename \(Data(name.utf8).base64EncodedString()),filetype \(Data(type.utf8).base64EncodedString())"
            var query: FormURLEncodedBody = [:]
            if let noteID { query.append("note_id", noteID) }
            let request = client.makeRequest(
                "POST", "/uploads", query: query,
                headers: tus.merging(["Upload-Length": String(size), "Upload-Metadata": metadata]) { $1 })
            let (_, created) = try await client.send(request)
            guard let text = created.value(forHTTPHeaderField: "Location"), let made = URL(string: text, relativeTo: client.baseURL)?.absoluteURL
            else {
                throw .invalidResponse("the server gave no Location for the upload")
            }
            location = made
            let saved = ResumableUploadState(location: made.absoluteString, path: url.path, size: size, modified: modified)
            do { try JSONEncoder().encode(saved).write(to: state, options: .atomic) } catch {
                throw .localFile("cannot write the state file \(state.path): \(error.localizedDescription)")
            }
        }
        guard let location else { throw .invalidResponse("no upload resource") }
        resumed?(offset)
        progress?(TransferProgress(completed: offset, total: size))

        let file: FileHandle
        do { file = try FileHandle(forReadingFrom: url) } catch { throw .localFile("cannot read \(url.path): \(error.localizedDescription)") }
        defer { try? file.close() }
        while offset < size {
            let chunk: Data
            do {
                try file.seek(toOffset: UInt64(offset))
                chunk = try file.read(upToCount: chunkSize) ?? Data()
            } catch {
                throw .localFile("cannot read \(url.path): \(error.localizedDescription)")
            }
            guard !chunk.isEmpty else { throw .localFile("\(url.path) got shorter while it was uploaded") }
            var request = client.makeRequest(
                "PATCH", url: location,
                headers: tus.merging([
                    "Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream",
                ]) { $1 })
            request.httpBody = chunk
            let (_, answer) = try await client.send(request)
            guard let text = answer.value(forHTTPHeaderField: "Upload-Offset"), let next = Int64(text), next > offset else {
                throw .invalidResponse("the server did not acknowledge the bytes sent")
            }
            offset = next
            progress?(TransferProgress(completed: offset, total: size))
        }
        try? FileManager.default.removeItem(at: state)
        return try await get(location.lastPathComponent)
    }
}
