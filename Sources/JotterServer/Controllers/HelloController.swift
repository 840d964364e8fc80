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
            throw HTTPError.validation([.init(field: "name", message: "is required")])
        }
        let message = "Hello \(name)!"
        if request.headers["Accept"].map(Self.prefersJSON) == true {
            return try JSON(HelloMessage(message: message)).response(for: request)
        }
        return try message.response(for: request)
    }

    /// True when the Accept header asks for JSON (`application/json` or `+json`, q > 0).
    static func prefersJSON(_ accept: String) -> Bool {
        accept.split(separator: ",").contains { range in
            let parts = range.split(separator: ";").map { $0.trimmingASCIISpaces().lowercased() }
            guard let media = parts.first else { return false }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0 && (media == "application/json" || media.hasSuffix("+json"))
        }
    }
}
