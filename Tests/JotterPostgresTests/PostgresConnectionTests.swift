import Foundation
import JotterPostgres
import Testing

@Suite(.enabled(if: TestDatabase.url != nil, TestDatabase.skipMessage))
struct PostgresConnectionTests {
    @Test func typedParametersRoundTrip() throws {
        let connection = try TestDatabase.connect()
        let row = try #require(
            try connection.query(
                "SELECT $1::text, $2::bigint, $3::integer, $4::boolean, $5::double precision, $6::bytea, $7::text, $8::bigint, pg_current_xact_id()",
                ["it's \"quoted\" — café ✓", Int64.min, -42, true, 0.25, PostgresBytes([0, 1, 0xfe, 0xff]), nil, nil]
            ).first)
        #expect(try row.value(0) == "it's \"quoted\" — café ✓")
        #expect(try row.value(1) == Int64.min)
        #expect(try row.value(2) == -42)
        #expect(try row.value(3) == true)
        #expect(try row.value(4) == 0.25)
        #expect(try row.value(5) == PostgresBytes([0, 1, 0xfe, 0xff]))
        #expect(try row.value(6, as: String?.self) == nil)
        #expect(try row.value(7, as: Int?.self) == nil)
        #expect(try row.value(8, as: UInt64.self) > 0)
        // bytea goes as bytes: every value, NUL included, megabytes of it, and back.
        let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        let echoed = try connection.query("SELECT $1::bytea, length($1::bytea)", [PostgresBytes(large)])[0]
        #expect(try echoed.value(0, as: PostgresBytes.self).bytes == large)
        #expect(try echoed.value(1) == large.count)
        // NULL is an error for a non-optional type, and so is text of another type.
        #expect(postgresError { _ = try row.value(6, as: String.self) }?.kind == .decoding)
        #expect(postgresError { _ = try row.value(0, as: Int.self) }?.kind == .decoding)
        #expect(postgresError { _ = try row.value(9, as: Int.self) }?.kind == .decoding)
    }

    /// `int64(_:)` reads a column's text with no String made, as `value(_:as: Int64.self)` does:
    /// every length of number up to the limits and past them, signs, NULL and not a number.
    @Test func integersReadFromTheirBytes() throws {
        let connection = try TestDatabase.connect()
        var texts = [
            "0", "-0", "+7", "42", "-42", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "-9223372036854775809", "99999999999999999999", "12a", "-", "+", "", " 1", "1.5",
        ]
        var magnitude = "1"
        for _ in 0..<20 { texts += [magnitude, "-" + magnitude]; magnitude += "9" }
        let row = try #require(
            try connection.query(
                "SELECT " + (1...texts.count).map { "$\($0)::text" }.joined(separator: ", ") + ", NULL::bigint",
                texts
            ).first)
        for (column, text) in texts.enumerated() {
            let direct = try? row.int64(column), viaString = Int64(text)
            #expect(direct == viaString, "\(text)")
        }
        #expect(postgresError { _ = try row.int64(texts.count) }?.kind == .decoding)
        #expect(postgresError { _ = try row.int64(texts.count + 1) }?.kind == .decoding)
    }

    @Test("a parameter holding NUL is refused, never cut short")
    func nulIsRefused() throws {
        let connection = try TestDatabase.connect()
        let error = postgresError { _ = try connection.query("SELECT $1::text", ["before\0after"]) }
        #expect(error?.kind == .other)
        #expect(error?.message.contains("NUL") == true)
        #expect(try connection.query("SELECT $1::text", ["still usable"])[0].value(0) == "still usable")
    }

    @Test func parametersAreNeverSQL() throws {
        let connection = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("notes")
        try connection.execute("CREATE TABLE \(table) (id bigserial PRIMARY KEY, body text NOT NULL)")
        defer { _ = try? connection.execute("DROP TABLE \(table)") }
        let hostile = "x'); DROP TABLE \(table); --"
        let id: Int = try connection.query("INSERT INTO \(table) (body) VALUES ($1) RETURNING id", [hostile])[0].value("id")
        let rows = try connection.query("SELECT body FROM \(table) WHERE id = $1", [id])
        #expect(rows.count == 1)
        #expect(try rows[0].value("body") == hostile)
        #expect(rows.columns == ["body"])
    }

    @Test func statementsArePreparedOncePerConnection() throws {
        let connection = try TestDatabase.connect()
        for value in 1...3 {
            #expect(try connection.query("SELECT $1::integer + 1", [value])[0].value(0) == value + 1)
        }
        let prepared: Int = try connection.query(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", ["SELECT $1::integer + 1"])[0].value(0)
        #expect(prepared == 1)
    }

    @Test func affectedRowsCountsChanges() throws {
        let connection = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("counts")
        try connection.execute("CREATE TABLE \(table) (n integer); INSERT INTO \(table) SELECT generate_series(1, 5)")
        defer { _ = try? connection.execute("DROP TABLE \(table)") }
        #expect(try connection.query("UPDATE \(table) SET n = n + 1 WHERE n > $1", [2]).affectedRows == 3)
    }

    @Test func transactionCommitsOrRollsBack() throws {
        let connection = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("tx")
        try connection.execute("CREATE TABLE \(table) (n integer)")
        defer { _ = try? connection.execute("DROP TABLE \(table)") }
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try connection.transaction { connection in
                try connection.query("INSERT INTO \(table) VALUES ($1)", [1])
                throw Abandon()
            }
        }
        #expect(!connection.isInTransaction)
        try connection.transaction { connection in
            try connection.query("INSERT INTO \(table) VALUES ($1)", [2])
            #expect(connection.isInTransaction)
        }
        let values = try connection.query("SELECT n FROM \(table)").map { try $0.value(0, as: Int.self) }
        #expect(values == [2])
    }

    @Test func errorsAreClassifiedBySQLState() throws {
        let connection = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("unique")
        try connection.execute("CREATE TABLE \(table) (id text PRIMARY KEY)")
        defer { _ = try? connection.execute("DROP TABLE \(table)") }
        try connection.query("INSERT INTO \(table) VALUES ($1)", ["a"])
        let duplicate = postgresError { try connection.query("INSERT INTO \(table) VALUES ($1)", ["a"]) }
        #expect(duplicate?.kind == .uniqueViolation)
        #expect(duplicate?.sqlState == "23505")
        #expect(duplicate?.isRetryable == false)
        let syntax = postgresError { try connection.query("SELEKT $1::int", [1]) }
        #expect(syntax?.kind == .other)
        #expect(syntax?.sqlState == "42601")
        // The connection is still usable after errors.
        #expect(try connection.query("SELECT 1")[0].value(0) == 1)
    }

    @Test func serializationFailureIsRetryable() throws {
        let first = try TestDatabase.connect()
        let second = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("race")
        try first.execute("CREATE TABLE \(table) (id integer PRIMARY KEY, n integer); INSERT INTO \(table) VALUES (1, 0)")
        defer { _ = try? first.execute("DROP TABLE \(table)") }
        let error = postgresError {
            try first.transaction(isolation: .repeatableRead) { first in
                _ = try first.query("SELECT n FROM \(table) WHERE id = $1", [1])
                try second.query("UPDATE \(table) SET n = n + 1 WHERE id = $1", [1])
                try first.query("UPDATE \(table) SET n = n + 10 WHERE id = $1", [1])
            }
        }
        #expect(error?.kind == .serializationFailure)
        #expect(error?.sqlState == "40001")
        #expect(error?.isRetryable == true)
        #expect(!first.isInTransaction)
        #expect(try first.query("SELECT n FROM \(table)")[0].value(0) == 1)
    }

    @Test func badURLAndBadPasswordFailClearly() throws {
        #expect(postgresError { _ = try PostgresConnection(url: "postgres://[::1") }?.kind == .invalidURL)
        #expect(postgresError { _ = try PostgresConnection(url: "host=x nonsense_option=1") }?.kind == .invalidURL)
        var components = try #require(URLComponents(string: TestDatabase.url!))
        components.password = "wrong"
        let refused = postgresError { _ = try PostgresConnection(url: components.string!) }
        #expect(refused?.kind == .connectionFailed)
        #expect(refused?.message.contains("password") == true)
        #expect(refused?.isRetryable == true)
    }

    @Test func terminatedBackendIsConnectionLost() throws {
        let victim = try TestDatabase.connect()
        let killer = try TestDatabase.connect()
        #expect(try killer.query("SELECT pg_terminate_backend($1)", [victim.backendPID])[0].value(0) == true)
        let error = postgresError { try victim.query("SELECT 1") }
        #expect(error?.kind == .connectionLost)
        #expect(error?.isRetryable == true)
        #expect(!victim.isHealthy)
    }

    @Test func notificationsArriveOnListeningConnection() throws {
        let listener = try TestDatabase.connect()
        let sender = try TestDatabase.connect()
        let channel = TestDatabase.uniqueName("wake")
        try listener.execute("LISTEN \(channel)")
        #expect(try listener.notifications(timeoutMilliseconds: 0).isEmpty)
        try sender.query("SELECT pg_notify($1, $2)", [channel, "note 7"])
        var received: [PostgresNotification] = []
        for _ in 0..<50 where received.isEmpty {
            received = try listener.notifications(timeoutMilliseconds: 100)
        }
        #expect(received.map { [$0.channel, $0.payload, "\($0.senderPID)"] } == [[channel, "note 7", "\(sender.backendPID)"]])
    }
}
