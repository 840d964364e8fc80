import Foundation
import JotterPostgres
import JotterTestSupport
import Testing

/// The throwaway cluster scripts/test-services starts (make test always runs under it).
enum TestDatabase {
    static let url = ProcessInfo.processInfo.environment["JOTTER_TEST_POSTGRES_URL"]
    static let restartProgram = ProcessInfo.processInfo.environment["JOTTER_TEST_POSTGRES_RESTART"]
    static let skipMessage: Comment = "JOTTER_TEST_POSTGRES_URL is not set: run under scripts/test-services (make test does)"

    static func connect() throws -> PostgresConnection {
        try PostgresConnection(url: url!)
    }

    /// A table name no other test uses.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UInt64.random(in: 0...UInt64.max))"
    }

    /// Runs the program that restarts the test server (immediate stop), waiting for it.
    static func restartServer() throws {
        do {
            try PostgresRestart.run()
        } catch {
            throw PostgresError(kind: .other, message: "\(error)")
        }
    }
}

/// The error `body` threw, as a `PostgresError` (recording an issue when it threw none or another).
func postgresError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> PostgresError? {
    do {
        try body()
        Issue.record("no error thrown", sourceLocation: sourceLocation)
    } catch let error as PostgresError {
        return error
    } catch {
        Issue.record("not a PostgresError: \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
