import Foundation

/// The program scripts/test-services gives in `JOTTER_TEST_POSTGRES_RESTART`: it restarts the
/// test PostgreSQL server (immediate stop, same port), dropping every connection; `run("stop")`
/// and `run("start")` take it away and bring it back.
public enum PostgresRestart {
    public static let program = ProcessInfo.processInfo.environment["JOTTER_TEST_POSTGRES_RESTART"]

    /// Runs the program and waits for it.
    public static func run(_ action: String = "restart") throws {
        guard let program else { throw RestartError(message: "JOTTER_TEST_POSTGRES_RESTART is not set") }
        let status = waitForExit(try spawnProgram([program, action]))
        guard status == 0 else { throw RestartError(message: "\(program) failed (wait status \(status))") }
    }

    public struct RestartError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
