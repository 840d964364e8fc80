#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterAPI
import JotterHTTP

/// `GET`/`POST /hello` and its alias `/echo_hello.php`: `Hello <name>!`.
struct HelloController {
    func register(in routes: inout RouterBuilder) {
        routes.get("/hello", operation: HelloOperations.get, handler: hello)
        routes.post("/hello", operation: HelloOperations.post, handler: hello)
        routes.get("/echo_hello.php", operation: HelloOperations.alias, handler: hello)
        routes.post("/echo_hello.php", operation: HelloOperations.alias, handler: hello)
    }

    /// `name` from the body wins over the query; absent is `422`, empty is `Hello !`.
    @Sendable func hello(_ request: Request, _ context: RequestContext) throws -> Response {
        let body = try request.body()
        guard let name = try body.string("name") ?? request.query()["name"] else {
            // Without a body, the query is where it was looked for.
            let source: HTTPError.FieldSource = if case .empty = body { .query } else { .bodyOrQuery }
            throw HTTPError.validation([.init(field: "name", message: "is required")], in: source)
        }
        let message = "Hello \(name)!"
        if request.headers.withValueBytes(of: "Accept", { $0.map(Self.prefersJSON) ?? false }) {
            return try JSON(HelloMessage(message: message)).response(for: request)
        }
        return try message.response(for: request)
    }

    /// True when the Accept header asks for JSON (`application/json` or `+json`, q > 0).
    static func prefersJSON(_ accept: String) -> Bool {
        var accept = accept
        return accept.withUTF8 { prefersJSON(UnsafeRawBufferPointer($0)) }
    }

    /// The same on the field's bytes: a value without `json` in it (a browser's) is one scan.
    static func prefersJSON(_ accept: UnsafeRawBufferPointer) -> Bool {
        guard mentionsJSON(accept) else { return false }
        return accept.split(separator: UInt8(ascii: ",")).contains { range in
            let parts = range.split(separator: UInt8(ascii: ";")).map(trimmed)
            guard let media = parts.first else { return false }
            let quality =
                parts.dropFirst().first {
                    $0.count >= 2 && lower($0[$0.startIndex]) == UInt8(ascii: "q") && $0[$0.startIndex + 1] == UInt8(ascii: "=")
                }
                .flatMap { Double(String(decoding: $0.dropFirst(2), as: UTF8.self).lowercased()) } ?? 1
            return quality > 0 && (equal(media, "application/json") || (media.count >= 5 && equal(media.suffix(5), "+json")))
        }
    }

    private static func mentionsJSON(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 4 else { return false }
        for index in 0...(bytes.count - 4) where lower(bytes[index]) == UInt8(ascii: "j") {
            if lower(bytes[index + 1]) == UInt8(ascii: "s"), lower(bytes[index + 2]) == UInt8(ascii: "o"),
                lower(bytes[index + 3]) == UInt8(ascii: "n")
            {
                return true
            }
        }
        return false
    }

    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        guard let start = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
            let end = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return bytes[bytes.endIndex...] }
        return bytes[start...end]
    }

    private static func equal(_ bytes: Slice<UnsafeRawBufferPointer>, _ lowercased: String) -> Bool {
        bytes.count == lowercased.utf8.count && zip(bytes, lowercased.utf8).allSatisfy { lower($0) == $1 }
    }

    private static func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
}
