import Foundation
import Glibc
import Synchronization
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// The crash test with uploads (issue 31 item 2): no upload row without its bytes, ever, and
/// every acknowledged upload's bytes read back, across cycles of `kill -9` under a load of notes
/// and multipart uploads — on SQLite (the data folder) and on PostgreSQL + S3.
extension NotesDurabilityTests {
    /// Where the crash test's server keeps its rows and bytes.
    enum UploadCrashBackend: Sendable, CustomStringConvertible {
        case sqlite
        case postgres(SharedBackend)

        var description: String {
            switch self {
            case .sqlite: "SQLite"
            case .postgres: "PostgreSQL + S3"
            }
        }
    }

    /// What each cycle checks:
    /// - after the kill (SQLite, before the next start, with the sqlite3 tool read-only): every
    ///   upload row's file is in `uploads/` with the row's size — a row committed without its
    ///   bytes, or bytes deleted under a row;
    /// - after the restart, and again once the first sweep could have run: every row's content
    ///   is served (`HEAD /uploads/{id}/content`, the row's size) — a start-up or sweep that
    ///   deleted the bytes of a row (issue 31: the start-up removal unlinked the file of a row
    ///   that committed outside its view);
    /// - every acknowledged upload is listed and its bytes read back equal to what was sent.
    @Test("kill -9 under notes and uploads on SQLite: no upload row without its bytes, every acknowledged upload read back")
    func crashWithUploadsSQLite() throws {
        try crashWithUploads(.sqlite)
    }

    @Test(
        "kill -9 under notes and uploads on PostgreSQL + S3: no upload row without its bytes, every acknowledged upload read back",
        .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
    func crashWithUploadsPostgres() throws {
        try crashWithUploads(.postgres(try SharedBackend()))
    }

    func crashWithUploads(_ backend: UploadCrashBackend) throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-crash-uploads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let sqlite = Self.sqlite3Tool()
        if case .sqlite = backend { try #require(sqlite != nil, "the sqlite3 command-line tool is needed (apt-get install sqlite3)") }
        var arguments = ["--quiet"]
        var environment: [String: String]?
        if case .postgres(let shared) = backend {
            arguments += shared.arguments
            environment = shared.processEnvironment
        }

        let cycles = 3, threadCount = 8
        let writers = (0..<threadCount).map { UploadCrashWriter(slot: $0) }
        for cycle in 0..<cycles {
            let server = try ServerProcess(arguments, dataDirectory: data, environment: environment)
            try checkRows(backend, data: data, port: server.port, writers: writers, when: "cycle \(cycle), after the start")

            let deadline = Date().addingTimeInterval(8)  // only if the kill never comes
            let group = DispatchGroup()
            for writer in writers {
                group.enter()
                let thread = Thread {
                    writer.run(cycle: cycle, port: server.port, until: deadline)
                    group.leave()
                }
                thread.start()
            }
            Self.waitForCreates(atLeast: threadCount, port: server.port, until: Date().addingTimeInterval(10))
            let killAfter = Int.random(in: 300...1500)
            usleep(useconds_t(killAfter * 1000))
            let killed = server.signal(SIGKILL)
            #expect(group.wait(timeout: .now() + 30) == .success, "cycle \(cycle): writer threads did not stop after the kill")
            let (status, log) = server.finish()
            #expect(killed && status == SIGKILL, "cycle \(cycle): the server was not killed by kill -9; it wrote: \(log)")
            for writer in writers {
                for problem in writer.problems { Issue.record("cycle \(cycle): \(problem)") }
            }
            let uploads = writers.reduce(0) { $0 + $1.uploadsThisCycle }
            #expect(uploads > 0, "cycle \(cycle): no upload acknowledged before the kill")

            if case .sqlite = backend, let sqlite {
                // The folder as the crash left it, before anything recovers or sweeps it.
                let rows = try Self.uploadRows(sqlite, data)
                var missing: [String] = []
                for (id, size) in rows {
                    var status = stat()
                    if stat(data.appendingPathComponent("uploads/\(id)").path, &status) != 0 || Int(status.st_size) != size {
                        missing.append(id)
                    }
                }
                #expect(missing.isEmpty, "cycle \(cycle): after kill -9, upload rows without their file: \(missing.prefix(10))")
            }
            let inFlight = writers.count(where: { $0.pendingUpload != nil })
            print(
                "NotesDurabilityTests crash with uploads (\(backend)) cycle \(cycle): killed after \(killAfter) ms;"
                    + " \(uploads) uploads and \(writers.reduce(0) { $0 + $1.notesThisCycle }) notes acknowledged, \(inFlight) uploads in flight")
        }

        // The last start: every row has its bytes, every acknowledged upload reads back, and
        // still so after the first sweep had its chance (a minute after opening: with the
        // files young, it must spare them all).
        let server = try ServerProcess(arguments, dataDirectory: data, environment: environment)
        try checkRows(backend, data: data, port: server.port, writers: writers, when: "after the last start")
        let acknowledged = writers.flatMap(\.uploads)
        let problems = try Self.readBack(acknowledged, port: server.port)
        #expect(problems.isEmpty, "acknowledged uploads not read back as sent: \(problems.prefix(10))")
        server.signal(SIGTERM)
        let (status, log) = server.finish()
        #expect(status == 0, "stopping with SIGTERM: \(log)")
        print(
            "NotesDurabilityTests crash with uploads (\(backend)): \(acknowledged.count) acknowledged uploads read back,"
                + " \(problems.count) differ")
    }

    /// Every upload row's content is served, with the row's size.
    private func checkRows(_ backend: UploadCrashBackend, data: URL, port: Int, writers: [UploadCrashWriter], when: String) throws {
        let rows: [(id: String, size: Int)]
        switch backend {
        case .sqlite: rows = try Self.uploadRows(Self.sqlite3Tool()!, data)
        case .postgres(let shared):
            let run = try runProgram(["psql", "-qtAX", shared.databaseURL, "-c", "SELECT id || ' ' || size FROM uploads"])
            guard run.status == 0 else { throw RawHTTP.Failure(message: "psql: \(run.output)") }
            rows = run.output.split(separator: "\n").compactMap { line in
                let parts = line.split(separator: " ")
                guard parts.count == 2, let size = Int(parts[1]) else { return nil }
                return (String(parts[0]), size)
            }
        }
        let client = try RawHTTP(port: port, timeout: 30)
        var missing: [String] = []
        for row in rows {
            let response = try client.request("HEAD", "/uploads/\(row.id)/content")
            if response.status != 200 || response.header("Content-Length") != String(row.size) {
                missing.append("\(row.id): \(response.status) Content-Length \(response.header("Content-Length") ?? "none"), row size \(row.size)")
            }
        }
        #expect(missing.isEmpty, "\(when): upload rows whose bytes are not served: \(missing.prefix(10))")
        let ids = Set(rows.map(\.id))
        let lost = writers.flatMap(\.uploads).filter { !ids.contains($0.id) }
        #expect(lost.isEmpty, "\(when): acknowledged uploads without a row: \(lost.prefix(10).map(\.id))")
    }

    /// `id` and `size` of every row of `uploads` in the file (sqlite3, read-only).
    static func uploadRows(_ tool: URL, _ data: URL) throws -> [(id: String, size: Int)] {
        let text = try sqlite(tool, data, "SELECT id || ' ' || size FROM uploads")
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let size = Int(parts[1]) else { return nil }
            return (String(parts[0]), size)
        }
    }

    /// Downloads every upload's content with one curl (one connection), compares the bytes.
    static func readBack(_ uploads: [UploadCrashWriter.Sent], port: Int) throws -> [String] {
        guard !uploads.isEmpty else { return [] }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-readback-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var problems: [String] = []
        for start in stride(from: 0, to: uploads.count, by: 200) {
            let batch = uploads[start..<min(start + 200, uploads.count)]
            let run = try runProgram(
                ["curl", "-sS", "--max-time", "120"]
                    + batch.flatMap { ["-o", folder.appendingPathComponent($0.id).path, "http://127.0.0.1:\(port)/uploads/\($0.id)/content"] })
            guard run.status == 0 else { throw RawHTTP.Failure(message: "curl: \(run.output)") }
            for sent in batch {
                let got = (try? Data(contentsOf: folder.appendingPathComponent(sent.id))).map { [UInt8]($0) }
                if got != UploadCrashWriter.bytes(seed: sent.seed, count: sent.size) {
                    problems.append("\(sent.id) (\(sent.size) bytes sent): read back \(got?.count ?? -1) bytes, different")
                }
            }
        }
        return problems
    }
}

/// One writer of the crash test with uploads: notes, and one request in five a multipart upload
/// of 1–300 KB whose bytes follow from a seed (so they can be compared later without being
/// kept). Used by its thread during a cycle, by the test between cycles (the `DispatchGroup`
/// wait orders the two).
final class UploadCrashWriter: @unchecked Sendable {
    struct Sent {
        var id: String
        var seed: UInt64
        var size: Int
    }

    let slot: Int
    /// Every acknowledged upload, all cycles.
    var uploads: [Sent] = []
    /// The upload sent and not answered when the server died.
    var pendingUpload: UInt64?
    var uploadsThisCycle = 0
    var notesThisCycle = 0
    var problems: [String] = []

    init(slot: Int) { self.slot = slot }

    /// `count` bytes from `seed` (xorshift64*).
    static func bytes(seed: UInt64, count: Int) -> [UInt8] {
        var state = seed | 1
        var out = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            var word = state &* 2_685_821_657_736_338_717
            for _ in 0..<8 where index < count {
                out[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return out
    }

    func run(cycle: Int, port: Int, until deadline: Date) {
        uploadsThisCycle = 0
        notesThisCycle = 0
        problems = []
        pendingUpload = nil
        let client: RawHTTP
        do { client = try RawHTTP(port: port, timeout: 30) } catch { problems.append("connect: \(error)"); return }
        var sequence = 0
        while Date() < deadline {
            sequence += 1
            if Int.random(in: 0..<5) == 0 {
                let seed = UInt64.random(in: 1...UInt64.max), size = Int.random(in: 1_000...300_000)
                var form = MultipartBuilder()
                form.file("file", filename: "c\(cycle)-t\(slot)-n\(sequence).bin", body: Self.bytes(seed: seed, count: size))
                pendingUpload = seed
                let response: WireResponse
                do {
                    response = try client.request("POST", "/uploads", headers: [("Content-Type", form.contentType)], body: form.finished())
                } catch { return }  // the server is gone: not acknowledged
                guard response.status == 201, let list = try? response.json()["uploads"] as? [[String: Any]],
                    let id = list.first?["id"] as? String, (list.first?["size"] as? Int) == size
                else {
                    problems.append("POST /uploads (\(size) bytes): \(response.status) \(response.text.prefix(300))")
                    return
                }
                pendingUpload = nil
                uploads.append(Sent(id: id, seed: seed, size: size))
                uploadsThisCycle += 1
            } else {
                let response: WireResponse
                do {
                    response = try client.request(
                        "POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                        body: Array("body=c\(cycle)-t\(slot)-n\(sequence)".utf8))
                } catch { return }
                guard response.status == 201 else {
                    problems.append("POST /notes: \(response.status) \(response.text.prefix(300))")
                    return
                }
                notesThisCycle += 1
            }
        }
    }
}
