import Synchronization
import Testing
@testable import JotterStore

@Suite("Events: ids, replay, backlog, restarts")
struct EventTests {
    @Test(arguments: Backend.all) func writesEmitEventsInOrderWithGrowingIds(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        #expect(try store.lastEventID() == 0)
        #expect(try store.events(after: 0, limit: 100) == [])

        let a = try store.perform(.create(body: "a"))
        let b = try store.perform(.create(body: "b"))
        let a2 = try store.perform(.update(id: a.note!.id, body: "a2", ifVersion: nil))
        let bTouched = try store.perform(.touch(id: b.note!.id, ifVersion: nil))
        let bGone = try store.perform(.delete(id: b.note!.id, ifVersion: nil))
        let emitted = [a, b, a2, bTouched, bGone].compactMap(\.event)

        #expect(emitted.map(\.kind) == [.created, .created, .updated, .updated, .deleted])
        #expect(emitted.map(\.id) == emitted.map(\.id).sorted() && Set(emitted.map(\.id)).count == 5)
        #expect(emitted[4].note == bTouched.note, "note.deleted carries the note as it was")
        #expect(try store.lastEventID() == emitted.last!.id)
        #expect(try store.events(after: 0, limit: 100) == emitted)
    }

    /// Handing out the observer's handler must not wrap it: each delivery costs the same as the
    /// first. (It once took a reabstraction thunk more per delivery, so that the n-th cost n.)
    @Test func observerDeliveryCostsTheSameEveryTime() {
        let observer = EventObserver()
        let count = Mutex(0)
        observer.set { _, _ in count.withLock { $0 += 1 } }
        let event = NoteEvent(id: 1, kind: .created, note: NoteRecord(id: 1, body: "x", createdAt: 0, updatedAt: 0, version: 1), at: 0)
        let clock = ContinuousClock()
        func deliveries(_ n: Int) -> Duration {
            let started = clock.now
            for _ in 0..<n { observer.deliver([event], owner: .unclaimed) }
            return clock.now - started
        }
        let first = deliveries(2_000)
        _ = deliveries(16_000)
        let last = deliveries(2_000)
        // About a millisecond each. With a thunk more per delivery, the last 2,000 went through
        // eight times as many thunks as the first: 0.94 s against 0.12 s in a debug build.
        #expect(last < first * 2 + .milliseconds(200), "first 2,000: \(first), last 2,000: \(last)")
        #expect(count.withLock { $0 } == 20_000)
    }

    @Test(arguments: Backend.all) func refusedWritesEmitNothing(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("x")
        _ = try fixture.store.perform(.update(id: note.id, body: "y", ifVersion: 9))
        _ = try fixture.store.perform(.delete(id: 999, ifVersion: nil))
        #expect(try fixture.store.events(after: 0, limit: 100)?.count == 1)
    }

    @Test(arguments: Backend.all) func replayAfterAnIdWithLimit(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let events = try (1...6).map { try fixture.store.perform(.create(body: "n\($0)")).event! }
        let store = fixture.store
        #expect(try store.events(after: events[1].id, limit: 100) == Array(events[2...]))
        #expect(try store.events(after: events[1].id, limit: 2) == Array(events[2...3]))
        #expect(try store.events(after: events[5].id, limit: 100) == [], "caught up: nothing to replay")
        #expect(try store.events(after: events[0].id, limit: 0) == [])
    }

    @Test(arguments: Backend.all) func neverIssuedIdsAreNotReplayable(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let last = try fixture.store.perform(.create(body: "x")).event!.id
        #expect(try fixture.store.events(after: last + 1, limit: 10) == nil)
        #expect(try fixture.store.events(after: -1, limit: 10) == nil)
        #expect(try fixture.store.events(after: .max, limit: 10) == nil)
    }

    @Test(arguments: Backend.all) func idsOlderThanTheBacklogAreNotReplayable(backend: Backend) throws {
        let fixture = try StoreFixture(backend, options: .init(eventBacklog: 3))
        let events = try (1...5).map { try fixture.store.perform(.create(body: "n\($0)")).event! }
        let store = fixture.store
        // Kept: the last three. Replaying after the event just before them still misses nothing.
        #expect(try store.events(after: events[1].id, limit: 10) == Array(events[2...]))
        #expect(try store.events(after: events[0].id, limit: 10) == nil)
        #expect(try store.events(after: 0, limit: 10) == nil)
        #expect(try store.lastEventID() == events[4].id)
    }

    @Test(arguments: Backend.all) func idsContinueAfterReopening(backend: Backend) throws {
        let fixture = try StoreFixture(backend, options: .init(eventBacklog: 2))
        let first = try (1...4).map { try fixture.store.perform(.create(body: "n\($0)")).event! }
        fixture.store.close()

        let store = try fixture.reopen(options: .init(eventBacklog: 2))
        defer { store.close() }
        #expect(try store.lastEventID() == first.last!.id)
        #expect(try store.events(after: first[2].id, limit: 10) == [first[3]])
        let next = try store.perform(.create(body: "after restart")).event!
        #expect(next.id > first.last!.id)
        #expect(next.note.id > first.last!.note.id)
        if backend == .sqlite {  // SQLite's ids are dense; PostgreSQL's event ids have gaps
            #expect(next.id == first.last!.id + 1)
            #expect(next.note.id == first.last!.note.id + 1)
        }
    }
}
