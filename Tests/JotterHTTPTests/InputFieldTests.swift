import Foundation
import Testing
import JotterHTTP
import JotterHTTPTesting
import JotterWire

/// Inputs declared once: the same `InputField` reads a query and describes it to OpenAPI.
@Suite("Typed inputs")
struct InputFieldTests {
    enum Order: String, Sendable { case newest, oldest }

    static let limit = InputField<Int>(
        "limit", schema: .integer(minimum: 1, maximum: 50), description: "items per page",
        message: "must be a whole number from 1 to 50"
    ) { Int($0).flatMap { (1...50).contains($0) ? $0 : nil } }
    static let order = InputField<Order>.choice("order", ["new": .newest, "old": .oldest, "first": .oldest], description: "the order")
    static let search = InputField.text("q", description: "words to look for")

    static func client() -> InProcessClient {
        var routes = RouterBuilder()
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.get("/items") { request, _ in
            let (limit, order, q) = try QueryInput.read(request) { input in
                // Read twice, listed once.
                (input[Self.limit] ?? 10, input[Self.order] ?? input[Self.order] ?? .newest, input[Self.search] ?? "-")
            }
            return "\(limit) \(order.rawValue) \(q)"
        }
        return InProcessClient(router: routes.build())
    }

    @Test("absent inputs take the caller's defaults; given ones are parsed")
    func parsed() {
        let client = Self.client()
        #expect(client.send("GET", "/items").text == "10 newest -")
        #expect(client.send("GET", "/items?limit=7&order=first&q=a+b").text == "7 oldest a b")
    }

    @Test("every invalid input is listed in one 400, in the order read, with its declared message")
    func invalid() throws {
        let answer = Self.client().send("GET", "/items?order=sideways&q=x&limit=51")
        #expect(answer.status == 400)
        let problem = try JSONDecoder().decode(ProblemDetails.self, from: Data(answer.body))
        #expect(problem.errors?.map(\.field) == ["limit", "order"])
        #expect(problem.errors?.map(\.message) == ["must be a whole number from 1 to 50", "must be new, old or first"])
    }

    @Test("the OpenAPI parameter is the declaration's name, schema and prose")
    func described() {
        let parameter = OpenAPIParameter.query(Self.order)
        #expect(parameter.name == "order" && parameter.location == .query && !parameter.required)
        #expect(parameter.schema == .string(enum: ["new", "old", "first"]))
        #expect(parameter.description == "the order")
        let path = OpenAPIParameter.path(Self.limit)
        #expect(path.location == .path && path.required && path.name == "limit")
        #expect(OpenAPIParameter.query(Self.limit).schema == .integer(minimum: 1, maximum: 50))
    }
}
