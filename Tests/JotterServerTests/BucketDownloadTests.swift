import Foundation
import JotterBlobs
import JotterStore
import Testing
import JotterTestSupport

/// A download from the bucket answers only once the bucket has: the object's absence is a
/// `404` problem, an unreachable bucket a `503` with `Retry-After` (never a `200` and a cut
/// connection).
@Suite("Downloads from the bucket", .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
struct BucketDownloadTests {
    let backend: SharedBackend
    let bucket: S3BlobStore

    init() throws {
        backend = try SharedBackend()
        let environment = ProcessInfo.processInfo.environment.merging(backend.credentials) { _, new in new }
        bucket = S3BlobStore(try S3BlobStore.Configuration(url: backend.blobStoreURL, environment: environment))
    }

    func upload(_ app: TestApp, _ bytes: [UInt8]) throws -> String {
        var parts = MultipartBuilder()
        parts.file("file", filename: "data.bin", body: bytes)
        let created = try RawHTTP(port: app.port).request("POST", "/uploads", headers: [("Content-Type", parts.contentType)],
                                                          body: parts.finished(), close: true)
        #expect(created.status == 201, "\(created.text)")
        return try #require((try created.json()["uploads"] as? [[String: Any]])?.first?["id"] as? String)
    }

    @Test("an object deleted behind Jotter's back is a 404 problem, whole or ranged; the row stays")
    func deletedBehindOurBack() throws {
        try TestApp.with(configure: backend.configure) { app in
            let id = try upload(app, (0..<5000).map { UInt8(truncatingIfNeeded: $0) })
            try bucket.delete(UploadRecord.blobKey(id))
            for headers in [[], [("Range", "bytes=10-19")]] {
                let answer = try RawHTTP(port: app.port).request("GET", "/uploads/\(id)/content", headers: headers)
                #expect(answer.status == 404, "\(answer.text)")
                #expect(answer.header("Content-Type") == "application/problem+json")
                #expect(answer.text.contains("gone"))
            }
            #expect(try app.request("GET", "/uploads/\(id)").status == 200)
        }
    }

    @Test("an unreachable bucket is a 503 with Retry-After before any byte")
    func bucketDown() throws {
        try TestApp.with(configure: backend.configure) { app in
            let id = try upload(app, [1, 2, 3, 4])
            // A second instance on the same database whose bucket endpoint does not answer.
            try TestApp.with(configure: { configuration in
                backend.configure(&configuration)
                configuration.blobStore = "s3://\(ProcessInfo.processInfo.environment["JOTTER_TEST_S3_BUCKET"]!)?endpoint=http://127.0.0.1:9"
            }) { cut in
                let answer = try RawHTTP(port: cut.port, timeout: 20).request("GET", "/uploads/\(id)/content")
                #expect(answer.status == 503, "\(answer.text)")
                #expect(answer.header("Retry-After") != nil)
                #expect(answer.header("Content-Type") == "application/problem+json")
            }
        }
    }
}
