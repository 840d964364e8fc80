import Foundation
import JotterPostgres
import Testing

/// The keepalives and timeouts every session of Jotter's has (`PostgresConnection.SessionLimits`):
/// an instance that stalls or dies inside a transaction cannot hold a lock the others wait for.
@Suite(.enabled(if: TestDatabase.url != nil, TestDatabase.skipMessage))
struct PostgresSessionLimitsTests {
    @Test("every session has its keepalives and timeouts; a URL's own options win")
    func limitsAreSet() throws {
        let connection = try TestDatabase.connect()
        func show(_ name: String, on db: PostgresConnection) throws -> String { try db.query("SELECT current_setting($1)", [name])[0].value(0) }
        #expect(try show("lock_timeout", on: connection) == "10s")
        #expect(try show("idle_in_transaction_session_timeout", on: connection) == "10s")
        // The test server is reached over TCP (127.0.0.1), where the server's probes apply.
        #expect(try show("tcp_keepalives_idle", on: connection) == "10")
        #expect(try show("tcp_keepalives_interval", on: connection) == "5")
        #expect(try show("tcp_keepalives_count", on: connection) == "3")

        let separator = TestDatabase.url!.contains("?") ? "&" : "?"
        let own = try PostgresConnection(url: TestDatabase.url! + separator + "options=-c%20lock_timeout%3D1234")
        #expect(try show("lock_timeout", on: own) == "1234ms")
    }

    @Test("a session idle inside a transaction is ended and its row locks freed; a lock wait ends at lock_timeout")
    func stalledSessionsLetGo() throws {
        let table = TestDatabase.uniqueName("held")
        let setup = try TestDatabase.connect()
        try setup.execute("CREATE TABLE \(table) (id int PRIMARY KEY); INSERT INTO \(table) VALUES (1)")
        defer { _ = try? setup.execute("DROP TABLE \(table)") }

        // A takes the row and stalls (a process stopped, say) while its transaction is open.
        let stalled = try PostgresConnection(url: TestDatabase.url!, limits: .init(idleInTransactionMilliseconds: 500))
        try stalled.execute("BEGIN; SELECT * FROM \(table) FOR UPDATE")
        let waiter = try PostgresConnection(url: TestDatabase.url!, limits: .init(lockTimeoutMilliseconds: 5_000))
        let clock = ContinuousClock()
        let waited = try clock.measure { try waiter.execute("UPDATE \(table) SET id = 2 WHERE id = 1") }
        #expect(waited >= .milliseconds(400) && waited < .seconds(4), "freed when the idle session was ended, not at the lock timeout: \(waited)")
        #expect(postgresError { try stalled.execute("SELECT 1") }?.kind == .connectionLost)

        // A holder that is not idle keeps its lock; the waiter gives up at its lock_timeout, a 503.
        let holder = try TestDatabase.connect()
        try holder.execute("BEGIN; SELECT * FROM \(table) FOR UPDATE")
        let impatient = try PostgresConnection(url: TestDatabase.url!, limits: .init(lockTimeoutMilliseconds: 300))
        var error: PostgresError?
        let gaveUp = clock.measure { error = postgresError { try impatient.execute("UPDATE \(table) SET id = 3") } }
        #expect(error?.kind == .lockTimeout && error?.isTransient == true)
        #expect(gaveUp >= .milliseconds(250) && gaveUp < .seconds(5), "\(gaveUp)")
        try holder.execute("ROLLBACK")
        try impatient.execute("UPDATE \(table) SET id = 3")
    }
}
