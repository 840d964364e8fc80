import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `download(_:to:)` did.
public struct DownloadResult: Sendable, Hashable {
    /// Where the file is.
    public var url: URL
    /// Its size: the whole upload.
    public var size: Int64
    /// Bytes that were already there and kept (0 for a fresh download).
    public var resumedFrom: Int64

    public init(url: URL, size: Int64, resumedFrom: Int64) {
        self.url = url
        self.size = size
        self.resumedFrom = resumedFrom
    }
}

extension JotterClient.Uploads {
    /// `GET /uploads/{id}/content` into `destination`, written as it arrives, resuming a
    /// partial file.
    ///
    /// A file already at `destination` is taken for the beginning of this upload (as
    /// `curl -C -` does): only the rest is asked for, with `Range`. If the server sends the
    /// whole file instead, or the file there is longer than the upload, it is rewritten from
    /// the start. An interrupted download keeps what arrived, so calling again (or the
    /// automatic retry of a dropped connection) continues where it stopped. URLSession's own
    /// resume data does not work on Linux; this needs none.
    ///
    /// ```swift
    /// let result = try await client.uploads.download(upload.id, to: URL(fileURLWithPath: "photo.jpg"))
    /// print("\(result.size) bytes, \(result.resumedFrom) of them already there")
    /// ```
    @discardableResult
    public func download(_ id: String, to destination: URL,
                         progress: (@Sendable (TransferProgress) -> Void)? = nil) async throws(JotterClientError) -> DownloadResult {
        try await client.download("/uploads/" + JotterClient.segment(id) + "/content", to: destination,
                                  size: { () async throws(JotterClientError) in try await get(id).size }, progress: progress)
    }
}

extension JotterClient {
    /// `GET path` into `destination`, resuming a partial file (see `Uploads.download(_:to:progress:)`);
    /// `size` tells the whole file's size when the server has nothing after what is there.
    func download(_ path: String, to destination: URL, size: () async throws(JotterClientError) -> Int64,
                  progress: (@Sendable (TransferProgress) -> Void)?) async throws(JotterClientError) -> DownloadResult {
        let client = self
        let request = client.makeRequest("GET", path, headers: ["Accept": "*/*"])
        var resumedFrom = Uploads.size(of: destination)
        return try await client.withRetries(request) { () async throws(JotterClientError) in
            var request = request
            let existing = Uploads.size(of: destination)
            if existing > 0 { request.setValue("bytes=\(existing)-", forHTTPHeaderField: "Range") }
            var file: FileHandle?
            defer { try? file?.close() }
            var written = existing, total: Int64?
            do throws(JotterClientError) {
                try await client.stream(client.session.dataTask(with: request), response: { head throws(JotterClientError) in
                    let whole = head.statusCode != 206
                    if whole { written = 0; resumedFrom = 0 }
                    total = whole ? head.expectedContentLength : Uploads.completeLength(head)
                    file = try Uploads.open(destination, truncate: whole)
                }) { chunk throws(JotterClientError) in
                    do { try file?.write(contentsOf: chunk) } catch { throw .localFile("cannot write \(destination.path): \(error.localizedDescription)") }
                    written += Int64(chunk.count)
                    progress?(TransferProgress(completed: written, total: total))
                }
            } catch let error where error.status == 416 && existing > 0 {
                // Nothing after what is there: done if it is the whole upload, else start over.
                if try await size() == existing { return DownloadResult(url: destination, size: existing, resumedFrom: existing) }
                try? Uploads.open(destination, truncate: true).close()
                guard Uploads.size(of: destination) == 0 else { throw .localFile("cannot empty \(destination.path)") }
                return try await download(path, to: destination, size: size, progress: progress)
            }
            if let total, total >= 0, written != total { throw .invalidResponse("got \(written) of \(total) bytes") }
            return DownloadResult(url: destination, size: written, resumedFrom: resumedFrom)
        }
    }

}

extension JotterClient.Uploads {
    /// The total of `Content-Range: bytes 100-199/200`.
    static func completeLength(_ head: HTTPURLResponse) -> Int64? {
        head.value(forHTTPHeaderField: "Content-Range")?.split(separator: "/").last.flatMap { Int64($0) }
    }

    static func size(of url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The file for appending (emptied first when `truncate`), created if missing.
    static func open(_ url: URL, truncate: Bool) throws(JotterClientError) -> FileHandle {
        if !FileManager.default.fileExists(atPath: url.path) { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        do {
            let handle = try FileHandle(forWritingTo: url)
            if truncate { try handle.truncate(atOffset: 0) } else { try handle.seekToEnd() }
            return handle
        } catch {
            throw .localFile("cannot write \(url.path): \(error.localizedDescription)")
        }
    }
}
