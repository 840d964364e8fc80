import Foundation
import Synchronization
import Testing
@testable import JotterStore

@Suite("Notes: full-text search")
struct SearchTests {
    static let bodies = [
        "Buy milk and eggs",  // 0
        "Café au lait with MILK",  // 1
        "say \"hello\" to the NEAR( team",  // 2
        "a*b wildcards and (parentheses)",  // 3
        "日本語のテキスト",  // 4
        "ÉCOLE naïve résumé",  // 5
        "pizza 🍕 tonight",  // 6
    ]

    static func fixture(_ backend: Backend) throws -> (StoreFixture, [NoteRecord]) {
        let fixture = try StoreFixture(backend)
        return (fixture, try bodies.map { try fixture.create($0) })
    }

    static func search(_ store: any DataStore, _ words: String, order: NoteOrder = .oldestFirst) throws -> [String] {
        try store.notes(NoteQuery(order: order, search: words)).map(\.body)
    }

    @Test(arguments: Backend.all) func wordsAreAndedCaseAndAccentInsensitive(backend: Backend) throws {
        let (fixture, _) = try Self.fixture(backend)
        let store = fixture.store
        #expect(try Self.search(store, "milk") == [Self.bodies[0], Self.bodies[1]])
        #expect(try Self.search(store, "milk", order: .newestFirst) == [Self.bodies[1], Self.bodies[0]])
        #expect(try Self.search(store, "MILK eggs") == [Self.bodies[0]])
        #expect(try Self.search(store, "cafe") == [Self.bodies[1]])
        #expect(try Self.search(store, "ecole NAIVE resume") == [Self.bodies[5]])
        #expect(try Self.search(store, "日本語のテキスト") == [Self.bodies[4]])
        #expect(try Self.search(store, "cheese").isEmpty)
    }

    static let hostileCases: [(search: String, expected: [Int])] = [
        ("\"", [Int]()), ("*", []), ("\"\"\"", []), ("🍕", []), ("-- ; ')", []),
        ("AND", [0, 3]), ("and OR not", []), ("NEAR(", [2]), ("NEAR(milk, eggs)", []),
        ("\"hello\"", [2]), ("hello\"", [2]), ("a*b", [3]), ("mil*", [0, 1]), ("body:milk", []),
        ("(parentheses", [3]), ("\"); DROP TABLE notes; --", []), ("^milk", [0, 1]), ("milk +", [0, 1]),
        ("a\u{0}", [0, 1, 3]), ("mil\u{0}k", []), ("milk\u{7}eggs", [0]),
        ("\u{FFFD}", []), ("\u{10FFFF}", []), ("e\u{301}cole", [5]), ("\u{FEFF}milk", [0, 1]), ("x\"*", []),
    ]

    @Test(arguments: Backend.all)
    func hostileInputIsMatchedLiterally(backend: Backend) throws {
        let (fixture, _) = try Self.fixture(backend)
        for (search, expected) in Self.hostileCases {
            #expect(try Self.search(fixture.store, search) == expected.map { Self.bodies[$0] }, "search \(search.debugDescription)")
        }
        #expect(try fixture.store.notes(NoteQuery()).count == Self.bodies.count, "nothing was dropped")
    }

    @Test("every word also matches longer words it begins, as while typing", arguments: Backend.all)
    func prefixesMatch(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let bodies = ["Shopping list: apples, milk", "Appointment with the dentist", "Milestones for Q3"]
        for body in bodies { try fixture.create(body) }
        #expect(try Self.search(fixture.store, "shop") == [bodies[0]])
        #expect(try Self.search(fixture.store, "app") == [bodies[0], bodies[1]])
        #expect(try Self.search(fixture.store, "mil") == [bodies[0], bodies[2]])
        #expect(try Self.search(fixture.store, "shopping mil") == [bodies[0]])
        #expect(try Self.search(fixture.store, "apples m") == [bodies[0]])
        #expect(try Self.search(fixture.store, "dentists").isEmpty)  // a prefix, never a suffix or a stem
        #expect(try Self.search(fixture.store, "hopping").isEmpty)
    }

    @Test("words are runs of letters and digits, whatever looks like a number; diacritics go, letters stay", arguments: Backend.all)
    func wordsAreRunsOfLettersAndDigits(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let bodies = ["2e3x", "x-ray 1.5", "Straße", "Łódź"]
        for body in bodies { try fixture.create(body) }
        #expect(try Self.search(fixture.store, "x") == [bodies[1]])
        #expect(try Self.search(fixture.store, "2e3") == [bodies[0]])
        #expect(try Self.search(fixture.store, "5") == [bodies[1]])
        #expect(try Self.search(fixture.store, "strasse").isEmpty)
        #expect(try Self.search(fixture.store, "STRA") == [bodies[2]])
        #expect(try Self.search(fixture.store, "lodz").isEmpty)
        #expect(try Self.search(fixture.store, "łodz") == [bodies[3]])
    }

    @Test(arguments: Backend.all) func blankSearchIsNoFilter(backend: Backend) throws {
        let (fixture, notes) = try Self.fixture(backend)
        for blank in ["", "   ", "\n\t", "\u{0}", "\u{1}\u{7F}"] {
            #expect(try fixture.store.notes(NoteQuery(order: .oldestFirst, search: blank)) == notes)
        }
    }

    @Test(arguments: Backend.all) func searchPagesWithCursorAndLimit(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let matching = try (1...7).map { try fixture.create("match \($0)") }
        for index in 1...5 { try fixture.create("other \(index)") }
        let firstPage = try fixture.store.notes(NoteQuery(limit: 3, search: "match"))
        #expect(firstPage == Array(matching.reversed().prefix(3)))
        let secondPage = try fixture.store.notes(NoteQuery(limit: 3, after: firstPage.last!.id, search: "match"))
        #expect(secondPage == Array(matching.reversed().dropFirst(3).prefix(3)))
        let ascending = try fixture.store.notes(NoteQuery(limit: 10, after: matching[4].id, order: .oldestFirst, search: "match"))
        #expect(ascending == Array(matching.suffix(2)))
    }

    @Test(arguments: Backend.all) func indexFollowsUpdatesAndDeletes(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let note = try fixture.create("apples")
        _ = try fixture.store.perform(.update(id: note.id, body: "pears", ifVersion: nil))
        #expect(try Self.search(fixture.store, "apples").isEmpty)
        #expect(try Self.search(fixture.store, "pears") == ["pears"])
        _ = try fixture.store.perform(.touch(id: note.id, ifVersion: nil))
        #expect(try Self.search(fixture.store, "pears") == ["pears"])
        _ = try fixture.store.perform(.delete(id: note.id, ifVersion: nil))
        #expect(try Self.search(fixture.store, "pears").isEmpty)
        fixture.store.close()
        #expect(try fixture.integrityCheck() == "ok")
    }

    /// The writer makes the index changes of a whole group commit at its end: writes to the same
    /// notes in one batch leave the index as one by one would, and a job that fails leaves none
    /// of its own (its savepoint and its deferred changes both go).
    @Test func writesSharingACommitKeepTheIndex() throws {
        let fixture = try StoreFixture(.sqlite)
        let store = try #require(fixture.sqlite)
        let one = try fixture.create("apples one"), two = try fixture.create("pears two")
        let done = Counter(), before = store.statistics
        // A first job holds the writer while the others queue: they make the next batch.
        store.submit({ _, _ throws(StoreError) in usleep(200_000) }, owner: .unclaimed) { _ in done.increment() }
        usleep(20_000)
        store.updateNote(id: one.id, body: "plums one", ifVersion: nil, owner: .unclaimed) { _ in done.increment() }
        store.deleteNote(id: two.id, ifVersion: nil, owner: .unclaimed) { _ in done.increment() }
        store.createNote(body: "cherries three", owner: .unclaimed) { _ in done.increment() }
        let failed = Mutex<StoreError?>(nil)
        store.submit(
            { db, _ throws(StoreError) in
                FullTextIndex.added(id: one.id, body: "ghost", on: db)
                throw StoreError.invalidArgument("this job fails")
            }, owner: .unclaimed
        ) { result in
            if case .failure(let error) = result { failed.withLock { $0 = error } }
            done.increment()
        }
        store.updateNote(id: one.id, body: "quinces one", ifVersion: nil, owner: .unclaimed) { _ in done.increment() }
        let deadline = Date().addingTimeInterval(10)
        while done.value < 6, Date() < deadline { usleep(1_000) }
        #expect(done.value == 6)
        #expect(store.statistics.commits - before.commits <= 2, "the five writes after the first shared a commit")
        #expect(failed.withLock { $0 } != nil)
        for gone in ["apples", "plums", "pears", "ghost"] { #expect(try Self.search(store, gone).isEmpty, "\(gone)") }
        #expect(try Self.search(store, "quinces") == ["quinces one"])
        #expect(try Self.search(store, "one") == ["quinces one"])
        #expect(try Self.search(store, "cherries") == ["cherries three"])
        store.close()
        #expect(try fixture.integrityCheck() == "ok")
    }

    /// A user's removal makes the index changes deferred before it first; when that job then
    /// fails, its savepoint undoes them with it and they are made again at the end, so the
    /// notes written before it in the same commit stay searchable.
    @Test func aFailedJobUndoesNoEarlierJobsIndexChanges() throws {
        let fixture = try StoreFixture(.sqlite)
        let store = try #require(fixture.sqlite)
        let done = Counter()
        store.submit({ _, _ throws(StoreError) in usleep(200_000) }, owner: .unclaimed) { _ in done.increment() }
        usleep(20_000)
        store.createNote(body: "kept before", owner: .unclaimed) { _ in done.increment() }
        store.submit(
            { db, _ throws(StoreError) in
                try FullTextIndex.removeAll(owner: 999, on: db)
                throw StoreError.invalidArgument("this job fails after making the earlier index changes")
            }, owner: .unclaimed
        ) { _ in done.increment() }
        store.createNote(body: "kept after", owner: .unclaimed) { _ in done.increment() }
        let deadline = Date().addingTimeInterval(10)
        while done.value < 4, Date() < deadline { usleep(1_000) }
        #expect(done.value == 4)
        #expect(try Self.search(store, "kept") == ["kept before", "kept after"])
        store.close()
        #expect(try fixture.integrityCheck() == "ok")
    }

    /// Only the writer's connection has the schema's triggers off: any other connection that
    /// changes notes (a tool, the sqlite3 shell) still keeps the index with them.
    @Test func anotherConnectionKeepsTheIndexThroughTheTriggers() throws {
        let fixture = try StoreFixture(.sqlite)
        try fixture.create("written by jotter")
        let db = try SQLiteConnection(path: fixture.directory.databasePath, flags: SQLiteConnection.readWrite)
        try db.run("INSERT INTO notes (body, created_at, updated_at, version, owner) VALUES ('written by hand', 0, 0, 1, 0)")
        let id = db.lastInsertRowID
        #expect(try Self.search(fixture.store, "hand") == ["written by hand"])
        try db.run("UPDATE notes SET body = 'changed by hand' WHERE id = ?", [.integer(id)])
        #expect(try Self.search(fixture.store, "written") == ["written by jotter"])
        #expect(try Self.search(fixture.store, "changed") == ["changed by hand"])
        try db.run("DELETE FROM notes WHERE id = ?", [.integer(id)])
        #expect(try Self.search(fixture.store, "hand").isEmpty)
        db.close()
        try fixture.create("and jotter again")
        #expect(try Self.search(fixture.store, "jotter") == ["written by jotter", "and jotter again"])
        fixture.store.close()
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test func queryBuilderQuotesEveryWord() {
        #expect(FullTextQuery(search: nil) == .everything)
        #expect(FullTextQuery(search: " ") == .everything)
        #expect(FullTextQuery(search: "* \"") == .nothing)
        #expect(FullTextQuery(search: "buy \"milk\" NEAR(") == .match(#""buy" * AND """milk""" * AND "NEAR(" *"#))
        #expect(FullTextQuery(search: "a\u{0}b") == .match(#""a" * AND "b" *"#))
    }
}
