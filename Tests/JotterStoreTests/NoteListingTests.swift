import Testing
@testable import JotterStore

@Suite("Notes: listing order, cursor paging, limit")
struct NoteListingTests {
    /// A store holding notes "n1"…"n\(count)" with ascending ids.
    static func fixture(count: Int, _ backend: Backend) throws -> (StoreFixture, [NoteRecord]) {
        let fixture = try StoreFixture(backend)
        let notes = try (1...count).map { try fixture.create("n\($0)") }
        return (fixture, notes)
    }

    /// Owners whose notes interleave in every proportion — one owner's runs long, another's
    /// sparse, one with none — each page in either order, with cursors and limits, holds
    /// exactly the owner's notes (SQLite reads a page from the table while the owner's rows
    /// dominate and through the owner's index otherwise).
    @Test(arguments: Backend.all) func interleavedOwnersListOnlyTheirOwn(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        // Owner 1 writes in long runs, 2 one note in seven, 3 in short bursts; 4 writes nothing.
        var written: [Int64: [NoteRecord]] = [:]
        for index in 0..<140 {
            let owner: Int64 = index % 7 == 3 ? 2 : (index / 20) % 3 == 1 && index % 2 == 0 ? 3 : 1
            guard case .done(let note, _) = try store.perform(.create(body: "o\(owner) n\(index)"), owner: Owner(id: owner)) else {
                Issue.record("create"); return
            }
            written[owner, default: []].append(note)
        }
        for owner in [Int64(1), 2, 3, 4] {
            let mine = written[owner] ?? []
            for order in [NoteOrder.newestFirst, .oldestFirst] {
                let expected = order == .newestFirst ? Array(mine.reversed()) : mine
                for limit in [1, 3, 10, 1000] {
                    var seen: [NoteRecord] = []
                    var after: Int64? = nil
                    while true {
                        let page = try store.notes(NoteQuery(limit: limit, after: after, order: order), owner: Owner(id: owner))
                        #expect(page.count <= limit)
                        if page.isEmpty { break }
                        seen += page
                        after = page.last!.id
                    }
                    #expect(seen == expected, "owner \(owner), \(order), limit \(limit)")
                    let listed = try store.notesWithAttachments(NoteQuery(limit: limit, order: order), owner: Owner(id: owner))
                    #expect(listed.records == Array(expected.prefix(limit)))
                }
            }
        }
    }

    @Test(arguments: Backend.all) func newestFirstByDefault(backend: Backend) throws {
        let (fixture, notes) = try Self.fixture(count: 5, backend)
        #expect(try fixture.store.notes(NoteQuery()) == notes.reversed())
    }

    @Test(arguments: Backend.all) func oldestFirst(backend: Backend) throws {
        let (fixture, notes) = try Self.fixture(count: 5, backend)
        #expect(try fixture.store.notes(NoteQuery(order: .oldestFirst)) == notes)
    }

    @Test(arguments: Backend.all) func limitCutsThePage(backend: Backend) throws {
        let (fixture, notes) = try Self.fixture(count: 5, backend)
        #expect(try fixture.store.notes(NoteQuery(limit: 2)) == Array(notes.reversed().prefix(2)))
        #expect(try fixture.store.notes(NoteQuery(limit: 0)).isEmpty)
        #expect(try fixture.store.notes(NoteQuery(limit: -3)).isEmpty)
    }

    @Test(arguments: [1, 2, 3, 7], Backend.all)
    func cursorPagingVisitsEveryNoteOnce(pageSize: Int, backend: Backend) throws {
        let (fixture, notes) = try Self.fixture(count: 7, backend)
        for order in [NoteOrder.newestFirst, .oldestFirst] {
            var seen: [NoteRecord] = []
            var after: Int64? = nil
            while true {
                let page = try fixture.store.notes(NoteQuery(limit: pageSize, after: after, order: order))
                #expect(page.count <= pageSize)
                if page.isEmpty { break }
                seen += page
                after = page.last!.id
            }
            #expect(seen == (order == .newestFirst ? notes.reversed() : notes))
        }
    }

    @Test(arguments: Backend.all) func cursorSelectsSmallerIdsNewestFirstAndLargerOldestFirst(backend: Backend) throws {
        let (fixture, notes) = try Self.fixture(count: 5, backend)
        let middle = notes[2].id
        #expect(try fixture.store.notes(NoteQuery(after: middle)).map(\.id) == [notes[1].id, notes[0].id])
        #expect(try fixture.store.notes(NoteQuery(after: middle, order: .oldestFirst)).map(\.id) == [notes[3].id, notes[4].id])
        // A cursor that is no note's id (deleted, or beyond the ends) still works.
        #expect(try fixture.store.notes(NoteQuery(after: 1_000_000)).count == 5)
        #expect(try fixture.store.notes(NoteQuery(after: 0, order: .oldestFirst)).count == 5)
        #expect(try fixture.store.notes(NoteQuery(after: 0)).isEmpty)
    }

    @Test(arguments: Backend.all) func deletedNotesLeaveTheListing(backend: Backend) throws {
        let (fixture, notes) = try Self.fixture(count: 3, backend)
        _ = try fixture.store.perform(.delete(id: notes[1].id, ifVersion: nil))
        #expect(try fixture.store.notes(NoteQuery(order: .oldestFirst)) == [notes[0], notes[2]])
    }
}
