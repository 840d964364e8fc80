#if canImport(FoundationEssentials)
import JotterCLICore
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import JotterAPI
import JotterClient
import Synchronization

/// The `jotter` command line: `jotter [--help|--version] COMMAND [SUBCOMMAND] [OPTIONS]`.
///
/// ```swift
/// let status = JotterCommandLine.run(["serve", "--port", "0"])            // from main.swift
/// let status = await JotterCommandLine.run(["notes", "list", "--json"])   // from async code
/// ```
public enum JotterCommandLine {
    public static let version = JotterBuild.version

    static let commands: [any Command.Type] = [
        ServeCommand.self, HelloCommand.self, EchoCommand.self, NotesCommand.self, UploadCommand.self, DownloadCommand.self,
        BackupCommand.self, RestoreCommand.self, ExportCommand.self, ImportCommand.self,
    ]

    static var help: String {
        """
        USAGE: jotter <command> [options]

        Jotter: notes, uploads and hello, served over HTTP.

        COMMANDS:
        \(listing(commands))

        OPTIONS:
          -h, --help     Show help (also after any command: jotter notes edit --help).
          --version      Show the version.

        Client commands talk to --server URL (JOTTER_SERVER, default \(ClientOptions.defaultServer)).

        \(ExitCode.help)

        """
    }

    /// `  name   summary` lines, aligned.
    static func listing(_ commands: [any Command.Type]) -> String {
        let width = commands.map { $0.name.count }.max() ?? 0
        return commands.map { "  \($0.name + String(repeating: " ", count: width + 2 - $0.name.count))\($0.summary)" }.joined(separator: "\n")
    }

    /// Runs `arguments` (without the program name) and returns the exit code.
    ///
    /// Client commands run on the concurrency pool while this thread waits: call it from a
    /// thread outside the pool (`main.swift`), or use the `async` overload.
    public static func run(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
                           console: Console = .standard) -> Int32 {
        switch resolve(arguments, environment: environment, console: console) {
        case .done(let status):
            return status
        case .async(let command, let help):
            let outcome = Outcome()
            Task.detached {
                let status = await runAsync(command, help: help, console: console)
                outcome.finish(status)
            }
            return outcome.wait()
        }
    }

    /// Runs `arguments` from async code (tests, or an app embedding the CLI).
    public static func run(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
                           console: Console = .standard) async -> Int32 {
        switch resolve(arguments, environment: environment, console: console) {
        case .done(let status):
            return status
        case .async(let command, let help):
            return await runAsync(command, help: help, console: console)
        }
    }

    private static func runAsync(_ command: any AsyncCommand, help: String, console: Console) async -> Int32 {
        do { return try await command.run(console: console) } catch { return report(error, help: help, console: console) }
    }

    /// What is left to do: nothing but exit (help, a usage error, a blocking command that has
    /// run), or an async command to await.
    typealias Invocation = CommandInvocation

    static func resolve(_ arguments: [String], environment: [String: String], console: Console) -> Invocation {
        guard let first = arguments.first else {
            console.err(help)
            return .done(ExitCode.usage)
        }
        switch first {
        case "-h", "--help":
            console.out(help)
            return .done(ExitCode.success)
        case "help":
            let (type, rest) = lookUp(Array(arguments.dropFirst()))
            console.out(type.flatMap { rest.isEmpty ? $0.help : nil } ?? help)
            return .done(ExitCode.success)
        case "--version":
            console.out("jotter \(version)\n")
            return .done(ExitCode.success)
        default:
            break
        }
        let (found, rest) = lookUp(arguments)
        guard let type = found else {
            console.err("error: unknown command '\(first)'\n\n\(help)")
            return .done(ExitCode.usage)
        }
        if Arguments(rest, environment: environment).wantsHelp {
            console.out(type.help)
            return .done(ExitCode.success)
        }
        do {
            if !type.subcommands.isEmpty, let next = rest.first, !next.hasPrefix("-") {
                throw UsageError("unknown subcommand '\(next)' of \(type.name)")
            }
            var parsed = Arguments(rest, environment: environment)
            return try type.start(&parsed, console: console)
        } catch {
            return .done(report(error, help: type.help, console: console))
        }
    }

    /// The command named by the leading words (`notes`, `notes edit`) and what follows them.
    static func lookUp(_ words: [String]) -> (type: (any Command.Type)?, rest: [String]) {
        guard let first = words.first, var type = commands.first(where: { $0.name == first }) else { return (nil, words) }
        var rest = Array(words.dropFirst())
        while let next = rest.first, let sub = type.subcommands.first(where: { $0.name == next }) {
            type = sub
            rest.removeFirst()
        }
        return (type, rest)
    }

    /// Says what went wrong in one line (a usage error adds the usage) and returns the exit code.
    static func report(_ error: any Error, help: String, console: Console) -> Int32 {
        switch error {
        case let failure as CommandFailure:
            console.err("error: \(failure.message)\n")
            return failure.status
        case let client as JotterClientError:
            let failure = CommandFailure(client)
            console.err("error: \(failure.message)\n")
            return failure.status
        default:
            return console.report(error, help: help)
        }
    }
}

/// The exit code of a command run on the pool, handed to the thread that waits for it.
private final class Outcome: Sendable {
    private let status = Mutex<Int32>(ExitCode.failure)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ value: Int32) {
        status.withLock { $0 = value }
        done.signal()
    }

    func wait() -> Int32 {
        done.wait()
        return status.withLock { $0 }
    }
}
