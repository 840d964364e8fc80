import Foundation
import JotterPostgres
import Synchronization
import Glibc
import Testing

@Suite(.enabled(if: TestDatabase.url != nil, TestDatabase.skipMessage))
struct PostgresPoolTests {
    /// Six threads of their own (not `concurrentPerform`, which on a loaded machine may run
    /// every iteration on one thread), each holding a connection until another is held too.
    @Test func poolNeverOpensMoreThanItsSize() throws {
        let pool = try PostgresPool(.init(url: TestDatabase.url!, size: 2, acquireTimeoutMilliseconds: 10_000))
        let busiest = Atomic<Int>(0)
        let inside = Atomic<Int>(0)
        let errors = Mutex<[PostgresError.Kind]>([])
        let group = DispatchGroup()
        for _ in 0..<6 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    try pool.withConnection { connection in
                        busiest.max(pool.openConnections, ordering: .relaxed)
                        inside.add(1, ordering: .relaxed)
                        // Wait (up to 5 s) until a second thread holds a connection too.
                        let deadline = ContinuousClock.now + .seconds(5)
                        while inside.load(ordering: .relaxed) < 2, ContinuousClock.now < deadline { usleep(1000) }
                        _ = try connection.query("SELECT pg_sleep(0.05)")
                    }
                } catch let error as PostgresError {
                    errors.withLock { $0.append(error.kind) }
                } catch {
                    Issue.record("\(error)")
                }
            }.start()
        }
        group.wait()
        #expect(busiest.load(ordering: .relaxed) <= 2)
        #expect(errors.withLock { $0 }.isEmpty)
        #expect(pool.openConnections == 2)
        #expect(pool.idleConnections == 2)
    }

    @Test func waitingTooLongIsPoolTimeout() throws {
        let pool = try PostgresPool(.init(url: TestDatabase.url!, size: 1, acquireTimeoutMilliseconds: 100))
        let started = ContinuousClock.now
        let error = try pool.withConnection { _ in
            postgresError { try pool.withConnection { _ in } }
        }
        #expect(error?.kind == .poolTimeout)
        #expect(error?.isTransient == true)
        #expect(ContinuousClock.now - started >= .milliseconds(100))
        // The slot came back: the pool works again.
        #expect(try pool.withConnection { try $0.query("SELECT 1")[0].value(0, as: Int.self) } == 1)
    }

    @Test func transactionRunsAgainAfterSerializationFailure() throws {
        let pool = try PostgresPool(.init(url: TestDatabase.url!, size: 2))
        let other = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("retry")
        try other.execute("CREATE TABLE \(table) (id integer PRIMARY KEY, n integer); INSERT INTO \(table) VALUES (1, 0)")
        defer { _ = try? other.execute("DROP TABLE \(table)") }
        var runs = 0
        let final: Int = try pool.transaction(isolation: .serializable) { connection in
            runs += 1
            let n: Int = try connection.query("SELECT n FROM \(table) WHERE id = $1", [1])[0].value(0)
            if runs == 1 { try other.query("UPDATE \(table) SET n = n + 100 WHERE id = $1", [1]) }
            return try connection.query("UPDATE \(table) SET n = $1 WHERE id = $2 RETURNING n", [n + 1, 1])[0].value(0)
        }
        #expect(runs == 2)
        #expect(final == 101)
    }

    @Test func nonRetryableErrorsAreNotRetried() throws {
        let pool = try PostgresPool(.init(url: TestDatabase.url!, size: 1))
        var runs = 0
        let error = postgresError {
            try pool.transaction { connection in
                runs += 1
                try connection.query("SELECT 1/0")
            }
        }
        #expect(error?.sqlState == "22012")
        #expect(runs == 1)
    }

    @Test func poolReplacesATerminatedConnection() throws {
        let pool = try PostgresPool(.init(url: TestDatabase.url!, size: 1))
        let firstPID = try pool.withConnection { $0.backendPID }
        let killer = try TestDatabase.connect()
        #expect(try killer.query("SELECT pg_terminate_backend($1)", [firstPID])[0].value(0) == true)
        // Wait until the backend process has exited — then its socket is closed and the FIN is
        // on its way — and the next check-out notices before any query. (It leaves
        // pg_stat_activity before it exits: waiting for that alone let the check-out find the
        // socket still open on a loaded machine.)
        for _ in 0..<500 {
            if kill(pid_t(firstPID), 0) != 0 && errno == ESRCH { break }
            usleep(10_000)
        }
        usleep(20_000)
        let (secondPID, one) = try pool.withConnection { connection in
            (connection.backendPID, try connection.query("SELECT 1")[0].value(0, as: Int.self))
        }
        #expect(one == 1)
        #expect(secondPID != firstPID)
        #expect(pool.openConnections == 1)
    }

    @Test func closedPoolRefusesCheckOut() throws {
        let pool = try PostgresPool(.init(url: TestDatabase.url!, size: 1))
        try pool.withConnection { _ in }
        pool.close()
        #expect(pool.openConnections == 0)
        #expect(postgresError { try pool.withConnection { _ in } }?.kind == .unavailable)
    }
}
