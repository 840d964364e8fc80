import Foundation
import Glibc
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// A full disk: the data folder on a small tmpfs. Refused writes are `507`, nothing
/// acknowledged is lost, deletions still work (so space can be freed through the API),
/// `/healthz` says so, and writes succeed again once space is freed. Needs permission to mount
/// a tmpfs (root, as in CI); elsewhere it is skipped with a message.
@Suite("Disk full", .serialized, .enabled(if: SmallDisk.canMount, "cannot mount a tmpfs here (needs root): disk-full test skipped"))
struct DiskFullTests {
    @Test("refused writes are 507, deletes still work, /healthz reports it, writes recover")
    func diskFull() throws {
        let disk = try SmallDisk(megabytes: 24)
        defer { disk.unmount() }
        let app = try TestApp(dataDirectory: URL(fileURLWithPath: disk.path + "/data")) { $0.minimumFreeSpace = 2 << 20 }
        defer { app.stop() }
        #expect(try app.request("GET", "/healthz").status == 200)

        var stored: [String] = []
        var refusal: WireResponse?
        for index in 0..<40 {
            var parts = MultipartBuilder()
            parts.file("file", filename: "f\(index).bin", body: [UInt8](repeating: UInt8(index), count: 1 << 20))
            let response = try RawHTTP(port: app.port, timeout: 20)
                .request("POST", "/uploads", headers: [("Content-Type", parts.contentType)], body: parts.finished(), close: true)
            if response.status == 201 {
                stored += (try response.json()["uploads"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            } else {
                refusal = response
                break
            }
        }
        let refused = try #require(refusal, "40 MiB fitted on a 24 MiB disk")
        #expect(refused.status == 507, "\(refused.text)")
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(stored.count >= 10)
        // A note is refused the same way, once the disk is full.
        let note = try app.request(
            "POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: "body=" + String(repeating: "n", count: 900_000))
        #expect([201, 507].contains(note.status), "\(note.status) \(note.text.prefix(200))")
        #expect(try app.request("GET", "/healthz").status == 503)

        // Not a byte left: even SQLite's journal cannot grow.
        disk.fill()
        // Deleting frees space, through the API.
        for id in stored.prefix(6) {
            let deleted = try app.request("DELETE", "/uploads/\(id)")
            #expect((200...204).contains(deleted.status), "\(deleted.status) \(deleted.text.prefix(200))")
        }
        #expect(try app.request("GET", "/healthz").status == 200)
        let after = try app.request("POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "body=again")
        #expect(after.status == 201, "\(after.text.prefix(200))")
        // Every acknowledged upload not deleted is still there, whole.
        for id in stored.dropFirst(6) {
            let content = try app.request("GET", "/uploads/\(id)/content")
            #expect(content.status == 200 && content.body.count == 1 << 20)
        }
    }
}
