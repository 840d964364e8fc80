#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterHTTP

/// `/echo` on any method: the request as JSON, shaped like httpbin's `/anything`, for testing
/// clients. It accepts any content type. File parts are described (name, type, size, SHA-256),
/// never held in memory.
struct EchoController {
    static let methods: [HTTPMethod] = [.get, .post, .put, .patch, .delete, .options]

    func register(in routes: inout RouterBuilder) {
        // Any body: files stream to temporary files (only the override header counts).
        for method in Self.methods {
            routes.on(method, "/echo", body: .multipart(), handler: echo)
        }
    }

    @Sendable func echo(_ request: Request, _ context: RequestContext) throws -> JSON<Echo> {
        var echo = Echo(method: request.method.rawValue, url: request.target, args: Echo.group(try request.query()))
        let essence = request.headers["Content-Type"].flatMap(MediaType.init)?.essence
        let isForm = essence == "application/x-www-form-urlencoded" || essence == "multipart/form-data"
            || (essence == nil && !request.rawBody.isEmpty)
        if isForm {
            if case .form(let fields) = try request.body() { echo.form = Echo.group(fields) }
        } else {
            echo.data = Echo.text(request.rawBody)
            echo.json = try? JSONCoding.decoder.decode(JSONValue.self, from: Data(request.rawBody))
        }
        var files: [String: [Echo.File]] = [:]
        for file in request.files {
            files[file.field, default: []].append(Echo.File(filename: file.filename, contentType: file.contentType, size: file.size, sha256: file.sha256))
        }
        echo.files = files.mapValues { $0.count == 1 ? .one($0[0]) : .many($0) }
        for field in request.headers {
            echo.headers[field.name] = echo.headers[field.name].map { "\($0),\(field.value)" } ?? field.value
        }
        return JSON(echo)
    }
}

/// The body of an `/echo` answer.
struct Echo: Encodable {
    /// A key sent once maps to one value, a key sent several times to all of them, as httpbin does.
    enum OneOrMany<Value: Encodable>: Encodable {
        case one(Value)
        case many([Value])

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .one(let value): try container.encode(value)
            case .many(let values): try container.encode(values)
            }
        }
    }

    struct File: Encodable {
        var filename: String
        var contentType: String
        var size: Int64
        var sha256: String
        enum CodingKeys: String, CodingKey { case filename, size, sha256, contentType = "content_type" }
    }

    var method: String
    var url: String
    var args: [String: OneOrMany<String>]
    var form: [String: OneOrMany<String>] = [:]
    var files: [String: OneOrMany<File>] = [:]
    var json: JSONValue?
    var data = ""
    var headers: [String: String] = [:]

    enum CodingKeys: String, CodingKey { case method, url, args, form, files, json, data, headers }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(method, forKey: .method)
        try container.encode(url, forKey: .url)
        try container.encode(args, forKey: .args)
        try container.encode(form, forKey: .form)
        try container.encode(files, forKey: .files)
        try container.encode(json ?? .null, forKey: .json)
        try container.encode(data, forKey: .data)
        try container.encode(headers, forKey: .headers)
    }

    static func group(_ fields: FormFields) -> [String: OneOrMany<String>] {
        var grouped: [String: [String]] = [:]
        for pair in fields { grouped[pair.key, default: []].append(pair.value) }
        return grouped.mapValues { $0.count == 1 ? .one($0[0]) : .many($0) }
    }

    /// The body as text, or (like httpbin) a base64 `data:` URL when it is not UTF-8.
    static func text(_ bytes: [UInt8]) -> String {
        String(validating: bytes, as: UTF8.self) ?? "data:application/octet-stream;base64," + Data(bytes).base64EncodedString()
    }
}
