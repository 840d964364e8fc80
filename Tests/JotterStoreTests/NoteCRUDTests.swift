import Foundation
import Synchronization
import Testing
@testable import JotterStore

@Suite("Notes: create, read, update, delete, preconditions")
struct NoteCRUDTests {
    @Test(arguments: Backend.all) func createThenGet(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let before = Int64(Date().timeIntervalSince1970)
        let note = try fixture.create("Buy milk")
        let after = Int64(Date().timeIntervalSince1970)

        #expect(note.id >= 1)
        #expect(note.body == "Buy milk")
        #expect(note.version == 1)
        #expect(note.createdAt == note.updatedAt)
        #expect((before...after).contains(note.createdAt))
        #expect(try fixture.store.note(id: note.id) == note)
        #expect(try fixture.store.note(id: note.id + 1000) == nil)
    }

    @Test(arguments: Backend.all) func emptyAndUnicodeBodiesRoundTrip(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        for body in ["", "naïve café 日本語 🍕", "line\nbreak\0nul", String(repeating: "x", count: 100_000)] {
            let note = try fixture.create(body)
            #expect(try fixture.store.note(id: note.id)?.body == body)
        }
    }

    @Test(arguments: Backend.all) func updateBumpsVersionAndKeepsCreatedAt(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("one")
        let result = try fixture.store.perform(.update(id: note.id, body: "two", ifVersion: nil))
        let updated = try #require(result.note)
        #expect(updated.body == "two")
        #expect(updated.version == 2)
        #expect(updated.createdAt == note.createdAt)
        #expect(updated.updatedAt >= note.updatedAt)
        #expect(try fixture.store.note(id: note.id) == updated)
    }

    @Test(arguments: Backend.all) func updateWithCorrectAndStaleVersion(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("one")
        let ok = try fixture.store.perform(.update(id: note.id, body: "two", ifVersion: 1))
        #expect(ok.note?.version == 2)

        let stale = try fixture.store.perform(.update(id: note.id, body: "three", ifVersion: 1))
        let current = try #require(try fixture.store.note(id: note.id))
        #expect(stale == .versionMismatch(current: current))
        #expect(current.body == "two")
        #expect(current.version == 2)
    }

    @Test(arguments: Backend.all) func deleteWithStaleThenCorrectVersion(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("doomed")
        #expect(try fixture.store.perform(.delete(id: note.id, ifVersion: 7)) == .versionMismatch(current: note))
        #expect(try fixture.store.note(id: note.id) == note)

        let deleted = try fixture.store.perform(.delete(id: note.id, ifVersion: 1))
        #expect(deleted.note == note, "delete reports the note as it was")
        #expect(deleted.event?.kind == .deleted)
        #expect(try fixture.store.note(id: note.id) == nil)
        #expect(try fixture.store.perform(.delete(id: note.id, ifVersion: nil)) == .notFound)
    }

    @Test(arguments: Backend.all) func notFoundBeatsVersionMismatch(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let missing: Int64 = 424_242
        for write in [
            NoteWrite.update(id: missing, body: "x", ifVersion: 3), .delete(id: missing, ifVersion: 3),
            .touch(id: missing, ifVersion: 3), .update(id: missing, body: "x", ifVersion: nil),
        ] {
            #expect(try fixture.store.perform(write) == .notFound)
        }
    }

    @Test(arguments: Backend.all) func touchBumpsVersionNotBody(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("attach here")
        let touched = try fixture.store.perform(.touch(id: note.id, ifVersion: 1))
        #expect(touched.note?.version == 2)
        #expect(touched.note?.body == "attach here")
        #expect(touched.event?.kind == .updated)
        #expect(try fixture.store.perform(.touch(id: note.id, ifVersion: 1)) == .versionMismatch(current: touched.note!))
    }

    @Test(arguments: Backend.all) func idsAreNeverReused(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let first = try fixture.create("a")
        let second = try fixture.create("b")
        _ = try fixture.store.perform(.delete(id: second.id, ifVersion: nil))
        let third = try fixture.create("c")
        #expect(first.id < second.id && second.id < third.id)
    }

    @Test(arguments: Backend.all) func submitCallsCompletionOnceAfterCommit(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let done = DispatchSemaphore(value: 0)
        let calls = Counter()
        fixture.store.submit(.create(body: "async")) { result in
            calls.increment()
            // Durable and visible to readers by the time we are told.
            if case .success(.done(let note, _)) = result, (try? fixture.store.note(id: note.id)) == note {
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        Thread.sleep(forTimeInterval: 0.05)
        #expect(calls.value == 1)
    }

    @Test("closing lets the queued writes finish", arguments: Backend.all)
    func closeFinishesQueuedWrites(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let outcomes = Mutex<[Result<NoteChange, StoreError>]>([])
        for index in 0..<50 {
            fixture.store.createNote(body: "queued \(index)", owner: .unclaimed) { result in outcomes.withLock { $0.append(result) } }
        }
        fixture.store.close()
        let results = outcomes.withLock { $0 }
        #expect(results.count == 50)
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        let reopened = try fixture.reopen()
        defer { reopened.close() }
        #expect(try reopened.notes(NoteQuery(limit: 100)).count == 50)
    }

    @Test(arguments: Backend.all) func closedStoreRefusesWork(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        fixture.store.close()
        #expect(throws: StoreError.closed) { try fixture.store.perform(.create(body: "late")) }
        #expect(throws: StoreError.closed) { try fixture.store.note(id: 1) }
    }
}

/// A thread-safe counter for tests.
final class Counter: Sendable {
    private let count = Mutex(0)

    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
