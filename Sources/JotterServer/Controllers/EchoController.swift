#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterAPI
import JotterHTTP

/// `/echo` on any method: the request as JSON, shaped like httpbin's `/anything`, for testing
/// clients. It accepts any content type. File parts are described (name, type, size, SHA-256),
/// never held in memory nor written to disk: `/echo` needs no credentials, and a request that
/// kept a file in `tmp/` while it trickled in would let anyone fill the disk. `POST /post` is
/// an alias (the path of the recipe's WEBrick servlet, as `/echo_hello.php` is the PHP
/// tutorial's for `/hello`).
struct EchoController {
    static let methods: [HTTPMethod] = [.get, .post, .put, .patch, .delete, .options]
    /// Header fields whose values are credentials: echoed as `[redacted]`, so that a script on
    /// a page cannot read an `HttpOnly` session cookie back from `/echo`.
    static let redacted: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    func register(in routes: inout RouterBuilder) {
        // Any body: files are hashed as they stream, and kept nowhere (only the override header counts).
        let body = BodyPolicy.multipart(files: DigestOnlyStore())
        for method in Self.methods {
            routes.on(method, "/echo", body: body, operation: EchoOperations.echo(method), handler: echo)
        }
        routes.post("/post", body: body, operation: EchoOperations.postAlias, handler: echo)
    }

    @Sendable func echo(_ request: Request, _ context: RequestContext) throws -> JSON<EchoResponse> {
        var echo = EchoResponse(method: request.method.rawValue, url: request.target, args: Self.group(try request.query()))
        let essence = request.headers["Content-Type"].flatMap(MediaType.init)?.essence
        let isForm =
            essence == "application/x-www-form-urlencoded" || essence == "multipart/form-data"
            || (essence == nil && !request.rawBody.isEmpty)
        if isForm {
            if case .form(let fields) = try request.body() { echo.form = Self.group(fields) }
        } else {
            echo.data = Self.text(request.rawBody)
            echo.json = try? JSONCoding.decoder.decode(JSONValue.self, from: Data(request.rawBody))
        }
        for file in request.files {
            echo.files[file.field, default: []].append(
                EchoResponse.File(
                    filename: file.filename, contentType: file.contentType,
                    size: file.size, sha256: file.sha256))
        }
        for field in request.headers {
            let value = Self.redacted.contains(field.name.lowercased()) ? "[redacted]" : field.value
            echo.headers[field.name] = echo.headers[field.name].map { "\($0),\(value)" } ?? value
        }
        return JSON(echo)
    }

    /// Every value of each key, in order.
    static func group(_ fields: FormFields) -> [String: [String]] {
        var grouped: [String: [String]] = [:]
        for pair in fields { grouped[pair.key, default: []].append(pair.value) }
        return grouped
    }

    /// The body as text, or (like httpbin) a base64 `data:` URL when it is not UTF-8.
    static func text(_ bytes: [UInt8]) -> String {
        String(validating: bytes, as: UTF8.self) ?? "data:application/octet-stream;base64," + Data(bytes).base64EncodedString()
    }
}
