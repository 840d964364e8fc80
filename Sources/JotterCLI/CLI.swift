#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// Where a command writes: standard output and error by default, strings in tests.
public struct Console: Sendable {
    public var out: @Sendable (String) -> Void
    public var err: @Sendable (String) -> Void

    public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void) {
        self.out = out
        self.err = err
    }

    /// The process's standard output and error.
    public static let standard = Console(out: { write(1, $0) }, err: { write(2, $0) })

    private static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

/// Exit codes of `jotter`, documented in `jotter --help`.
public enum ExitCode {
    public static let success: Int32 = 0
    public static let failure: Int32 = 1
    public static let usage: Int32 = 2
}

/// A `jotter` subcommand: its help, how it reads its arguments, and what it does.
protocol Command: SendableMetatype {
    static var name: String { get }
    static var summary: String { get }
    /// The full `--help` text.
    static var help: String { get }
    init(parsing arguments: inout Arguments) throws
    func run(console: Console) throws -> Int32
}

extension Command {
    /// Reads the arguments into a command and runs it.
    static func parseAndRun(_ arguments: [String], environment: [String: String], console: Console) throws -> Int32 {
        var parsed = Arguments(arguments, environment: environment)
        let command = try Self(parsing: &parsed)
        return try command.run(console: console)
    }
}

/// The `jotter` command line: `jotter [--help|--version] COMMAND [OPTIONS]`.
///
/// ```swift
/// let status = JotterCommandLine.run(["serve", "--port", "0"])
/// ```
public enum JotterCommandLine {
    public static let version = "0.1.0"

    static let commands: [any Command.Type] = [ServeCommand.self]

    static var help: String {
        let width = commands.map { $0.name.count }.max() ?? 0
        let list = commands.map { "  \($0.name + String(repeating: " ", count: width + 2 - $0.name.count))\($0.summary)" }.joined(separator: "\n")
        return """
        USAGE: jotter <command> [options]

        Jotter: notes, uploads and hello, served over HTTP.

        COMMANDS:
        \(list)

        OPTIONS:
          -h, --help     Show help (also after any command: jotter serve --help).
          --version      Show the version.

        EXIT CODES:
          0  success    1  failure (e.g. the port is in use)    2  usage error

        """
    }

    /// Runs `arguments` (without the program name) and returns the exit code.
    public static func run(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
                           console: Console = .standard) -> Int32 {
        guard let first = arguments.first else {
            console.err(help)
            return ExitCode.usage
        }
        switch first {
        case "-h", "--help", "help":
            if first == "help", arguments.count > 1, let command = commands.first(where: { $0.name == arguments[1] }) {
                console.out(command.help)
            } else {
                console.out(help)
            }
            return ExitCode.success
        case "--version":
            console.out("jotter \(version)\n")
            return ExitCode.success
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            console.err("error: unknown command '\(first)'\n\n\(help)")
            return ExitCode.usage
        }
        let rest = Array(arguments.dropFirst())
        if Arguments(rest, environment: environment).wantsHelp {
            console.out(command.help)
            return ExitCode.success
        }
        do {
            return try command.parseAndRun(rest, environment: environment, console: console)
        } catch let error as UsageError {
            console.err("error: \(error)\n\n\(command.help)")
            return ExitCode.usage
        } catch {
            console.err("error: \(error)\n")
            return ExitCode.failure
        }
    }
}
