import Foundation
import Testing
import JotterClient

/// The SDK side of bench scenario `sync-engine` (bench/scenarios/sync_engine.py): runs only when
/// the bench sets `JOTTER_SYNC_BENCH_SERVER` (a server it started and seeded with notes) and
/// `JOTTER_SYNC_BENCH_OUT` (where the figures go, as JSON). Each phase starts with a
/// `GET /hello?name=phase-<name>` so the bench can split the server's access log into phases
/// (requests and bytes per phase); times are measured here, on `ContinuousClock`.
///
/// A test bundle in a bench mode rather than a product: the engine and the SDK are built as the
/// tests build them, and nothing ships that only the bench uses.
@Suite(
    "Sync engine figures for the bench (only with JOTTER_SYNC_BENCH_SERVER)",
    .enabled(if: ProcessInfo.processInfo.environment["JOTTER_SYNC_BENCH_SERVER"] != nil))
struct SyncBenchmark {
    static let environment = ProcessInfo.processInfo.environment

    /// This process's resident set (`VmRSS`), KiB.
    static func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    @Test("first sync, paging, incremental sync, offline edits pushed, replica memory")
    func figures() async throws {
        let server = try #require(Self.environment["JOTTER_SYNC_BENCH_SERVER"].flatMap(URL.init(string:)))
        let out = try #require(Self.environment["JOTTER_SYNC_BENCH_OUT"])
        let remoteChanges = Int(Self.environment["JOTTER_SYNC_BENCH_REMOTE"] ?? "") ?? 100
        let offlineEdits = Int(Self.environment["JOTTER_SYNC_BENCH_OFFLINE"] ?? "") ?? 1000
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-sync-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = JotterClient(baseURL: server)
        let clock = ContinuousClock()
        var figures: [String: Double] = [:]

        func phase(_ name: String) async throws { _ = try await client.hello(name: "phase-\(name)") }

        // Paging GET /notes for the same notes, as an app without the engine would list them.
        try await phase("paging")
        var listed = 0
        let paging = try await clock.measure {
            for try await _ in client.notes.all(pageSize: 1000) { listed += 1 }
        }
        figures["paging_seconds"] = Self.seconds(paging)
        figures["notes"] = Double(listed)

        // The first sync of an empty replica.
        let rssBefore = Self.residentKiB()
        try await phase("first")
        let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("replica.sqlite"))
        let first = try await clock.measure { try await engine.sync() }
        figures["first_seconds"] = Self.seconds(first)
        let replica = try await engine.notes()
        figures["replica_notes"] = Double(replica.count)
        figures["rss_growth_kib"] = Double(Self.residentKiB() - rssBefore)
        // The replica's bytes on disk: the database and its write-ahead log (not yet checkpointed).
        let file = folder.appendingPathComponent("replica.sqlite").path
        let sizes = [file, file + "-wal"].map { (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0 }
        figures["replica_file_bytes"] = Double(sizes.reduce(0, +))

        // Changes made elsewhere (another client), then an incremental sync.
        try await phase("remote")
        for note in replica.prefix(remoteChanges) { _ = try await client.notes.update(note.id, body: note.body + " (changed elsewhere)") }
        try await phase("incremental")
        let incremental = try await clock.measure { try await engine.sync() }
        figures["incremental_seconds"] = Self.seconds(incremental)

        // Edits made offline (nothing sent until the sync), then pushed.
        for note in try await engine.notes().suffix(offlineEdits) { _ = try await engine.edit(note.id, body: note.body + " (edited offline)") }
        figures["pending"] = Double(try await engine.pendingEdits().count)
        try await phase("push")
        let push = try await clock.measure { try await engine.sync() }
        figures["push_seconds"] = Self.seconds(push)
        figures["pending_after"] = Double(try await engine.pendingEdits().count)
        try await phase("end")

        let json = try JSONSerialization.data(withJSONObject: figures, options: [.sortedKeys])
        try json.write(to: URL(fileURLWithPath: out))
    }
}
