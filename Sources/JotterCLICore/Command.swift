#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// Where a command writes and reads: the process's standard streams by default, strings in tests.
public struct Console: Sendable {
    public var out: @Sendable (String) -> Void
    public var err: @Sendable (String) -> Void
    /// Bytes to standard output as they are (`download -o -`).
    public var outBytes: @Sendable ([UInt8]) -> Void
    /// True when standard error is a terminal: progress bars are drawn there, else one line
    /// per file.
    public var isTerminal: Bool
    /// True when standard output is a terminal: text from the server is printed with its
    /// control characters made visible.
    public var outputIsTerminal: Bool
    /// Everything on standard input (`notes add -`).
    public var readInput: @Sendable () -> [UInt8]

    public init(
        out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void,
        outBytes: (@Sendable ([UInt8]) -> Void)? = nil, isTerminal: Bool = false, outputIsTerminal: Bool = false,
        readInput: @escaping @Sendable () -> [UInt8] = { [] }
    ) {
        self.out = out
        self.err = err
        self.outBytes = outBytes ?? { out(String(decoding: $0, as: UTF8.self)) }
        self.isTerminal = isTerminal
        self.outputIsTerminal = outputIsTerminal
        self.readInput = readInput
    }

    /// The process's standard output, error and input.
    public static let standard = Console(
        out: { write(1, $0) }, err: { write(2, $0) }, outBytes: { write(1, $0) },
        isTerminal: isatty(2) == 1, outputIsTerminal: isatty(1) == 1, readInput: readAll)

    private static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { write(fd, $0) }
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { write(fd, $0) }
    }

    private static func write(_ fd: Int32, _ buffer: UnsafeBufferPointer<UInt8>) {
        var offset = 0
        while offset < buffer.count {
            let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }

    private static func readAll() -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(0, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return bytes }
            bytes += chunk[..<count]
        }
    }
}

/// Exit codes of `jotter`, documented in `jotter --help`.
public enum ExitCode {
    public static let success: Int32 = 0
    /// Anything else: the port is in use, a local file can't be read, the server failed.
    public static let failure: Int32 = 1
    public static let usage: Int32 = 2
    /// No such note or upload.
    public static let notFound: Int32 = 3
    /// The note changed meanwhile (`If-Match` failed): nothing was written.
    public static let conflict: Int32 = 4
    /// The server could not be reached.
    public static let unreachable: Int32 = 5
    /// The server refused the request as invalid or too large (400, 413, 415, 422).
    public static let refused: Int32 = 6

    package static let help = """
        EXIT CODES:
          0  success                 4  conflict: the note changed meanwhile, nothing saved
          1  failure                 5  server unreachable
          2  usage error             6  refused by the server: invalid or too large
          3  not found
        """
}

/// A `jotter` command or command group: its help and how it reads its arguments.
///
/// Its options are declared once, in `options`: the parser reads the arguments against them and
/// `help` lists them.
package protocol Command: SendableMetatype {
    static var name: String { get }
    static var summary: String { get }
    /// The usage lines, after `USAGE: ` (`jotter notes add TEXT… [options]`).
    static var usage: String { get }
    /// What the command does, for its help.
    static var about: String { get }
    /// Its options (`-h, --help` is implied).
    static var options: [Option] { get }
    /// The full `--help` text: usage, about, options.
    static var help: String { get }
    /// The subcommands of a group such as `notes`; empty for a command that runs.
    static var subcommands: [any Command.Type] { get }
    /// Reads the arguments and starts the command: a blocking one runs to its end right here,
    /// an async one is handed back to be awaited.
    static func start(_ arguments: Arguments, console: Console) throws -> CommandInvocation
}

extension Command {
    package static var subcommands: [any Command.Type] { [] }
    package static var options: [Option] { [] }
    package static var help: String {
        "USAGE: \(usage)\n\n\(about)\n\nOPTIONS:\n\(Option.listing(options + [.help]))\n\n"
    }
}

/// A command that keeps the calling thread (`serve`: it blocks its stop signals there and
/// waits for them in `sigwait`).
package protocol BlockingCommand: Command {
    init(parsing arguments: Arguments) throws
    func run(console: Console) throws -> Int32
}

extension BlockingCommand {
    package static func start(_ arguments: Arguments, console: Console) throws -> CommandInvocation {
        .done(try Self(parsing: arguments).run(console: console))
    }
}

/// A command that talks to a server through the SDK.
package protocol AsyncCommand: Command, Sendable {
    init(parsing arguments: Arguments) throws
    func run(console: Console) async throws -> Int32
}

extension AsyncCommand {
    package static func start(_ arguments: Arguments, console: Console) throws -> CommandInvocation {
        .async(try Self(parsing: arguments))
    }
}

/// A group of subcommands, such as `notes`: it lists them; run alone, it is a usage error.
package protocol CommandGroup: Command {}

extension CommandGroup {
    package static var about: String { summary }
    package static func start(_ arguments: Arguments, console: Console) throws -> CommandInvocation {
        throw UsageError("missing subcommand: one of \(subcommands.map { $0.name }.joined(separator: ", "))")
    }
}

/// What starting a command gives: its exit code (it has run), or an async command to await.
package enum CommandInvocation {
    case done(Int32)
    case async(any AsyncCommand)
}

extension Console {
    /// Says what went wrong in one line (a usage error adds where the help is: `command` is
    /// `jotter notes add`) and returns the exit code.
    package func report(_ error: any Error, command: String) -> Int32 {
        if let usage = error as? UsageError {
            err("error: \(usage)\nSee '\(command) --help'.\n")
            return ExitCode.usage
        }
        err("error: \(error)\n")
        return ExitCode.failure
    }
}
