import Synchronization

/// Request counts by method, route and status, and a latency histogram by route, in the
/// Prometheus text format. A middleware: it records each request when it is over — later
/// replies with their real status, requests refused before routing as route `unmatched`.
///
/// Every label comes from a closed set, so no request can add series: the route pattern
/// (`/notes/:id`, never the raw path), the standard methods (anything else is `other`), and
/// the status code.
///
/// ```swift
/// let metrics = Metrics()
/// routes.add(middleware: metrics)
/// routes.get("/metrics") { _, _ in Response(status: .ok, contentType: Metrics.contentType, body: Array(metrics.render().utf8)) }
/// ```
public final class Metrics: Middleware {
    /// Upper bounds of the latency buckets, in seconds.
    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct Key: Hashable { let method: String; let route: String; let status: Int }
    private struct Latency { var counts = [Int](repeating: 0, count: Metrics.buckets.count); var total = 0; var sum = 0.0 }
    private struct State {
        var requests: [Key: Int] = [:]
        var latency: [String: Latency] = [:]
    }

    private let state = Mutex(State())

    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public init() {}

    /// The methods counted by name; any other is counted as `other`.
    static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    public func completed(_ exchange: CompletedExchange) {
        let method = exchange.head.map { Self.methods.contains($0.originalMethod.rawValue) ? $0.originalMethod.rawValue : "other" } ?? "other"
        record(method: method, route: exchange.context.route ?? "unmatched", status: exchange.status,
               seconds: Double(exchange.responseMicroseconds ?? exchange.microseconds) / 1_000_000)
    }

    func record(method: String, route: String, status: Int, seconds: Double) {
        state.withLock { state in
            state.requests[Key(method: method, route: route, status: status), default: 0] += 1
            var latency = state.latency[route, default: Latency()]
            if let bucket = Self.buckets.firstIndex(where: { seconds <= $0 }) { latency.counts[bucket] += 1 }
            latency.total += 1
            latency.sum += seconds
            state.latency[route] = latency
        }
    }

    /// The Prometheus text exposition of everything recorded so far.
    public func render() -> String {
        let snapshot = state.withLock { $0 }
        var text = "# HELP jotter_http_requests_total HTTP requests answered, by method, route and status.\n"
        text += "# TYPE jotter_http_requests_total counter\n"
        for (key, count) in snapshot.requests.sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            text += "jotter_http_requests_total{method=\"\(key.method)\",route=\"\(Self.escape(key.route))\",status=\"\(key.status)\"} \(count)\n"
        }
        text += "# HELP jotter_http_request_duration_seconds Time from the request line to the queued response, by route.\n"
        text += "# TYPE jotter_http_request_duration_seconds histogram\n"
        for (route, latency) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            let label = "route=\"\(Self.escape(route))\""
            var cumulative = 0
            for (bound, count) in zip(Self.buckets, latency.counts) {
                cumulative += count
                text += "jotter_http_request_duration_seconds_bucket{\(label),le=\"\(bound)\"} \(cumulative)\n"
            }
            text += "jotter_http_request_duration_seconds_bucket{\(label),le=\"+Inf\"} \(latency.total)\n"
            text += "jotter_http_request_duration_seconds_sum{\(label)} \(latency.sum)\n"
            text += "jotter_http_request_duration_seconds_count{\(label)} \(latency.total)\n"
        }
        return text
    }

    private static func escape(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
    }
}
