import Foundation
import Glibc
import JotterBlobs
import JotterHTTP
import JotterStore
import Testing
import JotterServerTestSupport
import JotterTestSupport
import JotterSystem

/// Uploads on PostgreSQL + S3 go to the bucket while they arrive: an S3 multipart upload with
/// parts of 8 MiB, no temporary file on the instance, the row after the last part; a request
/// cut short leaves no multipart upload open and no row.
@Suite("Uploads streamed to the bucket", .serialized, .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
struct BucketStreamingTests {
    let backend: SharedBackend
    let bucket: S3BlobStore

    init() throws {
        backend = try SharedBackend()
        let environment = ProcessInfo.processInfo.environment.merging(backend.credentials) { _, new in new }
        bucket = S3BlobStore(try S3BlobStore.Configuration(url: backend.blobStoreURL, environment: environment))
    }

    static let boundary = "BucketStreamingBoundary"
    static func partHead(_ filename: String, type: String = "application/octet-stream") -> [UInt8] {
        Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(filename)\"\r\nContent-Type: \(type)\r\n\r\n".utf8)
    }

    /// Open multipart uploads under `uploads/` not in `known`, with the bytes of their parts.
    func newUploads(besides known: Set<String>) throws -> [(upload: S3BlobStore.MultipartUpload, bytes: Int64)] {
        try bucket.listMultipartUploads(prefix: "uploads/").filter { !known.contains($0.uploadID) }.map { upload in
            (upload, (try? bucket.listParts(upload.key, uploadID: upload.uploadID))?.reduce(0) { $0 + $1.size } ?? 0)
        }
    }

    static func digest(_ bytes: [UInt8]) -> String {
        var hash = SHA256()
        bytes.withUnsafeBytes { hash.update($0) }
        return hash.finish()
    }

    func temporaryFiles(_ app: TestApp) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("tmp").path)) ?? []
    }

    @Test("a file part reaches the bucket in parts while it arrives, with no temporary file; cut off, it leaves no upload and no row")
    func partsWhileArrivingThenCut() throws {
        try TestApp.with(configure: backend.configure) { app in
            let known = Set(try bucket.listMultipartUploads(prefix: "uploads/").map(\.uploadID))
            let connection = try RawHTTP(port: app.port, timeout: 20)
            let declared = 64 << 20
            let head = Self.partHead("big.bin")
            try connection.send(
                "POST /uploads HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=\(Self.boundary)\r\n"
                    + "Content-Length: \(head.count + declared + 64)\r\n\r\n")
            try connection.send(head)
            let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
            for _ in 0..<20 { try connection.send(chunk) }
            // Two 8 MiB parts are complete: the first at least is in the bucket before the body ends.
            var mine: (upload: S3BlobStore.MultipartUpload, bytes: Int64)?
            let deadline = Date().addingTimeInterval(15)
            while mine == nil, Date() < deadline {
                mine = try newUploads(besides: known).first { $0.bytes >= 8 << 20 }
                if mine == nil { usleep(100_000) }
            }
            let upload = try #require(mine, "no multipart upload with a part appeared while the body was arriving").upload
            #expect(temporaryFiles(app) == [], "the upload went through a temporary file")

            // The client goes away: the multipart upload is aborted, and no row is written.
            shutdown(connection.fd, Int32(SHUT_RDWR))  // RawHTTP closes the descriptor, once
            let gone = Date().addingTimeInterval(15)
            while try bucket.listMultipartUploads(prefix: upload.key).contains(where: { $0.uploadID == upload.uploadID }), Date() < gone {
                usleep(100_000)
            }
            #expect(try !bucket.listMultipartUploads(prefix: upload.key).contains { $0.uploadID == upload.uploadID })
            #expect(try bucket.head(upload.key) == nil)
            #expect((try app.request("GET", "/uploads").json()["uploads"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("a body of two files, one over two parts: both whole in the bucket, hashed, and no multipart upload left open")
    func completeUploadOfSeveralParts() throws {
        try TestApp.with(configure: backend.configure) { app in
            let big = (0..<(17 << 20) + 12345).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 9) }
            let text = Array("héllo, bucket\n".utf8)
            var parts = MultipartBuilder(boundary: Self.boundary)
            parts.file("file", filename: "big.bin", body: big)
            parts.file("file", filename: "note.txt", contentType: "text/plain", body: text)
            let created = try RawHTTP(port: app.port, timeout: 60).request(
                "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
                body: parts.finished(), close: true)
            #expect(created.status == 201, "\(created.text)")
            let uploads = try #require(try created.json()["uploads"] as? [[String: Any]])
            #expect(uploads.count == 2)
            let ids = uploads.compactMap { $0["id"] as? String }
            #expect(uploads.first?["size"] as? Int == big.count)
            #expect(uploads.first?["sha256"] as? String == Self.digest(big))
            #expect(uploads.last?["content_type"] as? String == "text/plain; charset=utf-8")
            #expect(try bucket.head(UploadRecord.blobKey(ids[0]))?.size == Int64(big.count))
            #expect(try bucket.bytes(UploadRecord.blobKey(ids[1])) == text)
            for id in ids { #expect(try bucket.listMultipartUploads(prefix: UploadRecord.blobKey(id)).isEmpty) }
            let downloaded = try RawHTTP(port: app.port, timeout: 60).request("GET", "/uploads/\(ids[0])/content")
            #expect(downloaded.body.count == big.count && Self.digest(downloaded.body) == Self.digest(big))
            #expect(temporaryFiles(app) == [])
        }
    }

    @Test("an upload over --max-upload-size is refused mid-body and its multipart upload aborted")
    func tooLargeAborts() throws {
        try TestApp.with(configure: { configuration in
            backend.configure(&configuration)
            configuration.maxUploadSize = 12 << 20
        }) { app in
            let known = Set(try bucket.listMultipartUploads(prefix: "uploads/").map(\.uploadID))
            let connection = try RawHTTP(port: app.port, timeout: 20)
            let head = Self.partHead("big.bin")
            // No Content-Length (chunked), so the limit is found in the middle of the body.
            try connection.send(
                "POST /uploads HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=\(Self.boundary)\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n")
            func chunked(_ bytes: [UInt8]) -> [UInt8] { Array("\(String(bytes.count, radix: 16))\r\n".utf8) + bytes + Array("\r\n".utf8) }
            try connection.send(chunked(head))
            let chunk = [UInt8](repeating: 0x41, count: 1 << 20)
            var refused: WireResponse?
            for _ in 0..<16 {
                do { try connection.send(chunked(chunk)) } catch { break }
            }
            refused = try? connection.readResponse()
            #expect(refused?.status == 413, "\(refused?.text ?? "no answer")")
            let deadline = Date().addingTimeInterval(15)
            while try !newUploads(besides: known).isEmpty, Date() < deadline { usleep(100_000) }
            #expect(try newUploads(besides: known).isEmpty)
            #expect((try app.request("GET", "/uploads").json()["uploads"] as? [Any])?.isEmpty == true)
        }
    }
}
