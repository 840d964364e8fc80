import Foundation
import Synchronization
import Testing
@testable import JotterStore

/// `mergeNote`: a write made from an older version, merged inside the write. The assertions hold
/// for any merge with TextMerge's guarantees (no side's text dropped; one side unchanged: the
/// other wins), so they do not depend on how it lines texts up.
@Suite("Notes: merge against a stale base")
struct MergeStoreTests {
    @Test(arguments: Backend.all) func currentBaseIsAPlainUpdate(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("one")
        let change = try #require(try fixture.store.mergeNote(id: note.id, base: 1, body: "two", ifVersion: nil, owner: .unclaimed).change)
        #expect(change.note.body == "two")
        #expect(change.note.version == 2)
        #expect(change.merge == nil)
        #expect(try fixture.store.revisions(noteID: note.id, before: nil, limit: 1, owner: .unclaimed, inTrash: false)?.first?.merged == false)
    }

    @Test(arguments: Backend.all) func olderBaseMergesBothSides(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("milk\nbread\neggs\n")
        _ = try fixture.store.perform(.update(id: note.id, body: "oat milk\nbread\neggs\n", ifVersion: nil))
        let change = try #require(
            try fixture.store.mergeNote(
                id: note.id, base: 1, body: "milk\nbread\neggs\nsoy sauce\n",
                ifVersion: nil, owner: .unclaimed
            ).change)
        #expect(change.note.version == 3)
        #expect(change.note.body.contains("oat milk") && change.note.body.contains("soy sauce"))
        let merge = try #require(change.merge)
        #expect(merge.base == 1)
        #expect(merge.overlapped == !merge.regions.isEmpty)
        #expect(merge.regions.allSatisfy { $0.upperBound <= change.note.body.utf16.count })
        #expect(try fixture.store.note(id: note.id) == change.note)
        #expect(change.event.kind == .updated && change.event.note == change.note)
        let revision = try #require(try fixture.store.revision(noteID: note.id, version: 3, owner: .unclaimed, inTrash: false))
        #expect(revision.merged && revision.mergeBase == 1 && revision.body == change.note.body)
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test(arguments: Backend.all) func oneSideUnchangedTakesTheOther(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("draft")
        _ = try fixture.store.perform(.touch(id: note.id, ifVersion: nil))  // v2: an attachment changed, the body did not
        let theirs = try #require(try fixture.store.mergeNote(id: note.id, base: 1, body: "final", ifVersion: nil, owner: .unclaimed).change)
        #expect(theirs.note.body == "final")
        // Made from v1 again, with v1's body: the current body stays.
        let ours = try #require(try fixture.store.mergeNote(id: note.id, base: 1, body: "draft", ifVersion: nil, owner: .unclaimed).change)
        #expect(ours.note.body == "final")
        #expect(ours.note.version == 4)
    }

    @Test(arguments: Backend.all) func refusalsChangeNothing(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("one")
        _ = try fixture.store.perform(.update(id: note.id, body: "two", ifVersion: nil))
        let current = try #require(try fixture.store.note(id: note.id))
        let store = fixture.store
        #expect(try store.mergeNote(id: note.id + 100, base: 1, body: "x", ifVersion: nil, owner: .unclaimed) == .notFound)
        #expect(try store.mergeNote(id: note.id, base: 1, body: "x", ifVersion: 1, owner: .unclaimed) == .versionMismatch(current: current))
        #expect(try store.mergeNote(id: note.id, base: 3, body: "x", ifVersion: nil, owner: .unclaimed) == .noRevision(current: current))
        #expect(try store.mergeNote(id: note.id, base: 1, body: "x", ifVersion: nil, owner: Owner(id: 5)) == .notFound)
        // Past the merge's bounds: both versions back.
        let huge = String(repeating: "y", count: TextMerge.Limits.default.maxBytes + 1)
        _ = try store.perform(.update(id: note.id, body: huge, ifVersion: nil))
        let big = try #require(try store.note(id: note.id))
        guard
            case .cannotMerge(let found, let base) = try store.mergeNote(
                id: note.id, base: 2, body: "two, edited", ifVersion: nil,
                owner: .unclaimed)
        else {
            Issue.record("not refused past the merge's bounds")
            return
        }
        #expect(found == big)
        #expect(base.version == 2 && base.body == "two")
        #expect(try store.note(id: note.id) == big)
        // A base the retention let go.
        try RevisionTests.replaceRevisions(fixture, with: [(note.id, 3, 1_000)])
        #expect(try store.mergeNote(id: note.id, base: 2, body: "x", ifVersion: nil, owner: .unclaimed) == .noRevision(current: big))
    }

    /// Writers made from the same base, at once, on one store or (PostgreSQL) two: every one
    /// is merged, none is lost, none is refused.
    @Test(arguments: Backend.all) func concurrentMergesLoseNothing(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let second = backend == .postgres ? try fixture.reopen() : fixture.store
        defer { if backend == .postgres { second.close() } }
        let note = try fixture.create("list\n")
        let writers = 8
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: writers) { index in
            let store = index % 2 == 0 ? fixture.store : second
            do {
                guard case .done = try store.mergeNote(id: note.id, base: 1, body: "list\nitem \(index)\n", ifVersion: nil, owner: .unclaimed) else {
                    throw FixtureError("writer \(index) was refused")
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let final = try #require(try fixture.store.note(id: note.id))
        #expect(final.version == Int64(1 + writers))
        for index in 0..<writers { #expect(final.body.contains("item \(index)"), "writer \(index)'s edit is missing") }
    }
}
