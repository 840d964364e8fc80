import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

/// How far a transfer has come.
public struct TransferProgress: Sendable, Hashable {
    /// Bytes sent or received so far (a resumed download counts what was already on disk).
    public var completed: Int64
    /// Bytes in all, when known.
    public var total: Int64?

    public init(completed: Int64, total: Int64?) {
        self.completed = completed
        self.total = total
    }

    /// 0…1, or `nil` when the total is unknown.
    public var fraction: Double? { total.map { $0 > 0 ? min(1, Double(completed) / Double($0)) : 1 } }
}

extension JotterClient {
    /// The `/uploads` resource: store files (optionally attached to a note), list, read,
    /// download with resume, delete.
    ///
    /// ```swift
    /// let upload = try await client.uploads.upload(fileAt: URL(fileURLWithPath: "photo.jpg"), noteID: note.id)
    /// try await client.uploads.download(upload.id, to: URL(fileURLWithPath: "copy.jpg"))
    /// ```
    public var uploads: Uploads { Uploads(client: self) }

    /// The calls on `/uploads`; get it from `client.uploads`.
    public struct Uploads: Sendable {
        let client: JotterClient

        /// `POST /uploads` with one file, streamed from disk (memory does not grow with its size).
        ///
        /// ```swift
        /// let upload = try await client.uploads.upload(fileAt: url) { progress in
        ///     print(progress.completed, "of", progress.total ?? 0)
        /// }
        /// ```
        ///
        /// - Parameters:
        ///   - noteID: attach the file to this note (`isNotFound` when there is none).
        ///   - filename: the name to record (default: the file's own name).
        ///   - contentType: default: guessed from the extension.
        ///   - progress: called as the body goes out, often and from a background thread: keep
        ///     it quick and throttle what you draw. It counts the request's body — the file and
        ///     its multipart framing, a few hundred bytes more than the file — so `total` is a
        ///     little over the file's size and `fraction` reaches 1 as the last byte goes.
        public func upload(
            fileAt url: URL, noteID: String? = nil, filename: String? = nil, contentType: String? = nil,
            progress: (@Sendable (TransferProgress) -> Void)? = nil
        ) async throws(JotterClientError) -> Upload {
            var form = MultipartFormData()
            if let noteID { form.append(noteID, name: "note_id") }
            try form.append(fileAt: url, name: "file", filename: filename, contentType: contentType)
            guard let upload = try await upload(form, progress: progress).first else { throw .invalidResponse("no upload in the answer") }
            return upload
        }

        /// `POST /uploads` with a body you built: every file part is stored; a `note_id` field
        /// attaches them. Retried as `RetryPolicy` says with the same `Idempotency-Key` (the
        /// server stores the files once); `progress` starts from 0 again on a retry.
        public func upload(
            _ form: MultipartFormData,
            progress: (@Sendable (TransferProgress) -> Void)? = nil
        ) async throws(JotterClientError) -> [Upload] {
            let (data, _) = try await client.send(form, request: client.makeRequest("POST", "/uploads"), progress: progress)
            return try JotterClient.decode(UploadList.self, from: data).uploads
        }

        /// `GET /uploads`: every upload, newest first (every page; `page(limit:after:attachment:)` for one).
        public func list() async throws(JotterClientError) -> [Upload] {
            try await all()
        }

        /// `GET /uploads/{id}`.
        public func get(_ id: String) async throws(JotterClientError) -> Upload {
            try await client.send(client.makeRequest("GET", "/uploads/" + JotterClient.segment(id)), decoding: UploadEnvelope.self).value.upload
        }

        /// `DELETE /uploads/{id}`: removes the file; returns it as it was.
        public func delete(_ id: String) async throws(JotterClientError) -> Upload {
            try await client.send(client.makeRequest("DELETE", "/uploads/" + JotterClient.segment(id)), decoding: UploadEnvelope.self).value.upload
        }
    }

    /// Sends `form` as the body of `request`, streamed from disk, and returns the answer.
    ///
    /// On Linux over `http://` it goes over a plain socket with its Content-Length and
    /// `Expect: 100-continue` (`SocketExchange`): a server that refuses it as too large says so
    /// before the body is sent. Over `https://` on Linux the body is a stream URLSession sends
    /// chunked (no Content-Length can go with it), progress counted as URLSession reads the
    /// stream. On Apple platforms it is written to a temporary file and sent with
    /// `uploadTask(with:fromFile:)` and its Content-Length, progress from the delegate. Retried
    /// only if the method is idempotent.
    func send(
        _ form: MultipartFormData, request: URLRequest,
        progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws(JotterClientError) -> (Data, HTTPURLResponse) {
        var request = request
        request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
        let total = form.contentLength
        let report = { @Sendable (sent: Int64) -> Void in progress?(TransferProgress(completed: min(sent, total), total: total)) }
        let (body, head) = try await withRetries(request) { () async throws(JotterClientError) -> (Data, HTTPURLResponse) in
            #if canImport(FoundationNetworking)
            if SocketExchange.handles(request.url, trust: configuration.trust) {
                var body = Data()
                var head: HTTPURLResponse?
                try await stream(request, body: form, sent: report, response: { head = $0 }) { body.append($0) }
                guard let head else { throw .invalidResponse("no response") }
                return (body, head)
            }
            request.httpBodyStream = MultipartInputStream(form, read: report)
            return try await exchange(request)
            #else
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-upload-\(UUID().uuidString)")
            try form.writeBody(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            var body = Data()
            var head: HTTPURLResponse?
            try await stream(session.uploadTask(with: try await adapted(request), fromFile: file), sent: report, response: { head = $0 }) {
                body.append($0)
            }
            guard let head else { throw .invalidResponse("no response") }
            return (body, head)
            #endif
        }
        report(total)
        return (body, head)
    }
}
