import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operations of `HealthController`.
enum HealthOperations {
    static let health = OpenAPIOperation(
        operationID: "health", summary: "Health",
        description:
            "Ready when the database answers a read, a file can be created in the data folder and at least `--min-free-space` (64 MiB) is free there.",
        tags: ["service"],
        responses: [
            200: .json(.ref(HealthStatus.self), "ready"),
            503: OpenAPIResponse(
                "not ready: `detail` names each failed check", content: ["application/problem+json": .ref(named: "HealthProblem")],
                headers: ["Retry-After": OpenAPIHeader("seconds", schema: .string(pattern: "^[0-9]+$"))]),
        ])

    /// `/healthz`'s `503`: a problem with the checks and the free space as extension members.
    static var components: [String: JSONSchema] {
        var problem = ProblemDetails.schema
        problem.properties["checks"] = HealthStatus.checksSchema
        problem.properties["free_bytes"] = HealthStatus.freeBytesSchema
        problem.required = (problem.required + ["checks", "free_bytes", "detail"]).reduce(into: []) { if !$0.contains($1) { $0.append($1) } }.sorted()
        problem.description = "A `503` problem of `/healthz`, with what was checked."
        return ["HealthProblem": problem]
    }

    static let metrics = OpenAPIOperation(
        operationID: "metrics", summary: "Prometheus metrics",
        description:
            "Requests by route pattern and status, a latency histogram, requests by protocol (`jotter_http_requests_by_protocol_total`) and open connections by protocol (`jotter_http_connections`), in the text exposition format 0.0.4; gauges read when scraped: `jotter_notes`, `jotter_uploads`, `jotter_upload_bytes`, `jotter_database_bytes`, `jotter_data_free_bytes`, `jotter_event_streams`, `jotter_uptime_seconds`, `jotter_build_info`.",
        tags: ["service"],
        responses: [200: OpenAPIResponse("the metrics", content: ["text/plain": .string()])])
}
