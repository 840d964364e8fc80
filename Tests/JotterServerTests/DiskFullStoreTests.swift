import Foundation
import Glibc
import Synchronization
import Testing
import JotterStore
import JotterTestSupport

/// The store on a full disk: writes fail with an out-of-space error, and a deletion that shares
/// a commit with them is not taken down with them.
@Suite("Store: disk full", .serialized, .enabled(if: SmallDisk.canMount, "cannot mount a tmpfs here (needs root): disk-full test skipped"))
struct DiskFullStoreTests {
    @Test("a deletion batched with writes the full disk refuses still commits")
    func deletionInARefusedBatch() throws {
        let disk = try SmallDisk(megabytes: 8)
        defer { disk.unmount() }
        let store = try SQLiteNoteStore(dataDirectory: disk.path + "/data")
        defer { store.close() }
        guard case .done(let victim, _) = try store.perform(.create(body: "delete me"), owner: .unclaimed) else {
            Issue.record("create failed"); return
        }
        disk.fill()
        // A completion that waits holds the writer thread, so the next two writes share a batch.
        let results = Mutex<[Int: Result<NoteWriteResult, StoreError>]>([:])
        let done = DispatchSemaphore(value: 0)
        store.submit(.touch(id: victim.id, ifVersion: nil), owner: .unclaimed) { _ in usleep(300_000) }
        usleep(50_000)
        store.submit(.create(body: String(repeating: "x", count: 2 << 20)), owner: .unclaimed) { result in
            results.withLock { $0[0] = result }
            done.signal()
        }
        store.submit(.delete(id: victim.id, ifVersion: nil), owner: .unclaimed) { result in
            results.withLock { $0[1] = result }
            done.signal()
        }
        done.wait()
        done.wait()
        let outcome = results.withLock { $0 }
        guard case .failure(let error) = outcome[0] else { Issue.record("the 2 MiB note fitted on a full disk"); return }
        #expect(error.isOutOfSpace, "\(error)")
        guard case .success(.done(let deleted, _)) = outcome[1] else { Issue.record("delete: \(String(describing: outcome[1]))"); return }
        #expect(deleted.id == victim.id)
        #expect(try store.note(id: victim.id, owner: .unclaimed) == nil)
    }
}
