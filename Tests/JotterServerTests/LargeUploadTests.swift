import Foundation
import Glibc
import Testing
import JotterBlobs
import JotterHTTP
import JotterStore
import JotterServerTestSupport
import JotterTestSupport
import JotterSystem

/// A 1 GiB upload through the real binary: it streams to disk (and from there, with PostgreSQL
/// and S3, to the bucket one part at a time) and the server's memory does not grow with the file.
@Suite("Large uploads", .tags(.timing), .serialized)
struct LargeUploadTests {
    @Test("1 GiB through /uploads: stored intact, server peak RSS under 64 MiB")
    func oneGibibyte() throws {
        let server = try ServerProcess()
        defer { server.signal(SIGTERM); _ = server.finish() }
        do {
            let (id, size) = try upload(to: server)
            let attributes = try FileManager.default.attributesOfItem(atPath: server.dataDirectory.appendingPathComponent("uploads/\(id)").path)
            #expect((attributes[.size] as? Int) == size)
        } catch {
            Issue.record("\(error); server log: \(server.stderrText.suffix(2000))")
        }
    }

    @Test(
        "1 GiB through /uploads on PostgreSQL + S3: streamed to the bucket in parts, server peak RSS under 64 MiB",
        .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
    func oneGibibyteToTheBucket() throws {
        let backend = try SharedBackend()
        let server = try ServerProcess(backend.arguments + ["--quiet"], environment: backend.processEnvironment)
        defer { server.signal(SIGTERM); _ = server.finish() }
        do {
            let (id, size) = try upload(to: server)
            let bucket = S3BlobStore(try S3BlobStore.Configuration(url: backend.blobStoreURL, environment: backend.processEnvironment))
            #expect(try bucket.head(UploadRecord.blobKey(id))?.size == Int64(size))
            try bucket.delete(UploadRecord.blobKey(id))
        } catch {
            Issue.record("\(error); server log: \(server.stderrText.suffix(2000))")
        }
    }

    /// Uploads 1 GiB, checks the answer and the server's peak RSS; the upload's id and size.
    func upload(to server: ServerProcess) throws -> (id: String, size: Int) {
        let block = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        let blocks = 1024
        let size = block.count * blocks
        let boundary = "LargeUploadBoundary"
        let head = Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                .utf8)
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)

        let connection = try RawHTTP(port: server.port, timeout: 120)
        try connection.send(
            "POST /uploads HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=\(boundary)\r\n"
                + "Content-Length: \(head.count + size + tail.count)\r\n\r\n")
        try connection.send(head)
        var hash = SHA256()
        for _ in 0..<blocks {
            try connection.send(block)
            block.withUnsafeBytes { hash.update($0) }
        }
        try connection.send(tail)
        let response = try connection.readResponse()
        #expect(response.status == 201, "\(response.text)")
        let upload = try #require((try response.json()["uploads"] as? [[String: Any]])?.first)
        #expect(upload["size"] as? Int == size)
        let expected = hash.finish()
        #expect(upload["sha256"] as? String == expected)

        let peak = try Self.peakRSS(pid: server.pid)
        print("server peak RSS after a 1 GiB upload: \(peak / 1024) MiB")
        #expect(peak < 64 * 1024, "peak RSS \(peak) KiB")
        return (try #require(upload["id"] as? String), size)
    }

    /// VmHWM of a process, in KiB.
    static func peakRSS(pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }
}
