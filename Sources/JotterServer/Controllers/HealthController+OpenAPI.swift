import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operations of `HealthController`.
enum HealthOperations {
    static let health = OpenAPIOperation(
        operationID: "health", summary: "Health", tags: ["service"],
        responses: [200: .json(.ref(HealthStatus.self), "the database is open and the server serves")])

    static let metrics = OpenAPIOperation(
        operationID: "metrics", summary: "Prometheus metrics",
        description: "Requests by route pattern and status, and a latency histogram, in the text exposition format 0.0.4.",
        tags: ["service"],
        responses: [200: OpenAPIResponse("the metrics", content: ["text/plain": .string()])])
}
