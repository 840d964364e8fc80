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
