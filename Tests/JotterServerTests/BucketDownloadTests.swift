import Foundation
import Glibc
import JotterBlobs
import JotterStore
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// A download from the bucket answers only once the bucket has: the object's absence is a
/// `404` problem, an unreachable bucket a `503` with `Retry-After` (never a `200` and a cut
/// connection).
@Suite("Downloads from the bucket", .serialized, .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
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
        let created = try RawHTTP(port: app.port).request(
            "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
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

    /// `Threads` and `VmRSS` (KiB) of a process.
    static func threadsAndRSS(_ pid: Int32) throws -> (threads: Int, rss: Int) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func field(_ name: String) throws -> Int {
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(name + ":") })
            return try #require(Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]))
        }
        return (try field("Threads"), try field("VmRSS"))
    }

    /// A server process on the shared backends, and one object of `size` bytes uploaded to it.
    func serverWithObject(size: Int) throws -> (ServerProcess, String, [UInt8]) {
        let server = try ServerProcess(backend.arguments + ["--quiet"], environment: backend.processEnvironment)
        // Pseudo-random 64-bit words (a debug build fills 48 MiB byte by byte too slowly).
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { raw in
            var state: UInt64 = 0x1234_5678
            let words = raw.bindMemory(to: UInt64.self)
            for index in 0..<words.count {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                words[index] = state
            }
        }
        var parts = MultipartBuilder()
        parts.file("file", filename: "data.bin", body: bytes)
        let created = try RawHTTP(port: server.port, timeout: 30).request(
            "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
            body: parts.finished(), close: true)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require((try created.json()["uploads"] as? [[String: Any]])?.first?["id"] as? String)
        return (server, id, bytes)
    }

    /// Sends a GET of the object's content and reads up to the end of the head; the rest of
    /// what arrived with it is returned.
    static func openDownload(_ connection: RawHTTP, _ id: String) throws -> (status: Int, early: [UInt8]) {
        try connection.send("GET /uploads/\(id)/content HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(connection.fd, &chunk, chunk.count, 0)
            guard count > 0 else { throw RawHTTP.Failure(message: "no head: \(String(cString: strerror(errno)))") }
            received += chunk[..<count]
            if let end = received.firstRange(of: [13, 10, 13, 10]) {
                let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
                let status = Int(head.split(separator: " ")[1]) ?? 0
                return (status, Array(received[end.upperBound...]))
            }
        }
    }

    @Test(
        "100 slow readers of one object stream at once: no thread per download, memory bounded, every byte right; readers that leave free their downloads"
    )
    func hundredSlowReaders() throws {
        // Larger than what the kernel's socket buffers take (about 4 MiB on loopback): the
        // downloads are still running while they are counted.
        let size = 10 << 20
        let (server, id, bytes) = try serverWithObject(size: size)
        defer { server.signal(SIGKILL); server.finish() }
        // One download first: the download thread exists and libcurl is warm.
        let warm = try RawHTTP(port: server.port, timeout: 30).request("GET", "/uploads/\(id)/content", close: true)
        #expect(warm.status == 200 && warm.body == bytes)
        let before = try Self.threadsAndRSS(server.pid)

        let readers = 100
        var connections: [RawHTTP] = []
        var offsets: [Int] = []
        var chunk = [UInt8](repeating: 0, count: 32 << 10)
        let started = Date()
        /// Reads once from reader `index` and checks the bytes against the object's.
        func readSome(_ index: Int) throws {
            let count = recv(connections[index].fd, &chunk, min(chunk.count, size - offsets[index]), 0)
            let reason = count < 0 ? String(cString: strerror(errno)) : "end of stream"
            try #require(count > 0, "reader \(index) was cut after \(offsets[index]) bytes, \(Date().timeIntervalSince(started)) s in: \(reason)")
            let same = chunk.withUnsafeBytes { got in
                bytes.withUnsafeBytes { memcmp(got.baseAddress!, $0.baseAddress! + offsets[index], count) == 0 }
            }
            try #require(same, "reader \(index) at \(offsets[index])")
            offsets[index] += count
        }
        for index in 0..<readers {
            let connection = try RawHTTP(port: server.port, timeout: 30)
            var small: Int32 = 16 << 10
            setsockopt(connection.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            let (status, early) = try Self.openDownload(connection, id)
            try #require(status == 200, "reader \(index)")
            #expect(early.elementsEqual(bytes[..<early.count]))
            connections.append(connection)
            offsets.append(early.count)
        }
        // Each reads its first 512 KiB, a little at a time, in turn: all 100 are mid-object.
        while offsets.contains(where: { $0 < 512 << 10 }) {
            for index in 0..<readers where offsets[index] < 512 << 10 { try readSome(index) }
        }
        Thread.sleep(forTimeInterval: 1)
        let during = try Self.threadsAndRSS(server.pid)
        print("100 bucket downloads at once: threads \(before.threads) → \(during.threads), RSS \(before.rss / 1024) → \(during.rss / 1024) MiB")
        #expect(during.threads <= before.threads + 1, "threads \(before.threads) → \(during.threads)")
        #expect(during.rss - before.rss < 32 << 10, "RSS grew by \(during.rss - before.rss) KiB")
        // Four read to the end; the other 96 leave.
        connections.removeLast(readers - 4)
        offsets.removeLast(readers - 4)
        while offsets.contains(where: { $0 < size }) {
            for index in 0..<4 where offsets[index] < size { try readSome(index) }
        }
        // Their downloads are gone: as many again can start.
        for _ in 0..<readers {
            let connection = try RawHTTP(port: server.port, timeout: 30)
            #expect(try Self.openDownload(connection, id).status == 200)
        }
    }

    @Test("a reader that stops reading pauses its download: the server's memory stays flat, and the bytes resume intact")
    func stalledReader() throws {
        let size = 48 << 20
        let (server, id, bytes) = try serverWithObject(size: size)
        defer { server.signal(SIGKILL); server.finish() }
        let connection = try RawHTTP(port: server.port, timeout: 30)
        var small: Int32 = 16 << 10
        setsockopt(connection.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let (status, early) = try Self.openDownload(connection, id)
        #expect(status == 200)
        Thread.sleep(forTimeInterval: 1)
        let first = try Self.threadsAndRSS(server.pid)
        // Longer than the bucket's stall timeout (10 s): a paused transfer must not count as stalled.
        Thread.sleep(forTimeInterval: 12)
        let later = try Self.threadsAndRSS(server.pid)
        print("a stalled bucket download: RSS \(first.rss / 1024) → \(later.rss / 1024) MiB over 12 s")
        #expect(later.rss - first.rss < 4 << 10, "RSS grew by \(later.rss - first.rss) KiB while the reader did not read")
        var received = early
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while received.count < size {
            let count = recv(connection.fd, &chunk, min(chunk.count, size - received.count), 0)
            try #require(count > 0, "cut after \(received.count) bytes")
            received += chunk[..<count]
        }
        #expect(received == bytes)
    }
}
