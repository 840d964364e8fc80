import Foundation
import Synchronization
import Testing
@testable import JotterStore
import JotterSystem

/// `LimitCounters`: token buckets in memory and in PostgreSQL's shared table.
@Suite struct LimitCountersTests {
    final class FakeClock: Sendable {
        let seconds = Mutex<Double>(1000)
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
    }

    @Test func memoryBucketsRefillAndTakeAllOrNothing() throws {
        let clock = FakeClock()
        let counters = MemoryLimitCounters(clock: { clock.seconds.withLock { $0 } })
        for _ in 0..<3 { #expect(try counters.take(["a"], capacity: 3, interval: 10).allowed) }
        let refused = try counters.take(["a"], capacity: 3, interval: 10)
        #expect(!refused.allowed)
        #expect(refused.wait(interval: 10) == 10)
        clock.advance(10)
        #expect(try counters.take(["a"], capacity: 3, interval: 10).allowed)
        // "a" is empty, "b" full: neither gives a token, so "b" keeps all three.
        #expect(try !counters.take(["b", "a"], capacity: 3, interval: 10).allowed)
        #expect(try counters.take(["b"], capacity: 3, interval: 10).tokens == [2])
    }

    /// A cost of 0 looks without taking (the failure limits check before they know), a negative
    /// one gives back up to the capacity, always.
    static func checkCosts(_ counters: any LimitCounters) throws {
        #expect(try counters.take(["c"], capacity: 2, interval: 3600, cost: 0).tokens[0] > 1.99)
        #expect(try counters.take(["c"], capacity: 2, interval: 3600).allowed)
        #expect(try counters.take(["c"], capacity: 2, interval: 3600).allowed)
        let looked = try counters.take(["c"], capacity: 2, interval: 3600, cost: 0)
        #expect(!looked.allowed && looked.tokens[0] < 0.01)
        #expect(try counters.take(["c"], capacity: 2, interval: 3600, cost: -1).allowed)
        #expect(try counters.take(["c"], capacity: 2, interval: 3600, cost: 0).allowed)
        let refilled = try counters.take(["c"], capacity: 2, interval: 3600, cost: -5)
        #expect(refilled.allowed && refilled.tokens[0] > 1.99 && refilled.tokens[0] <= 2)
    }

    @Test func memoryCostsLookAndGiveBack() throws {
        try Self.checkCosts(MemoryLimitCounters())
    }

    @Test(.enabled(if: PostgresServer.available, PostgresServer.skipMessage))
    func postgresCostsLookAndGiveBack() throws {
        let fixture = try StoreFixture(.postgres)
        try Self.checkCosts(fixture.postgres.limitCounters)
    }

    /// The database's clock stepped back 600 s (as a row updated 600 s "in the future" stands for
    /// it): no bucket loses what it held — one key (one statement) as several (a transaction).
    @Test(.enabled(if: PostgresServer.available, PostgresServer.skipMessage))
    func postgresClockSteppedBackTakesNothingAway() throws {
        let fixture = try StoreFixture(.postgres)
        let counters = fixture.postgres.limitCounters
        #expect(try counters.take(["token 9"], capacity: 60, interval: 1).allowed)
        #expect(try counters.take(["name bo", "address z"], capacity: 60, interval: 1).allowed)
        _ = try fixture.postgres.read { db in
            try db.query("UPDATE limit_buckets SET updated = updated + 600, full_at = full_at + 600")
        }
        for _ in 0..<5 {
            let take = try counters.take(["token 9"], capacity: 60, interval: 1)
            #expect(take.allowed && take.tokens[0] > 50, "\(take)")
            let several = try counters.take(["name bo", "address z"], capacity: 60, interval: 1)
            #expect(several.allowed && several.tokens.allSatisfy { $0 > 50 }, "\(several)")
        }
    }

    @Test(.enabled(if: PostgresServer.available, PostgresServer.skipMessage))
    func postgresBucketsAreSharedByInstances() throws {
        let fixture = try StoreFixture(.postgres)
        let other = try StoreFixture.openPostgres(url: fixture.url, directory: fixture.directory)
        defer { other.close() }
        let first = fixture.postgres.limitCounters, second = other.limitCounters
        // An hour per token: nothing refills while the test runs.
        #expect(try first.take(["token 1"], capacity: 4, interval: 3600).allowed)
        #expect(try second.take(["token 1"], capacity: 4, interval: 3600).allowed)
        #expect(try first.take(["token 1"], capacity: 4, interval: 3600).allowed)
        let last = try second.take(["token 1"], capacity: 4, interval: 3600)
        #expect(last.allowed && last.tokens[0] < 0.01)
        #expect(try !first.take(["token 1"], capacity: 4, interval: 3600).allowed)
        #expect(try !second.take(["token 1"], capacity: 4, interval: 3600).allowed)
        // Several keys: all or nothing, across instances.
        for _ in 0..<2 { #expect(try first.take(["name ann", "address x"], capacity: 2, interval: 3600).allowed) }
        #expect(try !second.take(["address y", "name ann"], capacity: 2, interval: 3600).allowed)
        #expect(try second.take(["address y"], capacity: 2, interval: 3600).tokens[0] > 0.99)  // y gave nothing above
    }

    @Test(.enabled(if: PostgresServer.available, PostgresServer.skipMessage))
    func postgresTakesRacingFromManyThreadsNeverOverspend() throws {
        let fixture = try StoreFixture(.postgres)
        let other = try StoreFixture.openPostgres(url: fixture.url, directory: fixture.directory)
        defer { other.close() }
        let stores = [fixture.postgres.limitCounters, other.limitCounters]
        let allowed = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for _ in 0..<10 {
                if (try? stores[worker % 2].take(["token 7"], capacity: 25, interval: 3600).allowed) == true {
                    allowed.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(allowed.load(ordering: .relaxed) == 25)
    }

    /// The cost of one shared take (the per-token rate limit's, on every authenticated request).
    @Test(.enabled(if: PostgresServer.available, PostgresServer.skipMessage))
    func postgresTakeCost() throws {
        let fixture = try StoreFixture(.postgres)
        let counters = fixture.postgres.limitCounters
        _ = try counters.take(["token 9"], capacity: 1e9, interval: 1e-6)
        let count = 2000
        let start = MonotonicClock.seconds(), cpuStart = clock()
        for _ in 0..<count { _ = try counters.take(["token 9"], capacity: 1e9, interval: 1e-6) }
        let elapsed = MonotonicClock.seconds() - start
        let cpu = Double(clock() - cpuStart) / Double(CLOCKS_PER_SEC)
        let memory = MemoryLimitCounters()
        let memoryStart = MonotonicClock.seconds()
        for _ in 0..<count { _ = try memory.take(["token 9"], capacity: 1e9, interval: 1e-6) }
        let memoryElapsed = MonotonicClock.seconds() - memoryStart
        print(
            String(
                format: "LimitCounters: a PostgreSQL take %.0f µs wall, %.0f µs of this process's CPU; in memory %.2f µs",
                elapsed / Double(count) * 1e6, cpu / Double(count) * 1e6, memoryElapsed / Double(count) * 1e6))
        let sign = MonotonicClock.seconds()
        for index in 0..<200 { _ = try counters.take(["name n\(index % 7)", "address a\(index % 5)"], capacity: 1e9, interval: 1e-6) }
        print(
            String(
                format: "LimitCounters: a PostgreSQL sign-in take (two keys, one transaction) %.0f µs wall",
                (MonotonicClock.seconds() - sign) / 200 * 1e6))
    }
}
