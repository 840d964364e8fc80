import Foundation
import Synchronization
import Testing
import JotterAPI
import JotterClient
@testable import JotterCLI
@testable import JotterCLICore
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// `jotter backup` and `jotter restore`, checked with tools of their own: `sha256sum` for the
/// uploads and the `sqlite3` shell for `integrity_check`.
/// What the writers of a test share with it.
final class WriterState: Sendable {
    let stop = Atomic<Bool>(false)
    let writes = Atomic<Int>(0)
    /// When each write started and was acknowledged (monotonic nanoseconds).
    let spans = Mutex<[(UInt64, UInt64)]>([])

    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Writes under way at some moment between `start` and `end`.
    func overlapping(_ start: UInt64, _ end: UInt64) -> Int {
        spans.withLock { $0.filter { $0.0 < end && $0.1 > start }.count }
    }
}

@Suite("jotter backup and restore")
struct BackupCommandTests {
    let commands = ClientCommandTests()

    /// Runs a program and returns what it printed on standard output.
    static func tool(_ arguments: [String]) throws -> String {
        try runProgram(arguments, separateErrors: true).output
    }

    static func sha256sum(_ path: String) throws -> String {
        String(try tool(["sha256sum", path]).prefix(64))
    }

    /// Bytes unique to `index`, `size` long.
    static func bytes(_ index: Int, size: Int) -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 7) })
    }

    @Test(
        "a backup taken while clients write holds every note acknowledged before it and every upload with its SHA-256; the restore passes integrity_check",
        arguments: ["server", "data folder"])
    func backupWhileWriting(mode: String) async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let backupPath = folder.appendingPathComponent("backup").path
        let restoredPath = folder.appendingPathComponent("restored").path
        var acknowledged: [Note] = []
        try await withApp { app in
            let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!)
            for index in 0..<60 {
                let note = try await client.notes.create("before \(index)")
                if index % 6 == 0 {
                    let file = folder.appendingPathComponent("f\(index)")
                    try Self.bytes(index, size: 300_000 + index).write(to: file)
                    _ = try await client.uploads.upload(fileAt: file, noteID: note.id)
                }
            }
            for try await note in client.notes.all() { acknowledged.append(note) }

            // Writers that create notes, upload files and delete some of them, until told to stop.
            let state = WriterState()
            let writers = (0..<3).map { writer in
                Task {
                    var index = 0
                    while !state.stop.load(ordering: .relaxed) {
                        index += 1
                        let began = WriterState.now
                        let note = try await client.notes.create("during \(writer)-\(index)")
                        let file = folder.appendingPathComponent("w\(writer)-\(index)")
                        try Self.bytes(index, size: 50_000).write(to: file)
                        let upload = try await client.uploads.upload(fileAt: file, noteID: note.id)
                        if index % 2 == 0 { _ = try await client.uploads.delete(upload.id) }
                        state.spans.withLock { $0.append((began, WriterState.now)) }
                        state.writes.add(1, ordering: .relaxed)
                    }
                }
            }
            while state.writes.load(ordering: .relaxed) < 3 { try await Task.sleep(nanoseconds: 5_000_000) }
            let backupStarted = WriterState.now
            let arguments = mode == "server" ? ["backup", backupPath] : ["backup", backupPath, "--data", app.dataDirectory.path]
            let backup = await commands.jotter(arguments, app: app)
            let backupEnded = WriterState.now
            state.stop.store(true, ordering: .relaxed)
            for writer in writers { try await writer.value }
            try #require(backup.status == 0, "\(backup.err)")
            #expect(backup.out.hasPrefix("backed up "))
            #expect(state.overlapping(backupStarted, backupEnded) > 0, "no write overlapped the backup")
        }

        let manifest = try JSONDecoder().decode(Backup.self, from: Data(contentsOf: URL(fileURLWithPath: backupPath + "/backup.json")))
        #expect(manifest.uploads.count >= 10)
        #expect(manifest.notes >= 60)
        let restore = await commands.jotter(["restore", backupPath, "--data", restoredPath], app: nil)
        try #require(restore.status == 0, "\(restore.err)")
        #expect(try Self.tool(["sqlite3", restoredPath + "/jotter.sqlite", "PRAGMA integrity_check"]) == "ok\n")
        for upload in manifest.uploads {
            #expect(try Self.sha256sum(restoredPath + "/uploads/" + upload.id) == upload.sha256, "upload \(upload.id)")
        }

        let restored = try TestApp(dataDirectory: URL(fileURLWithPath: restoredPath))
        defer { restored.stop() }
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(restored.port)")!)
        for note in acknowledged {
            let found = try await client.notes.get(note.id)
            #expect(found == note)
            for attachment in note.attachments {
                let copy = folder.appendingPathComponent("copy-\(attachment.id)")
                try await client.uploads.download(attachment.id, to: copy)
                #expect(try Self.sha256sum(copy.path) == attachment.sha256)
            }
        }
        #expect(acknowledged.contains { !$0.attachments.isEmpty })
    }

    @Test("restore refuses a non-empty folder unless --force, and a folder a server is running on")
    func restoreRefusals() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let backupPath = folder.appendingPathComponent("b").path
        try await withApp { app in
            _ = await commands.jotter(["notes", "add", "kept"], app: app)
            let backup = await commands.jotter(["backup", backupPath], app: app)
            try #require(backup.status == 0, "\(backup.err)")
            let again = await commands.jotter(["backup", backupPath], app: app)
            #expect(again.status == 1)
            #expect(again.err == "error: the backup folder is not empty; give a new or empty folder\n")

            let running = await commands.jotter(["restore", backupPath, "--data", app.dataDirectory.path, "--force"], app: nil)
            #expect(running.status == 1)
            #expect(running.err.contains("in use by a running jotter server"), "\(running.err)")
        }
        let target = folder.appendingPathComponent("target")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: target.appendingPathComponent("notes.txt"))
        let refused = await commands.jotter(["restore", backupPath, "--data", target.path], app: nil)
        #expect(refused.status == 1)
        #expect(refused.err == "error: \(target.path) is not empty; pass --force to replace its database and uploads\n")
        let forced = await commands.jotter(["restore", backupPath, "--data", target.path, "--force", "--json"], app: nil)
        try #require(forced.status == 0, "\(forced.err)")
        #expect(try JSONDecoder().decode(BackupEnvelope.self, from: Data(forced.out.utf8)).backup.notes == 1)

        let missing = await commands.jotter(["restore", backupPath], app: nil)
        #expect(missing.status == 2)
        #expect(missing.err.hasPrefix("error: missing --data DIR"))
        let notBackup = await commands.jotter(["restore", folder.path, "--data", folder.appendingPathComponent("x").path], app: nil)
        #expect(notBackup.status == 1)
        #expect(notBackup.err.hasPrefix("error: there is no readable jotter.sqlite in"))
    }

    @Test("restore refuses a backup whose upload no longer has its SHA-256")
    func damaged() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let backupPath = folder.appendingPathComponent("b").path
        try await withApp { app in
            let file = folder.appendingPathComponent("f")
            try Data("original".utf8).write(to: file)
            _ = await commands.jotter(["upload", file.path], app: app)
            #expect(await commands.jotter(["backup", backupPath], app: app).status == 0)
        }
        let uploads = try FileManager.default.contentsOfDirectory(atPath: backupPath + "/uploads")
        try Data("changed!".utf8).write(to: URL(fileURLWithPath: backupPath + "/uploads/" + uploads[0]))
        let restore = await commands.jotter(["restore", backupPath, "--data", folder.appendingPathComponent("t").path], app: nil)
        #expect(restore.status == 1)
        #expect(restore.err.contains("does not have the SHA-256 its upload was stored with"), "\(restore.err)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("t/jotter.sqlite").path))
    }

    @Test("backup, restore, export and import have --help and are listed by jotter --help", arguments: ["backup", "restore", "export", "import"])
    func help(command: String) async throws {
        let help = await commands.jotter([command, "--help"], app: nil)
        #expect(help.status == 0)
        #expect(help.out.hasPrefix("USAGE: jotter \(command) "))
        let overview = await commands.jotter(["--help"], app: nil)
        #expect(overview.out.contains("\n  \(command) "))
        let usage = await commands.jotter([command], app: nil)
        #expect(usage.status == 2)
        #expect(usage.err.hasPrefix("error: missing "))
        #expect(usage.err.hasSuffix("\nSee 'jotter \(command) --help'.\n"), "\(usage.err)")
    }
}

/// `jotter restore --database URL`: a new history for a PostgreSQL database pg_restore put
/// back (`PostgresStore.startNewHistory`), refused while an instance runs on it.
@Suite("jotter restore --database", .serialized, .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
struct PostgresRestoreCommandTests {
    @Test func startsANewHistoryOnceTheInstancesAreStopped() throws {
        let backend = try SharedBackend()
        let restore = ["restore", "--database", backend.databaseURL]
        let empty = try AccountCommandTests.jotter(restore)
        #expect(empty.status == 3 && empty.err.contains("holds no jotter data"), "\(empty)")
        #expect(try AccountCommandTests.jotter(["restore", "x", "--database", backend.databaseURL]).err.contains("takes no SRC"))
        #expect(try AccountCommandTests.jotter(["restore"]).err.hasPrefix("error: missing SRC (or --database URL)\n"))
        #expect(try AccountCommandTests.jotter(restore + ["--force"]).status == 2)

        let server = try ServerProcess(backend.arguments + ["--quiet"], environment: backend.processEnvironment)
        let made = try RawHTTP(port: server.port).request(
            "POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("body=one".utf8), close: true)
        #expect(made.status == 201, "\(made.text)")
        let refused = try AccountCommandTests.jotter(restore)
        #expect(refused.status == 1 && refused.err.contains("running on the database; stop them first"), "\(refused)")
        server.signal(SIGTERM)
        _ = server.finish()

        var started = try AccountCommandTests.jotter(restore)
        for _ in 0..<50 where started.status != 0 {  // the stopped instance's session may end a moment later
            Thread.sleep(forTimeInterval: 0.1)
            started = try AccountCommandTests.jotter(restore)
        }
        #expect(started.status == 0 && started.out.contains("started a new history"), "\(started)")
        let restarted = try ServerProcess(backend.arguments + ["--quiet"], environment: backend.processEnvironment)
        defer { restarted.signal(SIGTERM); _ = restarted.finish() }
        let after = try RawHTTP(port: restarted.port).request(
            "POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("body=two".utf8), close: true)
        #expect(after.status == 201 && after.text.contains("1000002"), "the first note's id, 1, and the gap: \(after.text)")
    }
}
