import Foundation
import Testing
@testable import JotterStore

/// Write throughput figures, printed, never asserted. Off by default; run with
/// `JOTTER_STORE_BENCH=1 swift test -c release --filter ThroughputReport`.
@Suite("Throughput report", .serialized, .enabled(if: ProcessInfo.processInfo.environment["JOTTER_STORE_BENCH"] != nil))
struct ThroughputReport {
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func report(_ label: String, writes: Int, commits: Int, seconds: Double) {
        let line =
            "\(label): \(writes) writes, \(commits) commits in \(String(format: "%.2f", seconds)) s"
            + " = \(Int(Double(writes) / seconds)) writes/s, \(Int(Double(commits) / seconds)) commits/s,"
            + " \(String(format: "%.1f", Double(writes) / Double(max(commits, 1)))) writes/commit"
        print(line)
    }

    @Test(arguments: [SQLiteStore.Synchronous.full, .normal])
    func rawSQLiteSingleRowCommits(synchronous: SQLiteStore.Synchronous) throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }  // keep the folder until the test ends
        let db = try SQLiteConnection(path: directory.databasePath, flags: SQLiteConnection.readWrite)
        defer { db.close() }
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = \(synchronous.rawValue); CREATE TABLE t (x TEXT)")
        let count = synchronous == .full ? 3_000 : 30_000
        let seconds = try Self.seconds {
            for index in 0..<count { try db.run("INSERT INTO t (x) VALUES (?)", [.text("row \(index)")]) }
        }
        Self.report("raw SQLite autocommit INSERT, \(synchronous)", writes: count, commits: count, seconds: seconds)
    }

    @Test(arguments: [SQLiteStore.Synchronous.full, .normal])
    func singleWriter(synchronous: SQLiteStore.Synchronous) throws {
        let fixture = try StoreFixture(options: .init(synchronous: synchronous))
        let count = synchronous == .full ? 3_000 : 20_000
        let seconds = try Self.seconds {
            for index in 0..<count { _ = try fixture.sqlite!.perform(.create(body: "single \(index)")) }
        }
        let statistics = fixture.sqlite!.statistics
        Self.report(
            "store, 1 thread perform(create), \(synchronous)", writes: statistics.writes,
            commits: statistics.commits, seconds: seconds)
    }

    @Test(arguments: [SQLiteStore.Synchronous.full, .normal])
    func eightThreadsGrouped(synchronous: SQLiteStore.Synchronous) throws {
        let fixture = try StoreFixture(options: .init(synchronous: synchronous))
        let seconds = Self.seconds {
            onThreads(8) { thread in
                for index in 0..<2_000 { _ = try? fixture.sqlite!.perform(.create(body: "t\(thread) \(index)")) }
            }
        }
        let statistics = fixture.sqlite!.statistics
        Self.report(
            "store, 8 threads x 2000 perform(create), \(synchronous)", writes: statistics.writes,
            commits: statistics.commits, seconds: seconds)
    }

    @Test(arguments: [SQLiteStore.Synchronous.full, .normal])
    func manyInFlightSubmits(synchronous: SQLiteStore.Synchronous) throws {
        // Like the HTTP engine: many requests suspended on their write at once (here 64 in flight).
        let fixture = try StoreFixture(options: .init(synchronous: synchronous))
        let total = 20_000
        let inFlight = DispatchSemaphore(value: 64)
        let finished = DispatchSemaphore(value: 0)
        let seconds = Self.seconds {
            for index in 0..<total {
                inFlight.wait()
                fixture.sqlite!.submit(.create(body: "s\(index)")) { _ in
                    inFlight.signal()
                    finished.signal()
                }
            }
            for _ in 0..<total { finished.wait() }
        }
        let statistics = fixture.sqlite!.statistics
        Self.report(
            "store, 64 in-flight submit(create), \(synchronous)", writes: statistics.writes,
            commits: statistics.commits, seconds: seconds)
    }

    @Test func reads() throws {
        let fixture = try StoreFixture(options: .init(synchronous: .normal))
        let notes = 10_000
        let finished = DispatchSemaphore(value: 0)
        for index in 0..<notes {
            fixture.sqlite!.submit(.create(body: "note number \(index) with a few words of text")) { _ in finished.signal() }
        }
        for _ in 0..<notes { finished.wait() }
        let lookups = 200_000
        for threads in [1, 2] {
            let seconds = Self.seconds {
                onThreads(threads) { thread in
                    for index in 0..<(lookups / threads) { _ = try? fixture.sqlite!.note(id: Int64(1 + (index * 7919 + thread) % notes)) }
                }
            }
            print(
                "store, note(id:) on \(threads) thread(s): \(Int(Double(lookups) / seconds)) reads/s, "
                    + "\(String(format: "%.1f", seconds * 1e6 / Double(lookups) * Double(threads))) µs per read per thread")
        }
        let pages = 2_000
        let seconds = try Self.seconds {
            for _ in 0..<pages { _ = try fixture.sqlite!.notes(NoteQuery(limit: 100)) }
        }
        print("store, notes(limit: 100) on 1 thread: \(Int(Double(pages) / seconds)) pages/s")
        let searches = try Self.seconds {
            for index in 0..<pages { _ = try fixture.sqlite!.notes(NoteQuery(limit: 100, search: "number \(index)")) }
        }
        print("store, notes(limit: 100, search: 2 words) on 1 thread: \(Int(Double(pages) / searches)) searches/s")
    }

    @Test("PostgreSQL store: creates from 1 and 8 threads, note reads", .enabled(if: PostgresServer.available))
    func postgres() throws {
        let fixture = try StoreFixture(.postgres)
        let store = fixture.store
        let single = 2_000
        var seconds = try Self.seconds {
            for index in 0..<single { _ = try store.perform(.create(body: "single \(index)"), owner: .unclaimed) }
        }
        Self.report("PostgreSQL store, 1 thread perform(create)", writes: single, commits: single, seconds: seconds)
        seconds = Self.seconds {
            onThreads(8) { thread in
                for index in 0..<500 { _ = try? store.perform(.create(body: "t\(thread) \(index)"), owner: .unclaimed) }
            }
        }
        Self.report("PostgreSQL store, 8 threads x 500 perform(create)", writes: 4_000, commits: 4_000, seconds: seconds)
        let id = try store.notes(NoteQuery(limit: 1), owner: .unclaimed)[0].id
        seconds = try Self.seconds { for _ in 0..<5_000 { _ = try store.note(id: id, owner: .unclaimed) } }
        print("PostgreSQL store, 1 thread note(id:): 5000 reads in \(String(format: "%.2f", seconds)) s = \(Int(5_000 / seconds)) reads/s")
        seconds = try Self.seconds { for _ in 0..<500 { _ = try store.notes(NoteQuery(limit: 100), owner: .unclaimed) } }
        print("PostgreSQL store, 1 thread notes(limit: 100): 500 pages in \(String(format: "%.2f", seconds)) s = \(Int(500 / seconds)) pages/s")
    }
}
