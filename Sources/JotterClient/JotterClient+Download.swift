import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

/// What `download(_:to:)` did.
public struct DownloadResult: Sendable, Hashable {
    /// Where the file is.
    public var url: URL
    /// Its size: the whole upload.
    public var size: Int64
    /// Bytes of an earlier, interrupted download of the same upload that were kept (0 for a
    /// fresh download; `size` when the file was already there, complete).
    public var resumedFrom: Int64
    /// The file at `url` already was this upload (same SHA-256): nothing was fetched or written.
    public var alreadyComplete: Bool

    public init(url: URL, size: Int64, resumedFrom: Int64, alreadyComplete: Bool = false) {
        self.url = url
        self.size = size
        self.resumedFrom = resumedFrom
        self.alreadyComplete = alreadyComplete
    }
}

extension JotterClient.Uploads {
    /// `GET /uploads/{id}/content` into `destination`, checked against the upload's SHA-256,
    /// resuming an interrupted download of the same upload.
    ///
    /// The bytes go to a partial file beside `destination` whose name carries the upload's
    /// SHA-256 (`photo.jpg.jotter-part-3fa9…`); only when they are complete and their SHA-256
    /// is the upload's is it renamed to `destination`. An interrupted download keeps the partial
    /// file, and the next call (or the automatic retry of a dropped connection) asks only for the
    /// rest, with `Range` and `If-Range` on the upload's `ETag`, so it can only continue the same
    /// content. A file already at `destination` is never appended to: when it already is this
    /// upload nothing is done (`alreadyComplete`); otherwise it is left untouched and the call
    /// throws `.destinationExists`, unless `replacing` is true. URLSession's own resume data does
    /// not work on Linux; this needs none.
    ///
    /// ```swift
    /// let result = try await client.uploads.download(upload.id, to: URL(fileURLWithPath: "photo.jpg"))
    /// print("\(result.size) bytes, \(result.resumedFrom) of them from an earlier attempt")
    /// ```
    @discardableResult
    public func download(
        _ id: String, to destination: URL, replacing: Bool = false,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(JotterClientError) -> DownloadResult {
        let upload = try await get(id)
        if FileManager.default.fileExists(atPath: destination.path) {
            if (try? Self.sha256(of: destination)) == upload.sha256 {
                return DownloadResult(url: destination, size: upload.size, resumedFrom: upload.size, alreadyComplete: true)
            }
            guard replacing else {
                throw JotterClientError(
                    kind: .destinationExists,
                    message: "\(destination.path) already exists and is not upload \(upload.id): it was left untouched")
            }
        }
        let partial = URL(fileURLWithPath: destination.path + ".jotter-part-" + upload.sha256.prefix(16))
        let request = client.makeRequest("GET", "/uploads/" + JotterClient.segment(id) + "/content", headers: ["Accept": "*/*"])
        let resumedFrom: Int64 = try await client.withRetries(request) { () async throws(JotterClientError) -> Int64 in
            var existing = Self.size(of: partial)
            if existing > upload.size { existing = 0 }
            let file = try Self.open(partial, truncateTo: existing)
            defer { try? file.close() }
            var hash = ContentHash()
            if existing > 0 { try Self.hash(partial, upTo: existing, into: &hash) }
            var written = existing, kept = existing
            if existing < upload.size {
                var request = request
                request.setValue("bytes=\(existing)-", forHTTPHeaderField: "Range")
                request.setValue("\"\(upload.sha256)\"", forHTTPHeaderField: "If-Range")
                try await fetch(
                    request, upload: upload, from: existing, progress: progress,
                    restart: { () throws(JotterClientError) in
                        // The whole content came instead of the rest: start the file again.
                        do { try file.truncate(atOffset: 0) } catch {
                            throw .localFile("cannot write \(partial.path): \(error.localizedDescription)")
                        }
                        hash = ContentHash()
                        written = 0
                        kept = 0
                    }
                ) { chunk throws(JotterClientError) in
                    do { try file.write(contentsOf: chunk) } catch { throw .localFile("cannot write \(partial.path): \(error.localizedDescription)") }
                    chunk.withUnsafeBytes { hash.update($0) }
                    written += Int64(chunk.count)
                }
            }
            let digest = hash.finish()
            guard written == upload.size, digest == upload.sha256 else {
                try? FileManager.default.removeItem(at: partial)
                throw .invalidResponse(
                    "the downloaded bytes (\(written), SHA-256 \(digest.prefix(12))…) are not upload \(upload.id) "
                        + "(\(upload.size), \(upload.sha256.prefix(12))…); the partial file was removed")
            }
            return kept
        }
        guard rename(partial.path, destination.path) == 0 else {
            throw .localFile("cannot move \(partial.path) to \(destination.path): \(String(cString: strerror(errno)))")
        }
        return DownloadResult(url: destination, size: upload.size, resumedFrom: resumedFrom)
    }

    /// `GET /uploads/{id}/content`, handing each chunk to `write` as it arrives (to standard
    /// output, a pipe, a socket); throws once the content is complete if its SHA-256 is not the
    /// upload's. Nothing is resumed (what was handed over can't be taken back).
    ///
    /// ```swift
    /// try await client.uploads.download(upload.id) { chunk in FileHandle.standardOutput.write(chunk) }
    /// ```
    @discardableResult
    public func download(
        _ id: String, progress: (@Sendable (TransferProgress) -> Void)? = nil,
        write: (Data) throws(JotterClientError) -> Void
    ) async throws(JotterClientError) -> Upload {
        let upload = try await get(id)
        var hash = ContentHash()
        var written: Int64 = 0
        let request = client.makeRequest("GET", "/uploads/" + JotterClient.segment(id) + "/content", headers: ["Accept": "*/*"])
        try await fetch(request, upload: upload, from: 0, progress: progress, restart: { () throws(JotterClientError) in }) {
            chunk throws(JotterClientError) in
            try write(chunk)
            chunk.withUnsafeBytes { hash.update($0) }
            written += Int64(chunk.count)
        }
        let digest = hash.finish()
        guard written == upload.size, digest == upload.sha256 else {
            throw .invalidResponse(
                "the downloaded bytes (\(written), SHA-256 \(digest.prefix(12))…) are not upload \(upload.id) "
                    + "(\(upload.size), \(upload.sha256.prefix(12))…)")
        }
        return upload
    }

    /// One `GET` of the content from byte `offset` (`Range` in `request` when it is not 0):
    /// `restart` when the server sends the whole content instead, then every chunk to `write`.
    /// Progress is reported once where the transfer starts, then after each chunk.
    private func fetch(
        _ request: URLRequest, upload: Upload, from offset: Int64, progress: (@Sendable (TransferProgress) -> Void)?,
        restart: () throws(JotterClientError) -> Void,
        write: (Data) throws(JotterClientError) -> Void
    ) async throws(JotterClientError) {
        var completed = offset
        try await client.stream(
            request, viaSessionUnless: true,
            response: { head throws(JotterClientError) in
                if head.statusCode == 206 {
                    guard Self.rangeStart(head) == offset else { throw .invalidResponse("a range that does not start at byte \(offset)") }
                } else if offset > 0 {
                    completed = 0
                    try restart()
                }
                // Where this transfer starts: a rate counts only what is fetched now.
                progress?(TransferProgress(completed: completed, total: upload.size))
            }
        ) { chunk throws(JotterClientError) in
            try write(chunk)
            completed += Int64(chunk.count)
            progress?(TransferProgress(completed: completed, total: upload.size))
        }
    }

    /// The first byte of `Content-Range: bytes 100-199/200`.
    static func rangeStart(_ head: HTTPURLResponse) -> Int64? {
        guard let value = head.value(forHTTPHeaderField: "Content-Range"), value.hasPrefix("bytes ") else { return nil }
        return value.dropFirst(6).split(separator: "-").first.flatMap { Int64($0) }
    }

    static func size(of url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The SHA-256 of the file at `url`.
    static func sha256(of url: URL) throws(JotterClientError) -> String {
        var digest = ContentHash()
        try hash(url, upTo: Int64.max, into: &digest)
        return digest.finish()
    }

    /// Feeds the first `count` bytes of the file at `url` to `hash`.
    static func hash(_ url: URL, upTo count: Int64, into hash: inout ContentHash) throws(JotterClientError) {
        do {
            let input = try FileHandle(forReadingFrom: url)
            defer { try? input.close() }
            var remaining = count
            while remaining > 0, let piece = try input.read(upToCount: Int(min(remaining, 1 << 20))), !piece.isEmpty {
                piece.withUnsafeBytes { hash.update($0) }
                remaining -= Int64(piece.count)
            }
        } catch {
            throw .localFile("cannot read \(url.path): \(error.localizedDescription)")
        }
    }

    /// The file for appending after its first `length` bytes (created if missing).
    static func open(_ url: URL, truncateTo length: Int64) throws(JotterClientError) -> FileHandle {
        if !FileManager.default.fileExists(atPath: url.path) { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        do {
            let handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: UInt64(length))
            try handle.seekToEnd()
            return handle
        } catch {
            throw .localFile("cannot write \(url.path): \(error.localizedDescription)")
        }
    }
}
