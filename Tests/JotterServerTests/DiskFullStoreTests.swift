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
        let store = try SQLiteStore(dataDirectory: disk.path + "/data")
        defer { store.close() }
        let victim = try store.createNote(body: "delete me", owner: .unclaimed).note
        disk.fill()
        // A completion that waits holds the writer thread, so the next two writes share a batch.
        let created = Mutex<Result<NoteChange, StoreError>?>(nil)
        let deletion = Mutex<Result<NoteWriteOutcome, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        store.updateNote(id: victim.id, body: nil, ifVersion: nil, owner: .unclaimed) { _ in usleep(300_000) }
        usleep(50_000)
        store.createNote(body: String(repeating: "x", count: 2 << 20), owner: .unclaimed) { result in
            created.withLock { $0 = result }
            done.signal()
        }
        store.deleteNote(id: victim.id, ifVersion: nil, owner: .unclaimed) { result in
            deletion.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        done.wait()
        guard case .failure(let error) = created.withLock({ $0 }) else { Issue.record("the 2 MiB note fitted on a full disk"); return }
        #expect(error.isOutOfSpace, "\(error)")
        let deleted = deletion.withLock { $0 }
        guard case .success(.done(let change)) = deleted else { Issue.record("delete: \(String(describing: deleted))"); return }
        #expect(change.note.id == victim.id)
        #expect(try store.note(id: victim.id, owner: .unclaimed) == nil)
    }
}
