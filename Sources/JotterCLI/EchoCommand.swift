import JotterCLICore
import Foundation
import JotterClient

/// `jotter echo`: sends a request to `/echo` and prints what the server received.
struct EchoCommand: AsyncCommand {
    static let name = "echo"
    static let summary = "Send a request to /echo and show what the server received."
    static let help = """
    USAGE: jotter echo [-X METHOD] [-q key=value]… [-d key=value]… [-F field=value|field=@path]… [--json '{…}']

    Sends one request to /echo and prints the server's view of it as JSON (method, args,
    form, files with size and SHA-256, json, data, headers). Fields are percent-encoded
    exactly; files are streamed from disk.

    OPTIONS:
      -X, --request METHOD          The method (default GET, or POST when there is a body).
      -q, --query key=value         A query parameter (repeatable).
      -d, --data key=value          A form field, sent form-urlencoded (repeatable).
      -F, --form field=value        A multipart field; field=@path sends the file (repeatable).
      --json '{…}'                  A JSON body (the output is always JSON).
      --server URL                  The Jotter server (JOTTER_SERVER, default \(ClientOptions.defaultServer)).
      -h, --help                    Show this help.

    """

    let server: ClientOptions
    let method: String?
    let query: FormURLEncodedBody
    let body: JotterClient.EchoBody?

    init(parsing arguments: inout Arguments) throws {
        method = try arguments.values(["-X", "--request"]).last
        query = FormURLEncodedBody(try arguments.values(["-q", "--query"]).map(Self.pair))
        let data = try arguments.values(["-d", "--data"]).map(Self.pair)
        let parts = try arguments.values(["-F", "--form"]).map(Self.pair)
        let json = try arguments.option("json")
        server = try ClientOptions(parsing: &arguments)
        try arguments.finish()
        guard [!data.isEmpty, !parts.isEmpty, json != nil].filter({ $0 }).count <= 1 else {
            throw UsageError("choose one kind of body: -d, -F or --json")
        }
        if let json {
            body = .json(Data(json.utf8))
        } else if !parts.isEmpty {
            var form = MultipartFormData()
            for (name, value) in parts {
                if value.hasPrefix("@") {
                    try form.append(fileAt: URL(fileURLWithPath: String(value.dropFirst())), name: name)
                } else {
                    form.append(value, name: name)
                }
            }
            body = .multipart(form)
        } else {
            body = data.isEmpty ? nil : .form(FormURLEncodedBody(data))
        }
    }

    /// `key=value` (a value may hold `=`; no `=` is an empty value).
    static func pair(_ text: String) -> (String, String) {
        guard let equals = text.firstIndex(of: "=") else { return (text, "") }
        return (String(text[..<equals]), String(text[text.index(after: equals)...]))
    }

    func run(console: Console) async throws -> Int32 {
        let echo = try await server.client().echo(method: method ?? (body == nil ? "GET" : "POST"), query: query, body: body)
        console.out(try ClientOptions.json(echo))
        return ExitCode.success
    }
}
