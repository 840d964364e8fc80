import Foundation
import Glibc
import Testing
import JotterAPI
import JotterHTTP
import JotterTestSupport
import JotterSystem

/// A 200 MiB multipart upload by a client process of its own (`jotter upload`, the SDK in the
/// built binary) to the real server: the file is streamed from disk, so the client's memory does
/// not grow with it. A process of its own, because this test process runs every other suite at
/// the same time (servers and uploads included) and its RSS says nothing about one client.
@Suite("JotterClient: large upload", .tags(.timing), .serialized)
struct LargeUploadClientTests {
    @Test("200 MiB: stored intact; the client's peak RSS stays under 64 MiB")
    func twoHundredMebibytes() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (file, size, digest) = try Self.write(mebibytes: 200, into: folder)
        let server = try ServerProcess(["--quiet"])
        defer { server.signal(SIGTERM); server.finish() }

        let output = folder.appendingPathComponent("out.json")
        let started = ContinuousClock.now
        let (status, peak) = try Self.run(
            [
                ServerProcess.binary.path, "upload", file.path, "--json",
                "--server", "http://127.0.0.1:\(server.port)",
            ], output: output)
        let elapsed = ContinuousClock.now - started
        #expect(status == 0, "\((try? String(contentsOf: output, encoding: .utf8)) ?? "")")
        let upload = try #require(try JSONDecoder().decode(UploadList.self, from: Data(contentsOf: output)).uploads.first)
        #expect(upload.size == size)
        #expect(upload.sha256 == digest)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("200 MiB upload by jotter upload: \(Int(Double(size) / seconds / 1_000_000)) MB/s, client peak RSS \(peak >> 10) MiB")
        #expect(peak < 64 << 10, "client peak RSS \(peak >> 10) MiB")
    }

    /// Runs `argv` with standard output and error into `output`; its exit status and peak RSS
    /// in KiB: its VmHWM, read every 10 ms until it exits. (Not `wait4`'s `ru_maxrss`: after
    /// posix_spawn's vfork it also counts this test process's own high-water mark.)
    static func run(_ argv: [String], output: URL) throws -> (status: Int32, peakKiB: Int) {
        let pid = try spawnProgram(argv, output: .file(output))
        var status: Int32 = 0
        var peak = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = text.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
            peak = max(peak, Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0)
            usleep(10_000)
        }
        return ((status >> 8) & 0xFF, peak)
    }

    /// A file of `mebibytes` MiB of varied bytes; its URL, size and SHA-256.
    static func write(mebibytes: Int, into folder: URL) throws -> (URL, Int64, String) {
        let url = folder.appendingPathComponent("large.bin")
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
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
