import Foundation
import JotterBlobs
import JotterPostgres
import Synchronization
import JotterTestSupport
import Testing
@testable import JotterStore

/// What only the PostgreSQL store has: migrations under an advisory lock, events ordered by
/// committing transaction across connections and instances, the event feed.
@Suite("PostgreSQL store", .enabled(if: PostgresServer.available, PostgresServer.skipMessage))
struct PostgresStoreTests {
    @Test("a newer schema is refused and left untouched")
    func newerSchemaIsRefused() throws {
        let fixture = try StoreFixture(.postgres)
        fixture.postgres.close()
        let db = try fixture.connect()
        try db.execute("UPDATE schema_version SET version = 99")
        let tables: Int64 = try db.query("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()")[0].value(0)
        #expect(throws: StoreError.newerSchema) {
            _ = try PostgresStore(url: fixture.url, poolSize: 2, blobs: fixture.postgres.blobs, temporaryDirectory: fixture.directory.path + "/tmp")
        }
        #expect(try db.query("SELECT version FROM schema_version")[0].value(0, as: Int64.self) == 99)
        #expect(try db.query("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()")[0].value(0, as: Int64.self) == tables)
    }

    @Test("a database with other tables and no schema_version is refused")
    func foreignDatabaseIsRefused() throws {
        let name = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(name) }
        let url = PostgresServer.url(database: name)
        try PostgresConnection(url: url).execute("CREATE TABLE theirs (x int)")
        let blobs = try TemporaryDirectory()
        #expect(throws: StoreError.notJotterDatabase) {
            _ = try PostgresStore(url: url, poolSize: 1, blobs: try LocalBlobStore(root: blobs.path), temporaryDirectory: blobs.path + "/tmp")
        }
    }

    @Test("instances opening a fresh database at once migrate it once")
    func concurrentOpensMigrateOnce() throws {
        let name = try PostgresServer.createDatabase()
        defer { PostgresServer.dropDatabase(name) }
        let url = PostgresServer.url(database: name)
        let blobs = try TemporaryDirectory()
        let failures = Mutex<[String]>([])
        let stores = Mutex<[PostgresStore]>([])
        onThreads(4) { _ in
            do {
                let store = try PostgresStore(
                    url: url, poolSize: 1, blobs: try LocalBlobStore(root: blobs.path), temporaryDirectory: blobs.path + "/tmp")
                stores.withLock { $0.append(store) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let db = try PostgresConnection(url: url)
        #expect(try db.query("SELECT version FROM schema_version")[0].value(0, as: Int64.self) == PostgresSchema.current)
        #expect(try db.query("SELECT count(*) FROM schema_version")[0].value(0, as: Int64.self) == 1)
        stores.withLock { $0.forEach { $0.close() } }
    }

    @Test("every instance's feed delivers every instance's events, in id order, once")
    func feedsSeeOtherInstances() throws {
        let fixture = try StoreFixture(.postgres)
        let other = try PostgresStore(
            url: fixture.url, poolSize: 2, blobs: fixture.postgres.blobs, temporaryDirectory: fixture.directory.path + "/tmp")
        defer { other.close() }
        let seenHere = Mutex<[Int64]>([]), seenThere = Mutex<[Int64]>([])
        fixture.postgres.observeEvents { event, _ in seenHere.withLock { $0.append(event.id) } }
        other.observeEvents { event, _ in seenThere.withLock { $0.append(event.id) } }
        var ids: [Int64] = []
        for index in 0..<10 {
            ids.append(try create(index % 2 == 0 ? fixture.postgres : other, "n\(index)").event.id)
        }
        #expect(try waitFor { seenHere.withLock { $0 } == ids && seenThere.withLock { $0 } == ids })
    }

    @Test("an unanswered claim of an instance that died is taken over at once; a live instance's stays running")
    func deadInstancesClaimsGiveWay() throws {
        let fixture = try StoreFixture(.postgres)
        let survivor = fixture.postgres
        let other = try PostgresStore(
            url: fixture.url, poolSize: 2, blobs: fixture.postgres.blobs, temporaryDirectory: fixture.directory.path + "/tmp")
        defer { other.close() }
        let db = try fixture.connect()
        #expect(try waitFor { (try? PostgresIdempotencyRows.isAlive(other.instance, on: db)) == true })
        let now = Int64(time(nil)), key = "/uploads k", fingerprint: [UInt8] = [1, 2, 3]

        #expect(try other.claimIdempotencyKey(key, fingerprint: fingerprint, owner: .unclaimed, now: now) == .claimed)
        #expect(
            try survivor.claimIdempotencyKey(key, fingerprint: fingerprint, owner: .unclaimed, now: now + 10) == .running,
            "its claimer lives: the request may still answer")
        other.close()  // its event feed's session, and with it the instance's lock, ends
        #expect(try waitFor { (try? PostgresIdempotencyRows.isAlive(other.instance, on: db)) == false })
        #expect(try survivor.claimIdempotencyKey(key, fingerprint: [9], owner: .unclaimed, now: now + 10) == .mismatch)
        #expect(
            try survivor.claimIdempotencyKey(key, fingerprint: fingerprint, owner: .unclaimed, now: now + 1) == .running,
            "not within the claim's first answerGrace seconds")
        #expect(try survivor.claimIdempotencyKey(key, fingerprint: fingerprint, owner: .unclaimed, now: now + 10) == .claimed)
        #expect(
            try survivor.claimIdempotencyKey(key, fingerprint: fingerprint, owner: .unclaimed, now: now + 20) == .running,
            "now the survivor's own claim, which lives")
        #expect(try db.query("SELECT claimer FROM idempotency_keys WHERE key = $1", [key])[0].value(0, as: Int64.self) == survivor.instance)
    }

    @Test("the last event id does not go back when the newest events' user is removed")
    func lastEventIDSurvivesUserRemoval() throws {
        let fixture = try StoreFixture(.postgres)
        let store = fixture.postgres
        let alice = try userID(store.perform(.addUser(name: "alice", passwordHash: "x", isAdmin: true)))
        let bob = try userID(store.perform(.addUser(name: "bob", passwordHash: "x", isAdmin: false)))
        let first = try create(store, "alice's", owner: Owner(id: alice))
        let last = try create(store, "bob's", owner: Owner(id: bob))
        #expect(try store.perform(.removeUser(userID: bob)) == .done)
        #expect(try store.lastEventID() == last.event.id)
        #expect(try store.events(after: first.event.id, limit: 10, owner: Owner(id: alice)) == [])
        #expect(try store.events(after: last.event.id + 1, limit: 10, owner: Owner(id: alice)) == nil)
    }

    @Test("the backlog is trimmed in the background, and replay after a trimmed id is refused")
    func backlogIsTrimmed() throws {
        let fixture = try StoreFixture(.postgres, options: .init(eventBacklog: 3))
        let events = try (1...6).map { try create(fixture.postgres, "n\($0)").event }
        #expect(try fixture.postgres.events(after: events[2].id, limit: 10, owner: .unclaimed) == Array(events[3...]))
        #expect(try fixture.postgres.events(after: events[1].id, limit: 10, owner: .unclaimed) == nil)
        let db = try fixture.connect()
        #expect(try waitFor { try db.query("SELECT count(*) FROM events")[0].value(0, as: Int64.self) == 3 })
        #expect(try fixture.postgres.events(after: events[2].id, limit: 10, owner: .unclaimed) == Array(events[3...]))
        #expect(try fixture.postgres.events(after: events[1].id, limit: 10, owner: .unclaimed) == nil)
        #expect(try fixture.postgres.lastEventID() == events[5].id)
    }

    @Test("events a trim had to leave are trimmed a moment later, with no new write")
    func backlogIsTrimmedOnceFree() throws {
        let fixture = try StoreFixture(.postgres, options: .init(eventBacklog: 3))
        let db = try fixture.connect()
        // Another instance trims meanwhile (it holds the trimming's lock; advisory locks are
        // per database): this one's trim skips. (The same is true of events above the horizon,
        // which a transaction open anywhere in the cluster holds back.)
        let other = try fixture.connect()
        _ = try other.query("SELECT pg_advisory_lock($1)", [PostgresNoteRows.trimLock])
        let events = try (1...6).map { try create(fixture.postgres, "n\($0)").event }
        Thread.sleep(forTimeInterval: 2.5)  // the feed's trim runs at most once a second
        #expect(try db.query("SELECT count(*) FROM events")[0].value(0, as: Int64.self) == 6)
        // Each trim that had to leave events waits twice as long before the next (TrimBackoff).
        #expect(try waitFor { fixture.postgres.feed.trimInterval.load(ordering: .relaxed) >= 2 })
        _ = try other.query("SELECT pg_advisory_unlock($1)", [PostgresNoteRows.trimLock])
        #expect(try waitFor { try db.query("SELECT count(*) FROM events")[0].value(0, as: Int64.self) == 3 })
        #expect(try fixture.postgres.events(after: events[1].id, limit: 10, owner: .unclaimed) == nil)
        #expect(try waitFor { fixture.postgres.feed.trimInterval.load(ordering: .relaxed) == TrimBackoff.shortest }, "a trim that finished")
    }

    @Test("the feed's trim backs off while trims leave events: 1 s, 2 s, 4 s … up to a minute; one that finishes resets it")
    func trimBacksOff() {
        var trims = TrimBackoff()
        #expect(trims.isDue(at: 0))
        var intervals: [Double] = []
        var now = 0.0
        for _ in 0..<9 {
            #expect(trims.isDue(at: now))
            trims.tried(at: now, progressed: false)
            intervals.append(trims.interval)
            #expect(!trims.isDue(at: now + trims.interval - 0.5))
            now += trims.interval
        }
        #expect(intervals == [1, 2, 4, 8, 16, 32, 60, 60, 60])
        trims.tried(at: now, progressed: true)
        #expect(trims.interval == 1 && trims.isDue(at: now + 1) && !trims.isDue(at: now + 0.5))
    }

    @Test("a trim says whether it deleted events and whether any are left beyond the backlog")
    func trimSaysWhatItDid() throws {
        // A backlog the feed's own trims never reach: only these calls cut.
        let fixture = try StoreFixture(.postgres, options: .init(eventBacklog: 1_000))
        for number in 1...6 { _ = try create(fixture.postgres, "n\(number)") }
        let db = try fixture.connect()
        // (A busy server's trim cuts and still finds events beyond the backlog, which arrived
        // after its cut: it made progress, and the feed does not back off.)
        #expect(try PostgresNoteRows.trim(backlog: 3, on: db) == .init(cut: true, left: false))
        #expect(try db.query("SELECT count(*) FROM events")[0].value(0, as: Int64.self) == 3)
        #expect(try PostgresNoteRows.trim(backlog: 3, on: db) == .init(cut: false, left: false))
        let other = try fixture.connect()
        _ = try other.query("SELECT pg_advisory_lock($1)", [PostgresNoteRows.trimLock])
        for number in 7...8 { _ = try create(fixture.postgres, "n\(number)") }
        #expect(try PostgresNoteRows.trim(backlog: 3, on: db) == .init(cut: false, left: true), "another instance trims")
        _ = try other.query("SELECT pg_advisory_unlock($1)", [PostgresNoteRows.trimLock])
    }

    @Test("writes commit with synchronous_commit on, whatever the server's default")
    func writesAreDurable() throws {
        let fixture = try StoreFixture(.postgres)
        let db = try fixture.connect()
        #expect(try db.query("SHOW synchronous_commit")[0].value(0, as: String.self) == "off", "the test server's default")
        let setting = try StoreWait.wait { (done: @escaping StoreCompletion<String>) in
            fixture.postgres.write({ write in try write.db.query("SHOW synchronous_commit")[0].value(0) }, completion: done)
        }
        #expect(setting == "on")
        // Only for the store's transactions: its connection's session keeps the default.
        #expect(try fixture.postgres.read { db in try db.query("SHOW synchronous_commit")[0].value(0, as: String.self) } == "off")
    }

    @Test("statistics count notes and uploads and size the database")
    func storageStatistics() throws {
        let fixture = try StoreFixture(.postgres)
        let note = try fixture.create("one")
        try fixture.create("two")
        let path = fixture.directory.path + "/tmp/t"
        try Data([1, 2, 3, 4]).write(to: URL(fileURLWithPath: path))
        _ = try fixture.store.perform(.addUploads([try fixture.store.stage(path, size: 4)], noteID: note.id), owner: .unclaimed)
        let statistics = try fixture.store.storageStatistics()
        #expect(statistics.notes == 2 && statistics.uploads == 1 && statistics.uploadBytes == 4)
        #expect(statistics.databaseBytes > 1_000_000)
        #expect(fixture.store.schemaVersion == PostgresSchema.current)
    }

    @Test("a server that can't be reached is unavailable, and health says why")
    func unreachableServerIsUnavailable() throws {
        let fixture = try StoreFixture(.postgres)
        #expect(fixture.postgres.health() == ["database": "ok"])
        var components = URLComponents(string: fixture.url)!
        components.port = 1  // nothing listens there
        #expect(throws: StoreError.unavailable) {
            _ = try PostgresStore(
                url: components.string!, poolSize: 1, blobs: fixture.postgres.blobs, temporaryDirectory: fixture.directory.path + "/tmp")
        }
    }

    // MARK: - Helpers

    func create(_ store: PostgresStore, _ body: String, owner: Owner = .unclaimed) throws -> NoteChange {
        try postgresCreate(store, body, owner: owner)
    }

    func userID(_ result: AccountWriteResult) throws -> Int64 {
        guard case .user(let user) = result else { throw FixtureError("no user: \(result)") }
        return user.id
    }
}

/// Polls `condition` every 20 ms for up to `seconds`; true once it held.
func waitFor(seconds: Double = 10, _ condition: () throws -> Bool) throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return try condition()
}

/// A PostgreSQL store whose event ids are observed, with one note created and observed.
func observedStore() throws -> (StoreFixture, ObservedIDs, NoteChange) {
    let fixture = try StoreFixture(.postgres)
    let observed = ObservedIDs()
    fixture.postgres.observeEvents { event, _ in observed.append(event.id) }
    let before = try postgresCreate(fixture.postgres, "before")
    #expect(try waitFor { observed.ids == [before.event.id] })
    return (fixture, observed, before)
}

/// The event ids an observer was given, in order.
final class ObservedIDs: Sendable {
    private let list = Mutex<[Int64]>([])
    func append(_ id: Int64) { list.withLock { $0.append(id) } }
    var ids: [Int64] { list.withLock { $0 } }
}

func postgresCreate(_ store: PostgresStore, _ body: String, owner: Owner = .unclaimed) throws -> NoteChange {
    try StoreWait.wait { store.createNote(body: body, owner: owner, completion: $0) }
}

/// A transaction held open for over a second holds back every reader of events on the
/// cluster: run alone (it is in the Makefile's TIMING_TESTS).
@Suite("PostgreSQL store: late commits", .tags(.timing), .enabled(if: PostgresServer.available, PostgresServer.skipMessage))
struct PostgresLateCommitTests {
    @Test("an event committed late is delivered, before the later ids, never skipped")
    func lateCommitIsNotSkipped() throws {
        let (fixture, observed, before) = try observedStore()
        let store = fixture.postgres
        let position = try store.lastEventID()
        #expect(position == before.event.id)

        // A takes its event id first and holds its transaction open on a connection of its own.
        let a = try fixture.connect()
        try a.execute("BEGIN")
        let (_, lateEvent) = try PostgresNoteRows.create(body: "late", owner: .unclaimed, in: PostgresWrite(db: a, now: 1))
        // B commits after it (its completion waits until A has ended: its event is not visible before).
        let bDone = DispatchSemaphore(value: 0)
        let bResult = Mutex<Result<NoteChange, StoreError>?>(nil)
        store.createNote(body: "early", owner: .unclaimed) { result in
            bResult.withLock { $0 = result }
            bDone.signal()
        }
        let reader = try fixture.connect()
        #expect(try waitFor { try reader.query("SELECT count(*) FROM notes WHERE body = 'early'")[0].value(0, as: Int64.self) == 1 })
        // While A is open, nothing after the position is visible: B would let a reader skip A.
        #expect(try store.lastEventID() == position)
        #expect(try store.events(after: position, limit: 10, owner: .unclaimed) == [])
        Thread.sleep(forTimeInterval: 1.3)  // the feed's periodic read too
        #expect(observed.ids == [before.event.id])
        #expect(bResult.withLock { $0 } == nil, "B is acknowledged only once its event is visible")

        try a.execute("NOTIFY jotter_events; COMMIT")
        #expect(bDone.wait(timeout: .now() + 10) == .success)
        let b = try #require(try bResult.withLock { $0 }?.get())
        #expect(lateEvent.id < b.event.id, "A's id is the smaller: it is delivered first")
        #expect(try store.events(after: position, limit: 10, owner: .unclaimed)?.map(\.id) == [lateEvent.id, b.event.id])
        #expect(try store.lastEventID() == b.event.id)
        #expect(try waitFor { observed.ids == [before.event.id, lateEvent.id, b.event.id] })
    }
}

/// Takes the whole server away, so it runs in the TIMING_TESTS pass, alone.
@Suite(
    .tags(.timing), .serialized,
    .enabled(if: PostgresServer.available && PostgresRestart.program != nil, PostgresServer.skipMessage))
struct PostgresStoreRestartTests {
    @Test("after PostgreSQL restarts, reads, writes and the event feed come back by themselves")
    func storeComesBackAfterServerRestart() throws {
        let (fixture, observed, before) = try observedStore()
        let store = fixture.postgres

        try PostgresRestart.run()  // every pooled connection and the feed's are now dead

        let after = try postgresCreate(store, "after")
        #expect(after.event.id > before.event.id)
        #expect(try store.note(id: after.note.id, owner: .unclaimed) == after.note)
        #expect(store.health() == ["database": "ok"])
        #expect(try waitFor { observed.ids == [before.event.id, after.event.id] })
    }
}
