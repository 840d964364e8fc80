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
        UploadsCommand.self,
        BackupCommand.self, RestoreCommand.self, ExportCommand.self, ImportCommand.self,
        UsersCommand.self, TokensCommand.self, LoginCommand.self, LogoutCommand.self, CompletionCommand.self,
    ]

    /// Every command's path, subcommands and options: what the completions and the manual page are made from.
    static var tree: CommandTree { CommandTree(commands, rootOptions: ClientOptions.options) }

    static var help: String {
        """
        USAGE: jotter [--server URL] [--token TOKEN] [--json] <command> [options]

        Jotter: notes, uploads and hello, served over HTTP.

        COMMANDS:
        \(commandList(commands))

        OPTIONS:
        \(Option.listing(ClientOptions.options))
          -h, --help                    Show help (also after any command: jotter notes edit --help).
          --version                     Show the version.

        jotter help COMMAND shows a command's help, jotter help --man the manual page; jotter
        completion bash|zsh|fish prints a shell completion script.

        Client commands talk to --server URL (JOTTER_SERVER, default \(ClientOptions.defaultServer)); it, --token and
        --json may come before the command or after it. A command that prints no JSON refuses --json.

        \(ExitCode.help)

        """
    }

    /// Runs `arguments` (without the program name) and returns the exit code.
    ///
    /// Client commands run on the concurrency pool while this thread waits: call it from a
    /// thread outside the pool (`main.swift`), or use the `async` overload.
    public static func run(
        _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        console: Console = .standard
    ) -> Int32 {
        switch resolve(arguments, environment: environment, console: console) {
        case .done(let status):
            return status
        case .async(let command, let path):
            let outcome = Outcome()
            Task.detached {
                let status = await runAsync(command, path: path, console: console)
                outcome.finish(status)
            }
            return outcome.wait()
        }
    }

    /// Runs `arguments` from async code (tests, or an app embedding the CLI).
    public static func run(
        _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        console: Console = .standard
    ) async -> Int32 {
        switch resolve(arguments, environment: environment, console: console) {
        case .done(let status):
            return status
        case .async(let command, let path):
            return await runAsync(command, path: path, console: console)
        }
    }

    private static func runAsync(_ command: any AsyncCommand, path: String, console: Console) async -> Int32 {
        do { return try await command.run(console: console) } catch { return report(error, command: path, console: console) }
    }

    /// What is left to do: nothing but exit (help, a usage error, a blocking command that has
    /// run), or an async command to await (and the command's words, for its errors).
    enum Invocation {
        case done(Int32)
        case async(any AsyncCommand, path: String)
    }

    static func resolve(_ arguments: [String], environment: [String: String], console: Console) -> Invocation {
        // Client options may come before the command, as with gh and kubectl.
        let (global, arguments) = leadingClientOptions(arguments)
        guard let first = arguments.first else {
            console.err(help)
            return .done(ExitCode.usage)
        }
        switch first {
        case "-h", "--help":
            console.out(help)
            return .done(ExitCode.success)
        case "help":
            var words = Array(arguments.dropFirst())
            if words.contains("--man") {
                words.removeAll { $0 == "--man" }
                guard words.isEmpty else {
                    console.err("error: jotter help --man prints the whole manual: no command with it\nSee 'jotter --help'.\n")
                    return .done(ExitCode.usage)
                }
                console.out(tree.man)
                return .done(ExitCode.success)
            }
            let (type, path, rest) = lookUp(words)
            console.out(type.flatMap { rest.isEmpty ? $0.help(path) : nil } ?? help)
            return .done(ExitCode.success)
        case "--version":
            console.out("jotter \(version)\n")
            return .done(ExitCode.success)
        default:
            break
        }
        let (found, path, rest) = lookUp(arguments)
        guard let type = found else {
            let what = first.hasPrefix("-") ? "unknown option '\(first)'" : "unknown command '\(first)'"
            console.err("error: \(what)\nSee 'jotter --help'.\n")
            return .done(ExitCode.usage)
        }
        if Arguments.wantsHelp(rest) {
            console.out(type.help(path))
            return .done(ExitCode.success)
        }
        do {
            if !type.subcommands.isEmpty, let next = rest.first, !next.hasPrefix("-") {
                throw UsageError("unknown subcommand '\(next)' of \(type.name)")
            }
            let parsed = try Arguments(global + rest, options: type.options, environment: environment)
            switch try type.start(parsed, console: console) {
            case .done(let status): return .done(status)
            case .async(let command): return .async(command, path: path)
            }
        } catch {
            return .done(report(error, command: path, console: console))
        }
    }

    /// The `--server URL` and `--json` before the command word, and the arguments after them.
    static func leadingClientOptions(_ arguments: [String]) -> (options: [String], rest: [String]) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            // Any option of `ClientOptions.options`, as its declaration says: a flag, `--name=value`
            // or `--name value`.
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            guard argument.hasPrefix("--"), let option = ClientOptions.options.first(where: { $0.names.contains(name) }) else { break }
            if option.value == nil || argument.contains("=") {
                index += 1
            } else if index + 1 < arguments.count {
                index += 2
            } else {
                break
            }
        }
        return (Array(arguments[..<index]), Array(arguments[index...]))
    }

    /// The command named by the leading words (`notes`, `notes edit`) and what follows them.
    static func lookUp(_ words: [String]) -> (type: (any Command.Type)?, path: String, rest: [String]) {
        guard let first = words.first, var type = commands.first(where: { $0.name == first }) else { return (nil, "jotter", words) }
        var rest = Array(words.dropFirst())
        var path = "jotter \(first)"
        while let next = rest.first, let sub = type.subcommands.first(where: { $0.name == next }) {
            type = sub
            path += " \(next)"
            rest.removeFirst()
        }
        return (type, path, rest)
    }

    /// Says what went wrong in one line (a usage error adds where the help is) and returns the
    /// exit code.
    static func report(_ error: any Error, command: String, console: Console) -> Int32 {
        switch error {
        case let failure as CommandFailure:
            console.err("error: \(failure.message)\n")
            return failure.status
        case let client as JotterClientError:
            let failure = CommandFailure(client)
            console.err("error: \(failure.message)\n")
            return failure.status
        case let foundation as CocoaError:
            // Its description is a dump of its fields; its localized description is a sentence.
            console.err("error: \(foundation.localizedDescription)\n")
            return ExitCode.failure
        default:
            return console.report(error, command: command)
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
