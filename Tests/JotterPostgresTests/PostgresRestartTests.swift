import JotterPostgres
import JotterTestSupport
import Testing

/// Takes the whole server away, so it runs in the TIMING_TESTS pass, alone.
@Suite(.tags(.timing), .serialized, .enabled(if: TestDatabase.url != nil && TestDatabase.restartProgram != nil, TestDatabase.skipMessage))
struct PostgresRestartTests {
    @Test func poolComesBackAfterServerRestart() throws {
        let pool = try PostgresPool(.init(url: TestDatabase.url!, size: 2))
        let before = try pool.withConnection { $0.backendPID }
        // A connection held across the restart reports the loss; the pool opens a new one.
        let held = try TestDatabase.connect()
        try TestDatabase.restartServer()
        let lost = postgresError { try held.query("SELECT 1") }
        #expect(lost?.kind == .connectionLost)
        let after: Int = try pool.transaction { connection in
            try connection.query("SELECT pg_backend_pid()")[0].value(0)
        }
        #expect(after != before)
    }
}
