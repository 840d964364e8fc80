import Foundation
import JotterBlobs
import JotterPostgres
import Testing
@testable import JotterStore

/// The PostgreSQL server of scripts/test-services (`make test` runs every test under it).
enum PostgresServer {
    static let url = ProcessInfo.processInfo.environment["JOTTER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    /// In CI the PostgreSQL tests must run: a missing server fails instead of skipping.
    static let required = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } ?? false
    static var available: Bool { url != nil }
    static let skipMessage: Comment = "JOTTER_TEST_POSTGRES_URL is not set: run under scripts/test-services (make test does)"

    /// `url` with its database replaced by `name`.
    static func url(database name: String) -> String {
        var components = URLComponents(string: url!)!
        components.path = "/" + name
        return components.string!
    }

    /// A new, empty database (the server's template1 copied), for one test.
    static func createDatabase() throws -> String {
        let name = "jotter_store_\(UInt64.random(in: 0...UInt64.max))"
        let admin = try PostgresConnection(url: url!)
        try admin.execute("CREATE DATABASE \(name)")
        return name
    }

    static func dropDatabase(_ name: String) {
        guard let admin = try? PostgresConnection(url: url!) else { return }
        _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }
}

extension StoreFixture {
    /// The PostgreSQL store of a `.postgres` fixture.
    var postgres: PostgresStore { store as! PostgresStore }
    /// Its database's URL.
    var url: String { database!.url }
    /// A connection of the test's own to the store's database.
    func connect() throws -> PostgresConnection { try PostgresConnection(url: url) }
}

@Suite("PostgreSQL tests are run when they must be")
struct PostgresAvailabilityTests {
    @Test func serverIsGivenInCI() {
        if PostgresServer.required {
            #expect(PostgresServer.available, "CI is set but JOTTER_TEST_POSTGRES_URL is not: the PostgreSQL store tests would not run")
        }
    }
}
