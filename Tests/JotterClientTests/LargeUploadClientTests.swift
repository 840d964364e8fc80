import Foundation
import Glibc
import Synchronization
import Testing
import JotterClient
import JotterHTTP
import JotterTestSupport

/// A 200 MiB multipart upload from this process to the real binary: the client streams the
/// file from disk, so its memory does not grow with the file.
@Suite("JotterClient: large upload", .serialized)
struct LargeUploadClientTests {
    @Test("200 MiB: stored intact; this process's RSS grows by less than 64 MiB")
    func twoHundredMebibytes() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (file, size, digest) = try Self.write(mebibytes: 200, into: folder)
        let server = try ServerProcess(["--quiet"])
        defer { server.signal(SIGTERM); server.finish() }
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)

        let sampler = RSSSampler()
        let started = ContinuousClock.now
        let upload = try await client.uploads.upload(fileAt: file)
        let elapsed = ContinuousClock.now - started
        let growth = sampler.stop()
        #expect(upload.size == size)
        #expect(upload.sha256 == digest)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("200 MiB upload through the SDK: \(Int(Double(size) / seconds / 1_000_000)) MB/s, RSS growth \(growth >> 20) MiB")
        #expect(growth < 64 << 20, "RSS grew by \(growth >> 20) MiB")
    }

    /// A file of `mebibytes` MiB of varied bytes; its URL, size and SHA-256.
    static func write(mebibytes: Int, into folder: URL) throws -> (URL, Int64, String) {
        let url = folder.appendingPathComponent("large.bin")
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var hash = SHA256()
        var block = pattern(1 << 20)
        for index in 0..<mebibytes {
            block[0] = UInt8(truncatingIfNeeded: index)
            block.withUnsafeBytes { hash.update($0) }
            try handle.write(contentsOf: block)
        }
        return (url, Int64(mebibytes) << 20, hash.finish())
    }
}

/// Samples this process's resident set every 5 ms on its own thread; `stop()` returns the
/// largest growth over the first sample, in bytes.
final class RSSSampler: Sendable {
    private let state = Mutex((baseline: RSSSampler.current(), peak: RSSSampler.current(), running: true))
    private let done = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            while state.withLock({ $0.running }) {
                let now = Self.current()
                state.withLock { $0.peak = max($0.peak, now) }
                usleep(5_000)
            }
            done.signal()
        }
        thread.start()
    }

    func stop() -> Int {
        state.withLock { $0.running = false }
        done.wait()
        return state.withLock { $0.peak - $0.baseline }
    }

    /// VmRSS in bytes.
    static func current() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
}
