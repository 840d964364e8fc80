import JotterCLICore
import Foundation
import JotterClient

/// `--server URL` (or `JOTTER_SERVER`) and `--json`: what every client command reads.
struct ClientOptions: Sendable {
    static let defaultServer = "http://127.0.0.1:8080"
    static let help = """
      --server URL                  The Jotter server (JOTTER_SERVER, default \(defaultServer)).
      --json                        Print JSON for scripts instead of text.
      -h, --help                    Show this help.
    """

    var server: URL
    var json: Bool

    init(parsing arguments: inout Arguments) throws {
        let text = try arguments.option("server", environment: "JOTTER_SERVER") ?? Self.defaultServer
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
            throw UsageError("--server must be an http:// or https:// URL, not '\(text)'")
        }
        server = url
        json = arguments.flag("json")
    }

    /// A client for the server; a refused connection is tried once more, then reported.
    func client() -> JotterClient {
        var configuration = JotterClient.Configuration()
        configuration.userAgent = "jotter/\(JotterCommandLine.version)"
        configuration.retry = RetryPolicy(maximumAttempts: 2)
        return JotterClient(baseURL: server, configuration: configuration)
    }

    /// `value` as JSON with sorted keys (indented, or on one line), and a newline.
    static func json(_ value: some Encodable, pretty: Bool = true) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
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
        if error.isTransport {
            self.init("\(error.message): is the Jotter server running there? (--server URL or JOTTER_SERVER)", status: ExitCode.unreachable)
        } else if error.isNotFound {
            self.init(detail, status: ExitCode.notFound)
        } else if error.isConflict {
            self.init(detail, status: ExitCode.conflict)
        } else if let status = error.status, [400, 413, 415, 422].contains(status) {
            let fields = error.fieldErrors.map { "\($0.field) \($0.message)" }.joined(separator: ", ")
            self.init("the server refused the request: \(detail)\(fields.isEmpty ? "" : " (\(fields))")", status: ExitCode.refused)
        } else {
            self.init(error.status == nil ? error.message : "\(error.status!) \(error.title ?? ""): \(detail)", status: ExitCode.failure)
        }
    }
}
