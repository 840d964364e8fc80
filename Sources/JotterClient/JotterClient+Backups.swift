import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient {
    /// `/admin/backups`: online backups of the server — a consistent snapshot taken while
    /// writes go on, fetched file by file (downloads resume), then removed.
    ///
    /// ```swift
    /// let backup = try await client.backups.create()
    /// try await client.backups.download(backup, file: "jotter.sqlite", to: folder.appendingPathComponent("jotter.sqlite"))
    /// for upload in backup.uploads {
    ///     try await client.backups.download(backup, file: "uploads/" + upload.id, to: folder.appendingPathComponent("uploads/" + upload.id))
    /// }
    /// try await client.backups.delete(backup.id)
    /// ```
    public var backups: Backups { Backups(client: self) }

    /// The calls on `/admin/backups`; get it from `client.backups`.
    public struct Backups: Sendable {
        let client: JotterClient

        /// `POST /admin/backups`: takes the snapshot on the server (it reads the whole
        /// database, so it can take a while). `409` while another one is being made.
        public func create() async throws(JotterClientError) -> Backup {
            try await client.send(client.makeRequest("POST", "/admin/backups"), decoding: BackupEnvelope.self).value.backup
        }

        /// Fetches one file of the snapshot — `jotter.sqlite` or `uploads/<id>` — into
        /// `destination`, resuming a partial file there.
        @discardableResult
        public func download(
            _ backup: Backup, file: String, to destination: URL,
            progress: (@Sendable (TransferProgress) -> Void)? = nil
        ) async throws(JotterClientError) -> DownloadResult {
            let size: Int64
            if file == "jotter.sqlite" {
                size = backup.databaseSize
            } else if file.hasPrefix("uploads/"), let upload = backup.uploads.first(where: { "uploads/" + $0.id == file }) {
                size = upload.size
            } else {
                throw .localFile("\(file) is not a file of backup \(backup.id)")
            }
            let path =
                "/admin/backups/" + JotterClient.segment(backup.id) + "/files/"
                + file.split(separator: "/").map { JotterClient.segment(String($0)) }.joined(separator: "/")
            let request = client.makeRequest("GET", path, headers: ["Accept": "*/*"])
            let client = self.client
            // Snapshot files never change: what a dropped attempt left is kept, the rest asked with Range.
            let resumedFrom = try await client.withRetries(request) { () async throws(JotterClientError) -> Int64 in
                var existing = Uploads.size(of: destination)
                if existing > size { existing = 0 }
                let handle = try Uploads.open(destination, truncateTo: existing)
                defer { try? handle.close() }
                var written = existing
                if existing < size {
                    var request = request
                    if existing > 0 { request.setValue("bytes=\(existing)-", forHTTPHeaderField: "Range") }
                    try await client.stream(
                        request,
                        response: { head throws(JotterClientError) in
                            if head.statusCode != 206 && written > 0 {
                                do { try handle.truncate(atOffset: 0) } catch {
                                    throw .localFile("cannot write \(destination.path): \(error.localizedDescription)")
                                }
                                written = 0
                            }
                            progress?(TransferProgress(completed: written, total: size))
                        }
                    ) { chunk throws(JotterClientError) in
                        do { try handle.write(contentsOf: chunk) } catch {
                            throw .localFile("cannot write \(destination.path): \(error.localizedDescription)")
                        }
                        written += Int64(chunk.count)
                        progress?(TransferProgress(completed: written, total: size))
                    }
                }
                guard written == size else { throw .invalidResponse("got \(written) of the \(size) bytes of \(file)") }
                return existing
            }
            return DownloadResult(url: destination, size: size, resumedFrom: resumedFrom)
        }

        /// `DELETE /admin/backups/{id}`: removes the snapshot from the server.
        public func delete(_ id: String) async throws(JotterClientError) {
            _ = try await client.send(client.makeRequest("DELETE", "/admin/backups/" + JotterClient.segment(id)))
        }
    }
}
