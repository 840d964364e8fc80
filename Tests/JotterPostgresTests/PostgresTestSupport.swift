import Foundation
import JotterPostgres
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
    /// (posix_spawn and waitpid: Foundation's `Process.waitUntilExit` can miss the exit when
    /// called from a Swift Testing task. The child gets no blocked signals and default
    /// handlers, which the server it starts relies on.)
    static func restartServer() throws {
        var pid: pid_t = 0
        let program = restartProgram!
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let spawned = program.withCString { path in
            var argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), nil]
            defer { free(argv[0]) }
            return posix_spawn(&pid, path, nil, &attributes, &argv, environ)
        }
        guard spawned == 0 else { throw PostgresError(kind: .other, message: "cannot run \(program): \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        guard status == 0 else { throw PostgresError(kind: .other, message: "\(program) failed (wait status \(status))") }
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
