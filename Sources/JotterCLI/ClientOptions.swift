import JotterCLICore
import Foundation
import JotterClient

/// `--server URL` (or `JOTTER_SERVER`), `--token` and `--json`: what every client command reads,
/// as `@Group var options: ClientOptions`, declared first so that a bad `--server` is the first
/// error; its options are listed after the command's own. A command that prints no JSON leaves
/// `--json` out (`@Group(without: ClientOptions.jsonOption)`), so that it is a usage error
/// there rather than silently ignored.
struct ClientOptions: ParsableArguments {
    static let defaultServer = "http://127.0.0.1:8080"
    /// `nil` when neither `--server` nor `JOTTER_SERVER` is given (`defaultServer` then).
    static let serverOption = Option.value(
        "--server", value: "URL", environment: "JOTTER_SERVER", default: defaultServer,
        expected: "a server such as http://127.0.0.1:8080 or 127.0.0.1:8080",
        help: "The Jotter server; host:port alone means http://host:port.", serverURL)
    static let jsonOption = Option.flag("--json", help: "Print JSON for scripts instead of text.")
    static let tokenOption = Option.text(
        "--token", value: "TOKEN", environment: "JOTTER_TOKEN",
        help: "An API token (jot_…); default: the one jotter login kept for the server.")

    @Value(serverOption.defaulting(to: serverURL(defaultServer)!, shown: defaultServer).common()) var server: URL
    @Value(jsonOption.common()) var json: Bool
    @Value(tokenOption.common()) var givenToken: String?
    @Value(
        Option.text(
            "--cacert", value: "FILE", environment: "JOTTER_CACERT",
            help: "For an https:// server: trust only the certificate authorities in this PEM file (a private CA)."
        ).common())
    var cacert: String?
    @Value(
        Option.flag(
            "--insecure", environment: "JOTTER_INSECURE",
            help: "For an https:// server: do not verify its certificate at all (a test server only)."
        ).common())
    var insecure: Bool

    /// Shown as `[options]` in the usage lines.
    static let options = Self.options(without: [])
    /// `options` without `--json`.
    static let connection = Self.options(without: [jsonOption.option.key])

    /// Sent as `Authorization: Bearer`: `--token`, else the one `jotter login` kept.
    private(set) var token: String?
    /// What an `https://` server's certificate is checked against.
    private(set) var trust = JotterClient.ServerTrust.system

    mutating func validate(_ arguments: Arguments) throws {
        token = givenToken.flatMap { $0.isEmpty ? nil : $0 } ?? StoredTokens(environment: arguments.environment).token(for: server)
        if let file = cacert, !file.isEmpty {
            guard !insecure else { throw UsageError("--cacert and --insecure: give one (--insecure verifies nothing)") }
            guard FileManager.default.isReadableFile(atPath: file) else { throw UsageError("--cacert \(file): no such readable file") }
            trust = .certificateAuthorities(URL(fileURLWithPath: file))
        } else if insecure {
            trust = .insecure
        }
    }

    /// What a listing shows when neither `--limit` nor `--all` is given.
    static let defaultLimit = 100

    /// How many a listing shows (`--limit N | --all`): N, `defaultLimit` when neither is given,
    /// `nil` for every one with `--all`: `@Value(limitOption, allOption, ClientOptions.count)`.
    @Sendable static func count(_ limit: Int?, all: Bool) throws(UsageError) -> Int? {
        guard all else { return limit ?? defaultLimit }
        guard limit == nil else { throw UsageError("choose --limit N or --all, not both") }
        return nil
    }

    /// `--server`'s URL: `http://` is assumed when no scheme is given (`localhost:8080`); nil
    /// for what is not an http(s) server.
    @Sendable static func serverURL(_ text: String) -> URL? {
        let lower = text.lowercased()
        let full =
            lower.hasPrefix("http://") || lower.hasPrefix("https://") || !lower.contains("://") && !text.isEmpty
            ? (lower.contains("://") ? text : "http://" + text) : text
        guard let url = URL(string: full), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), let host = url.host, !host.isEmpty else {
            return nil
        }
        return url
    }

    /// A client for the server; a refused connection is tried once more, then reported.
    func client() -> JotterClient {
        JotterClient(baseURL: server, configuration: configuration())
    }

    /// How every command's client talks to the server: its User-Agent, the certificate trust of
    /// `--cacert`/`--insecure`, the token, and one retry of a refused connection.
    func configuration() -> JotterClient.Configuration {
        var configuration = JotterClient.Configuration()
        configuration.userAgent = "jotter/\(JotterCommandLine.version)"
        configuration.retry = RetryPolicy(maximumAttempts: 2)
        configuration.token = token
        configuration.trust = trust
        return configuration
    }

    /// `value` as JSON with sorted keys, and a newline: indented as `jq` and `gh` print it
    /// (`"key": value`, two spaces, `[]` and `{}` when empty), or on one line.
    static func json(_ value: some Encodable, pretty: Bool = true) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let compact = try encoder.encode(value)
        return (pretty ? indented(compact) : String(decoding: compact, as: UTF8.self)) + "\n"
    }

    /// Compact JSON (no whitespace outside strings, as `JSONEncoder` writes it) indented as
    /// `jq .` indents it.
    static func indented(_ compact: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(compact.count * 2)
        var depth = 0, inString = false, escaped = false
        var bytes = compact.makeIterator()
        var pending = bytes.next()
        func newline() {
            out.append(0x0A)
            out.append(contentsOf: repeatElement(0x20, count: depth * 2))
        }
        while let byte = pending {
            pending = bytes.next()
            if inString {
                out.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                out.append(byte)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                out.append(byte)
                if let next = pending, next == UInt8(ascii: "}") || next == UInt8(ascii: "]") {
                    out.append(next)
                    pending = bytes.next()
                } else {
                    depth += 1
                    newline()
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                newline()
                out.append(byte)
            case UInt8(ascii: ","):
                out.append(byte)
                newline()
            case UInt8(ascii: ":"):
                out.append(contentsOf: [byte, 0x20])
            default:
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A failure a command reports in one line, with its exit code.
struct CommandFailure: Error, Sendable {
    var message: String
    var status: Int32

    init(_ message: String, status: Int32 = ExitCode.failure) {
        self.message = message
        self.status = status
    }

    /// What an SDK error means on the command line.
    init(_ error: JotterClientError) {
        let detail = error.detail ?? error.title ?? error.message
        if error.isPlainHTTPServer {
            self.init(error.message + " (--server URL or JOTTER_SERVER)", status: ExitCode.unreachable)
        } else if error.isTLS {
            self.init(error.message + "; a server with a private CA: --cacert FILE (or JOTTER_CACERT)", status: ExitCode.unreachable)
        } else if error.isTransport {
            self.init("\(error.message): is the Jotter server running there? (--server URL or JOTTER_SERVER)", status: ExitCode.unreachable)
        } else if let status = error.status, error.problem == nil {
            // Jotter always explains an error status in problem+json: this is something else.
            self.init(
                "the server answered \(status) \(error.title ?? "") without Jotter's error details: is it a Jotter server? "
                    + "(--server URL or JOTTER_SERVER)", status: ExitCode.unreachable)
        } else if error.isUnauthorized {
            self.init("\(detail): sign in with jotter login, or give a token (--token or JOTTER_TOKEN)", status: ExitCode.failure)
        } else if error.isNotFound, detail.hasPrefix("no resource at ") {
            // The server has no such endpoint at all (not a missing note): the URL is off.
            self.init(
                "\(detail): is the server URL right? (--server URL or JOTTER_SERVER: where Jotter answers, such as "
                    + "http://127.0.0.1:8080, with no path unless a proxy serves it under one)", status: ExitCode.notFound)
        } else if error.isNotFound {
            self.init(detail, status: ExitCode.notFound)
        } else if error.isConflict || error.status == 409 {
            // 412 (the note changed meanwhile) or 409 (its state does not allow it now): nothing changed.
            self.init(detail, status: ExitCode.conflict)
        } else if let status = error.status, [400, 413, 415, 422].contains(status) {
            let fields = error.fieldErrors.map { "\($0.field) \($0.message)" }.joined(separator: ", ")
            self.init("the server refused the request: \(detail)\(fields.isEmpty ? "" : " (\(fields))")", status: ExitCode.refused)
        } else {
            self.init(error.status == nil ? error.message : "\(error.status!) \(error.title ?? ""): \(detail)", status: ExitCode.failure)
        }
    }
}
