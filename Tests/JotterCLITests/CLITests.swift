import Foundation
import Glibc
import Synchronization
import Testing
@testable import JotterCLI
@testable import JotterCLICore
import JotterServerTestSupport
import JotterTestSupport

/// Captures what a command prints.
final class Captured: Sendable {
    let out = Mutex("")
    let err = Mutex("")
    var console: Console {
        Console(out: { text in self.out.withLock { $0 += text } }, err: { text in self.err.withLock { $0 += text } })
    }
}

@Suite("jotter command line, in-process")
struct CLITests {
    func run(_ arguments: [String], environment: [String: String] = [:]) -> (status: Int32, out: String, err: String) {
        let captured = Captured()
        let status = JotterCommandLine.run(arguments, environment: environment, console: captured.console)
        return (status, captured.out.withLock { $0 }, captured.err.withLock { $0 })
    }

    @Test func helpAndVersion() {
        let help = run(["--help"])
        #expect(help.status == 0)
        #expect(help.out.contains("USAGE: jotter [--server URL] [--token TOKEN] [--json] <command>"))
        #expect(help.out.contains("serve"))
        #expect(run(["--version"]).out == "jotter \(JotterCommandLine.version)\n")
        let serveHelp = run(["serve", "--help"])
        #expect(serveHelp.status == 0)
        #expect(serveHelp.out.contains("--max-body-size"))
        #expect(run(["help", "serve"]).out == serveHelp.out)
    }

    @Test(
        "usage errors say what is wrong in one line, point to --help, exit 2",
        arguments: [
            (["serve", "--bogus"], "unknown option '--bogus'"),
            (["serve", "--port", "99999"], "--port must be a port number from 0 to 65535, not '99999'"),
            (["serve", "--port"], "--port needs a value"),
            (["serve", "--threads", "0"], "--threads must be a whole number from 1 to 256"),
            (["serve", "--max-body-size", "lots"], "--max-body-size must be a size"),
            (["serve", "--trash-days", "200000000000000"], "--trash-days must be a whole number of days from 1 to 36500"),
            (["serve", "--revision-days", "36501"], "--revision-days must be a whole number of days from 1 to 36500"),
            (["serve", "--feed-days", "0"], "--feed-days must be a whole number of days from 1 to 36500"),
            (["serve", "extra"], "unexpected argument 'extra'"),
            (["serve", "--quiet=yes"], "--quiet takes no value"),
            (["frobnicate"], "unknown command 'frobnicate'"),
        ])
    func usageErrors(_ arguments: [String], _ message: String) {
        let result = run(arguments)
        #expect(result.status == 2)
        let lines = result.err.split(separator: "\n")
        #expect(lines.first == "error: \(message)" || lines.first?.hasPrefix("error: \(message)") == true, "\(result.err)")
        #expect(lines.count == 2 && lines.last?.hasPrefix("See 'jotter") == true && lines.last?.hasSuffix(" --help'.") == true, "\(result.err)")
    }

    @Test("no command at all shows the usage, exit 2")
    func noCommand() {
        let result = run([])
        #expect(result.status == 2)
        #expect(result.err.contains("USAGE: jotter"))
    }

    /// `KEY=VALUE` lines read as systemd's `EnvironmentFile=` reads them: lines starting with
    /// `#` or `;` and empty lines skipped, the value everything after the first `=` (a
    /// trailing `# …` stays in it).
    static func environmentFile(_ text: String) -> [String: String] {
        var environment: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            guard !trimmed.isEmpty, trimmed.first != "#", trimmed.first != ";", let equals = trimmed.firstIndex(of: "=") else { continue }
            environment[String(trimmed[..<equals]).trimmingCharacters(in: .whitespaces)] =
                String(trimmed[trimmed.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
        }
        return environment
    }

    @Test("docs/deployment.md's instance environment, read as systemd's EnvironmentFile= reads it, is one jotter serve accepts")
    func deploymentEnvironmentFile() throws {
        let text = try String(contentsOf: InstallTests.root.appendingPathComponent("docs/deployment.md"), encoding: .utf8)
        let section = try #require(text.range(of: "### Configuring each instance"))
        let start = try #require(text.range(of: "```sh\n", range: section.upperBound..<text.endIndex))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        let environment = Self.environmentFile(String(text[start.upperBound..<end.lowerBound]))
        #expect(environment["JOTTER_DATABASE_POOL"] == "8")
        #expect(environment.values.allSatisfy { !$0.contains("#") }, "\(environment)")
        let command = try ServeCommand(parsing: try Arguments([], options: ServeCommand.options, environment: environment))
        #expect(command.configuration.host == "0.0.0.0")
        #expect(command.configuration.dataDirectory == "/var/lib/jotter")
        #expect(command.configuration.maxUploadSize == 1 << 30)
        #expect(command.configuration.blobStore?.hasPrefix("s3://jotter-uploads") == true)
    }

    @Test("counts read as English: 1 note, 1 upload, 0 files, 2 notes")
    func counts() {
        #expect(TextFormat.count(1, "note") == "1 note")
        #expect(TextFormat.count(1, "upload") == "1 upload")
        #expect(TextFormat.count(0, "file") == "0 files")
        #expect(TextFormat.count(2, "note") == "2 notes")
    }

    @Test("help text and parsing come from one declaration: every declared option is in the help, and parsed")
    func oneDeclaration() throws {
        for option in ServeCommand.options {
            #expect(ServeCommand.help("jotter serve").contains(option.names.joined(separator: ", ")), "\(option.key)")
            #expect(option.environment.map { ServeCommand.help("jotter serve").contains($0) } ?? true, "\(option.key)")
            // README gives the rule rather than the list: JOTTER_ and the name in capitals.
            let name = try #require(option.names.last).dropFirst(2).uppercased().replacingOccurrences(of: "-", with: "_")
            #expect(option.environment == (name == "DATABASE" ? "JOTTER_DATABASE_URL" : "JOTTER_" + name), "\(option.key)")
        }
        // A repeated flag is harmless; a repeated option keeps its last value.
        let arguments = try Arguments(["--quiet", "--quiet", "--port", "1", "--port=2"], options: ServeCommand.options, environment: [:])
        let command = try ServeCommand(parsing: arguments)
        #expect(command.configuration.port == 2)
        #expect(command.configuration.accessLog == false)
        // After --, everything is an argument, --help included.
        #expect(Arguments.wantsHelp(["--", "--help"]) == false)
        #expect(try Arguments(["--", "--help", "-x"], options: [], environment: [:]).positionals() == ["--help", "-x"])
    }

    @Test("a usage line comes from the command's path, operands and options: alternatives, required ones, [options], wrapping")
    func derivedUsage() throws {
        #expect(
            RestoreCommand.usage("jotter restore") == """
                jotter restore SRC --data DIR [--force] [--json]
                       jotter restore --database URL     (after pg_restore: start a new history on PostgreSQL)
                """)
        #expect(NotesShowCommand.usage("jotter notes show") == "jotter notes show ID [options]")
        #expect(
            NotesEditCommand.usage("jotter notes edit") == """
                jotter notes edit ID [TEXT…] [options]
                       jotter notes edit ID - [options]     (the text from standard input, less one final newline)
                """)
        #expect(TokensRevokeCommand.usage("jotter tokens revoke") == "jotter tokens revoke ID [--data DIR | --database URL | --server URL] [options]")
        #expect(ServeCommand.usage("jotter serve") == "jotter serve [options]")
        #expect(NotesCommand.usage("jotter notes") == "jotter notes <subcommand> [options]")
        #expect(
            NotesListCommand.usage("jotter notes list") == """
                jotter notes list [--search WORDS] [--limit N | --all]
                                         [--order newest|oldest|updated] [--after CURSOR] [options]
                """)
        #expect(
            NotesAddCommand.usage("jotter notes add") == """
                jotter notes add TEXT… [options]
                       jotter notes add - [options]     (the text from standard input, less one final newline)
                """)
        // What the completions offer for the first operand comes from the same declaration.
        #expect(CompletionCommand.firstOperand == "bash|zsh|fish" && UploadCommand.firstOperand == "PATH")
        #expect(NotesListCommand.firstOperand == nil)
        // A required option is read as its declaration says, its absence a usage error.
        #expect(throws: UsageError.self) { try RestoreCommand(parsing: Arguments(["backup"], options: RestoreCommand.options, environment: [:])) }
    }

    @Test("a typed option: its default when not given, its variable, a list from spaces, its help from the same declaration")
    func typedOptions() throws {
        let limit = Option.integer("--limit", in: 1...1000, help: "At most N.").defaulting(to: 100)
        let order = Option.choice("--order", choices: [("newest", 1), ("oldest", 2)], help: "Which first.")
        let hosts = Option.list("--host", value: "NAME", environment: "HOSTS", help: "Hosts.")
        let verbose = Option.flag("-v", "--verbose", environment: "VERBOSE", help: "More.")
        let options = [limit.option, order.option, hosts.option, verbose.option]
        #expect(Option.listing(options).contains("--limit N"))
        #expect(Option.listing(options).contains("At most N (default 100)."))
        #expect(order.option.value == "newest|oldest" && order.option.choices == ["newest", "oldest"])
        let none = try Arguments([], options: options, environment: ["HOSTS": "a.example  b.example", "VERBOSE": "yes"])
        #expect(try none[limit] == 100 && none[order] == nil)
        #expect(try none[hosts] == ["a.example", "b.example"] && none[verbose])
        let given = try Arguments(
            ["--limit=7", "--order", "OLDEST", "--host", "c", "--host", "d"], options: options,
            environment: ["HOSTS": "a.example"])
        #expect(try given[limit] == 7 && given[order] == 2 && given[hosts] == ["c", "d"] && !given[verbose])
        for (value, expected) in [
            ("ten", "--limit must be a whole number from 1 to 1000, not 'ten'"),
            ("1001", "--limit must be a whole number from 1 to 1000, not '1001'"),
            ("", "--limit must be a whole number from 1 to 1000, not ''"),
        ] {
            let parsed = try Arguments(["--limit", value], options: options, environment: [:])
            #expect(Self.message { try parsed[limit] } == expected)
        }
        let sideways = try Arguments(["--order", "sideways"], options: options, environment: [:])
        #expect(Self.message { try sideways[order] } == "--order must be newest or oldest, not 'sideways'")
    }

    /// The usage error `body` throws, as it is printed.
    static func message(_ body: () throws -> Any?) -> String? {
        do { _ = try body(); return nil } catch { return (error as? UsageError)?.description ?? "not a usage error: \(error)" }
    }

    @Test("a Foundation error is reported as its sentence, not a dump of its fields")
    func foundationError() {
        let captured = Captured()
        let status = JotterCommandLine.report(
            CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: "/x/y"]),
            command: "jotter notes edit", console: captured.console)
        let text = captured.err.withLock { $0 }
        #expect(status == ExitCode.failure)
        #expect(text.hasPrefix("error: ") && text.hasSuffix("\n") && text.split(separator: "\n").count == 1, "\(text)")
        #expect(!text.contains("CocoaError") && !text.contains("userInfo"), "\(text)")
    }

    @Test("serve --data on a file says so in words")
    func dataIsAFile() throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("plain.txt")
        try Data("x".utf8).write(to: file)
        let result = run(["serve", "--port", "0", "--data", file.path])
        #expect(result.status == 1)
        #expect(result.err == "error: --data \(file.path) is a file, not a folder: give a folder (it is made if missing)\n")
        let below = run(["serve", "--port", "0", "--data", file.path + "/inner"])
        #expect(below.err == "error: cannot make the data folder \(file.path)/inner: \(file.path) is a file, not a folder\n")
    }

    @Test("options come from flags or JOTTER_* variables, flags first")
    func configuration() throws {
        let arguments = try Arguments(
            ["--port=9000", "--max-body-size", "2MiB", "--quiet"], options: ServeCommand.options,
            environment: ["JOTTER_PORT": "1", "JOTTER_DATA": "/tmp/x", "JOTTER_THREADS": "3"])
        let command = try ServeCommand(parsing: arguments)
        #expect(command.configuration.port == 9000)
        #expect(command.configuration.maxBodySize == 2 << 20)
        #expect(command.configuration.dataDirectory == "/tmp/x")
        #expect(command.configuration.threads == 3)
        #expect(command.configuration.accessLog == false)
        let bad = run(["serve"], environment: ["JOTTER_PORT": "http"])
        #expect(bad.status == 2)
        #expect(bad.err.contains("(from JOTTER_PORT)"))
    }

    @Test func sizes() {
        #expect(parseSize("1048576") == 1 << 20)
        #expect(parseSize("512K") == 512 << 10)
        #expect(parseSize("1MiB") == 1 << 20)
        #expect(parseSize("1gb") == 1 << 30)
        #expect(parseSize("-1") == nil)
        #expect(parseSize("MiB") == nil)
    }
}

/// The built `jotter` binary, run as a user would.
@Suite("jotter binary, end to end", .serialized)
struct BinaryTests {
    @Test("serves Hello, logs one line per request, stops on SIGTERM with exit 0")
    func serveAndStop() throws {
        let server = try ServerProcess()
        let response = try RawHTTP(port: server.port).request("POST", "/echo_hello.php", body: Array("name=Bob".utf8), close: true)
        #expect(response.text == "Hello Bob!")
        server.signal(SIGTERM)
        let (status, log) = server.finish()
        #expect(status == 0)
        #expect(log.contains(#""POST /echo_hello.php HTTP/1.1" 200 10"#))
        #expect(log.contains("SIGTERM received"))
    }

    @Test("--quiet silences the access log")
    func quiet() throws {
        let server = try ServerProcess(["--quiet"])
        _ = try RawHTTP(port: server.port).request("GET", "/hello?name=Bob", close: true)
        server.signal(SIGINT)
        let (status, log) = server.finish()
        #expect(status == 0)
        #expect(!log.contains("/hello"))
    }

    @Test("the client commands, run as a user would: notes, upload, a server that is down")
    func clientCommands() throws {
        let server = try ServerProcess(["--quiet"])
        defer { server.signal(SIGTERM); server.finish() }
        let environment = ["JOTTER_SERVER": "http://127.0.0.1:\(server.port)", "PATH": "/usr/bin:/bin"]
        #expect(try Self.jotter(["notes", "add", "from", "the", "binary"], environment: environment) == (0, "Added note 1.\n", ""))
        let list = try Self.jotter(["notes", "list", "--json"], environment: environment)
        #expect(list.status == 0)
        #expect(list.out.contains("\"body\": \"from the binary\""))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-binary-\(UUID().uuidString).txt")
        try Data("uploaded by the binary".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let upload = try Self.jotter(["upload", file.path, "--note", "1"], environment: environment)
        #expect(upload.status == 0)
        #expect(upload.out.hasPrefix("uploaded \(file.path) as "))
        #expect(try Self.jotter(["hello", "Bob"], environment: environment).out == "Hello Bob!\n")

        let down = try Self.jotter(["notes", "list", "--server", "http://127.0.0.1:\(try TestApp.unusedPort())"], environment: [:])
        #expect(down.status == ExitCode.unreachable)
        #expect(down.out.isEmpty)
        #expect(down.err.split(separator: "\n").count == 1, "\(down.err)")
    }

    /// Runs the built `jotter` with `arguments`; its exit status and output.
    static func jotter(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, out: String, err: String) {
        let run = try runProgram([ServerProcess.binary.path] + arguments, environment: environment, separateErrors: true)
        return (run.status, run.output, run.errors)
    }

    @Test(
        "a bad option value is one usage error naming the option, exit 2, with nothing done: no request, no data folder",
        arguments: [
            (["notes", "list", "--limit", "ten"], [:], "--limit must be a positive whole number, not 'ten'"),
            (["uploads", "list", "--limit", "5000"], [:], "--limit must be a whole number from 1 to 1000, not '5000'"),
            (["notes", "list", "--order", "sideways"], [:], "--order must be newest, oldest or updated, not 'sideways'"),
            (["notes", "watch", "--since=-3"], [:], "--since must be an event id, 0 or more, not '-3'"),
            (["notes", "list", "--limit", "5", "--all"], [:], "choose --limit N or --all, not both"),
            (["notes", "trash", "--all", "--limit", "2"], [:], "choose --limit N or --all, not both"),
            // The value's own error comes before the rule between the two options.
            (["uploads", "list", "--all", "--limit", "0"], [:], "--limit must be a whole number from 1 to 1000, not '0'"),
            (
                ["notes", "list"], ["JOTTER_SERVER": "ftp://x"],
                "--server must be a server such as http://127.0.0.1:8080 or 127.0.0.1:8080, not 'ftp://x' (from JOTTER_SERVER)"
            ),
            (["serve", "--data", "DATA", "--max-body-size", "0"], [:], "--max-body-size must be a size of 1 byte or more, such as 1MiB, not '0'"),
            (
                ["serve", "--data", "DATA"], ["JOTTER_TRUSTED_PROXY": "10.0.0.0/8 bogus"],
                "--trusted-proxy must be an IP address or CIDR block (10.0.0.0/8, ::1), not 'bogus' (from JOTTER_TRUSTED_PROXY)"
            ),
            (
                ["tokens", "create", "--server", "SERVER", "--expires", "3q"], [:],
                "--expires must be a duration from 1m to 10y such as 12h, 30d or 1y, not '3q'"
            ),
            (["serve", "--data", "DATA", "--synchronous", "fast"], [:], "--synchronous must be full or normal, not 'fast'"),
            (["serve", "--data", "DATA", "--threads", "0"], [:], "--threads must be a whole number from 1 to 256, not '0'"),
            (
                ["serve", "--data", "DATA"], ["JOTTER_RATE_LIMIT": "-5"],
                "--rate-limit must be a whole number of requests a minute, 0 or more, not '-5' (from JOTTER_RATE_LIMIT)"
            ),
        ] as [([String], [String: String], String)])
    func badOptionValues(_ arguments: [String], _ environment: [String: String], _ message: String) throws {
        // A server nobody listens on: reaching for it would be exit 5, not 2.
        let server = "http://127.0.0.1:\(try TestApp.unusedPort())"
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-bad-option-\(UUID().uuidString)").path
        let command = arguments.map { $0 == "SERVER" ? server : $0 == "DATA" ? data : $0 }
        let result = try Self.jotter(command, environment: ["JOTTER_SERVER": server].merging(environment) { $1 })
        let path = command.prefix { !$0.hasPrefix("-") }.joined(separator: " ")
        #expect(result.status == ExitCode.usage, "\(command): \(result.err)")
        #expect(result.out.isEmpty)
        #expect(result.err == "error: \(message)\nSee 'jotter \(path) --help'.\n")
        #expect(!FileManager.default.fileExists(atPath: data))
    }

    @Test("a port in use is one line and exit 1")
    func portInUse() throws {
        let server = try ServerProcess()
        defer { server.signal(SIGTERM); _ = server.finish() }
        let second = try runProgram(
            [ServerProcess.binary.path, "serve", "--port", String(server.port), "--data", server.dataDirectory.path], separateErrors: true)
        #expect(second.status == 1)
        #expect(second.errors == "error: 127.0.0.1:\(server.port) is already in use (another server is listening there); choose another --port\n")
    }
}
