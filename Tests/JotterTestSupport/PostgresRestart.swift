import Foundation

/// The program scripts/test-services gives in `JOTTER_TEST_POSTGRES_RESTART`: it restarts the
/// test PostgreSQL server (immediate stop, same port), dropping every connection; `run("stop")`
/// and `run("start")` take it away and bring it back.
public enum PostgresRestart {
    public static let program = ProcessInfo.processInfo.environment["JOTTER_TEST_POSTGRES_RESTART"]

    /// Runs the program and waits for it. (posix_spawn and waitpid: Foundation's
    /// `Process.waitUntilExit` can miss the exit when called from a Swift Testing task. The
    /// child gets no blocked signals and default handlers, which the server it starts relies on.)
    public static func run(_ action: String = "restart") throws {
        guard let program else { throw RestartError(message: "JOTTER_TEST_POSTGRES_RESTART is not set") }
        var pid: pid_t = 0
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
            var argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), strdup(action), nil]
            defer { free(argv[0]); free(argv[1]) }
            return posix_spawn(&pid, path, nil, &attributes, &argv, environ)
        }
        guard spawned == 0 else { throw RestartError(message: "cannot run \(program): \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        guard status == 0 else { throw RestartError(message: "\(program) failed (wait status \(status))") }
    }

    public struct RestartError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
