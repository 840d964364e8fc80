import JotterCLICore
import Foundation
import JotterClient

/// `jotter echo`: sends a request to `/echo` and prints what the server received.
struct EchoCommand: AsyncCommand, ParsableArguments {
    static let name = "echo"
    static let summary = "Send a request to /echo and show what the server received."
    static let about = """
        Sends one request to /echo and prints the server's view of it as JSON (method, args,
        form, files with size and SHA-256, json, data, headers), as curl would send it: -d fields
        are percent-encoded exactly (-d @file sends the file's bytes as they are); with -F the -d
        fields become parts of the multipart body; files are streamed from disk. GET and HEAD
        carry no body: use -q for their fields.
        """
    @Value(Option.text("-X", "--request", value: "METHOD", help: "The method (default GET, or POST when there is a body).")) var request: String?
    @Value(Option.list("-H", "--header", value: "'Name: value'", help: "A request header (repeatable).").map(EchoCommand.headers)) var headers:
        [String: String]
    @Value(
        Option.list("-q", "--query", value: "key=value", help: "A query parameter (repeatable).").map { FormURLEncodedBody($0.map(EchoCommand.pair)) }
    )
    var query: FormURLEncodedBody
    @Value(
        Option.list(
            "-d", "--data", value: "key=value|@file",
            help: "A form field, sent form-urlencoded (repeatable); @file sends the file's bytes."))
    var data: [String]
    @Value(
        Option.list(
            "-F", "--form", value: "field=value|field=@path[;type=…]",
            help: "A multipart field; field=@path sends the file, field=@path;type=image/png with its type (repeatable)."))
    var parts: [String]
    @Value(Option.text("--json-body", value: "'{…}'|@file", help: "A JSON body (application/json); @file reads it from the file."))
    var json: String?
    @Group var server: ClientOptions
    private(set) var method = "GET"
    private(set) var body: JotterClient.EchoBody?

    /// `-H` values: `Name: value` each.
    @Sendable static func headers(_ values: [String]) throws(UsageError) -> [String: String] {
        var headers: [String: String] = [:]
        for header in values {
            guard let colon = header.firstIndex(of: ":"), colon > header.startIndex else {
                throw UsageError("-H takes 'Name: value', not '\(header)'")
            }
            headers[String(header[..<colon])] = String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        }
        return headers
    }

    mutating func validate(_ arguments: Arguments) throws {
        try arguments.finish()
        guard json == nil || (data.isEmpty && parts.isEmpty) else { throw UsageError("--json-body is the whole body: leave out -d and -F") }
        if let json {
            body = .json(try Self.contents(json, option: "--json-body"))
        } else if !parts.isEmpty {
            var form = MultipartFormData()
            for field in data {
                guard !field.hasPrefix("@") else { throw UsageError("-d @file can't go into a multipart body: use -F field=@file") }
                let (name, value) = Self.pair(field)
                form.append(value, name: name)
            }
            for part in parts {
                let (name, value) = Self.pair(part)
                guard value.hasPrefix("@") else { form.append(value, name: name); continue }
                var path = String(value.dropFirst()), type: String?, filename: String?
                // curl's ;type=… and ;filename=… after the path.
                while let semicolon = path.lastIndex(of: ";") {
                    let parameter = path[path.index(after: semicolon)...]
                    if parameter.hasPrefix("type=") {
                        type = String(parameter.dropFirst(5))
                    } else if parameter.hasPrefix("filename=") {
                        filename = String(parameter.dropFirst(9))
                    } else {
                        break
                    }
                    path = String(path[..<semicolon])
                }
                try form.append(fileAt: URL(fileURLWithPath: path), name: name, filename: filename, contentType: type)
            }
            body = .multipart(form)
        } else if !data.isEmpty {
            var pieces: [Data] = []
            for field in data {
                if field.hasPrefix("@") {
                    pieces.append(try Self.contents(field, option: "-d"))
                } else {
                    let (name, value) = Self.pair(field)
                    pieces.append(FormURLEncodedBody([(name, value)]).data)
                }
            }
            let joined = pieces.reduce(into: Data()) {
                if !$0.isEmpty { $0.append(UInt8(ascii: "&")) }; $0.append($1)
            }
            body = .raw(joined, contentType: headers.first { $0.key.lowercased() == "content-type" }?.value ?? FormURLEncodedBody.contentType)
        } else {
            body = nil
        }
        method = (request ?? (body == nil ? "GET" : "POST")).uppercased()
        if body != nil, ["GET", "HEAD"].contains(method) {
            throw UsageError("a \(method) request carries no body: send the fields with -q key=value, or use -X POST")
        }
        if method == "HEAD" {
            throw UsageError("/echo answers HEAD with headers only, so there is nothing to show: use -X GET")
        }
    }

    /// `key=value` (a value may hold `=`; no `=` is an empty value).
    @Sendable static func pair(_ text: String) -> (String, String) {
        guard let equals = text.firstIndex(of: "=") else { return (text, "") }
        return (String(text[..<equals]), String(text[text.index(after: equals)...]))
    }

    /// The text itself, or the bytes of the file after `@`.
    static func contents(_ value: String, option: String) throws -> Data {
        guard value.hasPrefix("@") else { return Data(value.utf8) }
        let path = String(value.dropFirst())
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("cannot read \(path) (for \(option) @\(path)): no such file or not readable")
        }
        return data
    }

    func run(console: Console) async throws -> Int32 {
        let echo = try await server.client().echo(method: method, query: query, body: body, headers: headers)
        console.out(try ClientOptions.json(echo))
        return ExitCode.success
    }
}
