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
    /// The note changed meanwhile (`If-Match` failed, `412`), or its state does not allow the
    /// change now (`409`: in the trash, a merge that can't be made, a limit reached): nothing
    /// was written.
    public static let conflict: Int32 = 4
    /// The server could not be reached.
    public static let unreachable: Int32 = 5
    /// The server refused the request as invalid or too large (400, 413, 415, 422).
    public static let refused: Int32 = 6

    package static let help = """
        EXIT CODES:
          0  success                 4  conflict: the note changed or is in the trash; nothing saved
          1  failure                 5  server unreachable
          2  usage error             6  refused by the server: invalid or too large
          3  not found
        """
}

/// A `jotter` command or command group: its help and how it reads its arguments.
///
/// Its operands and options are declared once, as its properties (`@Operand`, `@Value`,
/// `@Group`: see `ParsableArguments`): the parser reads the arguments against them, and the
/// usage line, `help`, the man page and the completions are made from them.
package protocol Command: SendableMetatype {
    static var name: String { get }
    static var summary: String { get }
    /// What the command does, for its help.
    static var about: String { get }
    /// How the usage line shows its positional arguments (`ID`, `PATH…`); none by default.
    static var operandsUsage: String { get }
    /// The name of its first operand (`ID`, `FILE`, `bash|zsh|fish`), what completion offers;
    /// `nil` when it takes none.
    static var firstOperand: String? { get }
    /// Its options (`-h, --help` is implied).
    static var options: [Option] { get }
    /// Other ways to call it, each after the command's path, with what it does then
    /// (`("- [options]", "the text from standard input")`); none by default.
    static var otherUsages: [(arguments: String, note: String)] { get }
    /// What the first usage line shows, where `otherUsages` give the other forms: whether its
    /// operands (true by default) and which options (all by default).
    static var usageShowsOperands: Bool { get }
    static var usageOptions: [Option] { get }
    /// The usage lines, after `USAGE: `, of the command at `path` (`jotter notes add`): from its
    /// operands and options (`jotter notes add TEXT… [options]`), wrapped at 92 columns.
    static func usage(_ path: String) -> String
    /// The full `--help` text of the command at `path`: usage, about, options.
    static func help(_ path: String) -> String
    /// The subcommands of a group such as `notes`; empty for a command that runs.
    static var subcommands: [any Command.Type] { get }
    /// Reads the arguments and starts the command: a blocking one runs to its end right here,
    /// an async one is handed back to be awaited.
    static func start(_ arguments: Arguments, console: Console) throws -> CommandInvocation
}

extension Command {
    package static var subcommands: [any Command.Type] { [] }
    package static var options: [Option] { [] }
    package static var otherUsages: [(arguments: String, note: String)] { [] }
    package static var usageShowsOperands: Bool { true }
    package static var usageOptions: [Option] { options }
    package static var operandsUsage: String { "" }
    package static var firstOperand: String? { nil }

    package static func usage(_ path: String) -> String {
        let words = [path] + (operandsUsage.isEmpty || !usageShowsOperands ? [] : [operandsUsage]) + Option.usage(usageOptions)
        // `USAGE: ` and the path, then the words wrapped below the first after the path.
        let indent = String(repeating: " ", count: path.count + 1)
        var lines = [words[0]]
        for word in words.dropFirst() {
            if 7 + lines[lines.count - 1].count + 1 + word.count > 92, lines[lines.count - 1].count > path.count + 1 {
                lines.append(indent + word)
            } else {
                lines[lines.count - 1] += " " + word
            }
        }
        let forms = otherUsages.map { "\(path) \($0.arguments)" }
        let width = forms.map(\.count).max() ?? 0
        lines += zip(forms, otherUsages).map { form, usage in
            form + String(repeating: " ", count: width - form.count) + "     (\(usage.note))"
        }
        return lines.enumerated().map { $0.offset == 0 ? $0.element : "       " + $0.element }.joined(separator: "\n")
    }

    package static func help(_ path: String) -> String {
        "USAGE: \(usage(path))\n\n\(about)\n\nOPTIONS:\n\(Option.listing(options + [.help]))\n\n"
    }
}

/// `  name   summary` lines, aligned: a group's subcommands, `jotter`'s commands.
package func commandList(_ commands: [any Command.Type]) -> String {
    let width = commands.map { $0.name.count }.max() ?? 0
    return commands.map { "  \($0.name + String(repeating: " ", count: width + 2 - $0.name.count))\($0.summary)" }.joined(separator: "\n")
}

/// A command that keeps the calling thread (`serve`: it blocks its stop signals there and
/// waits for them in `sigwait`).
package protocol BlockingCommand: Command {
    /// Reads the arguments: the one `ParsableArguments` gives, from the declared properties.
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
    /// Reads the arguments: the one `ParsableArguments` gives, from the declared properties.
    init(parsing arguments: Arguments) throws
    func run(console: Console) async throws -> Int32
}

extension AsyncCommand {
    package static func start(_ arguments: Arguments, console: Console) throws -> CommandInvocation {
        .async(try Self(parsing: arguments))
    }
}

/// A group of subcommands, such as `notes`: it lists them; run alone, it is a usage error. Its
/// `about` follows the list in its help.
package protocol CommandGroup: Command {}

extension CommandGroup {
    package static func usage(_ path: String) -> String { "\(path) <subcommand> [options]" }

    package static func help(_ path: String) -> String {
        "USAGE: \(usage(path))\n\nSUBCOMMANDS:\n\(commandList(subcommands))\n\n\(about)\n"
    }

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
