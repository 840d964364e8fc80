import Foundation
import Testing
import JotterServerTestSupport

/// What a clean stop leaves in the data folder.
@Suite("Clean stop")
struct CleanStopTests {
    @Test("after a clean stop jotter.sqlite alone holds every note: the WAL is checkpointed and truncated")
    func checkpointOnStop() throws {
        let app = try TestApp()
        defer { try? FileManager.default.removeItem(at: app.dataDirectory) }
        app.removesData = false
        for body in ["one", "two", "three"] {
            #expect(try app.request("POST", "/notes", headers: [("Content-Type", "application/json")], body: #"{"body":"\#(body)"}"#).status == 201)
        }
        app.stop()
        let wal = app.dataDirectory.appendingPathComponent("jotter.sqlite-wal").path
        let walSize = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        #expect(walSize == 0, "jotter.sqlite-wal still holds \(walSize) bytes")

        // A copy of the database file alone, as a backup by `cp` would take it.
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.copyItem(
            at: app.dataDirectory.appendingPathComponent("jotter.sqlite"),
            to: copy.appendingPathComponent("jotter.sqlite"))
        let restored = try TestApp(dataDirectory: copy)
        defer { restored.stop() }
        let notes = try #require(try restored.request("GET", "/notes").json()["notes"] as? [[String: Any]])
        #expect(Set(notes.compactMap { $0["body"] as? String }) == ["one", "two", "three"])
    }
}
