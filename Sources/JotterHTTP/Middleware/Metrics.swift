import Synchronization

/// Request counts by method, route and status, and a latency histogram by route, in the
/// Prometheus text format. A middleware: it records each answer as it is handed to the engine —
/// later replies with their real status, requests refused before routing as route `unmatched`.
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

    /// One route's series: counts by method and status, and its latency histogram.
    private struct Series {
        /// The route pattern, or `unmatched`.
        let route: String
        /// Counts by `methodIndex << 16 | status`: a route sees few of them, so a list.
        var requests: [(key: Int, count: Int)] = []
        var buckets = [Int](repeating: 0, count: Metrics.buckets.count)
        var total = 0
        /// The durations' sum, in whole microseconds: written as decimal seconds exactly
        /// (a sum of `Double` seconds drifts: `0.00045400000000000003`).
        var microseconds = 0

        init(route: String) { self.route = route }

        mutating func record(method: Int, status: Int, microseconds elapsed: Int) {
            let seconds = Double(elapsed) / 1_000_000
            let key = method << 16 | status
            if let index = requests.firstIndex(where: { $0.key == key }) {
                requests[index].count += 1
            } else {
                requests.append((key, 1))
            }
            if let bucket = Metrics.buckets.firstIndex(where: { seconds <= $0 }) { buckets[bucket] += 1 }
            total += 1
            microseconds += elapsed
        }
    }

    /// Everything counted, under one lock.
    private struct Counts {
        /// By route pattern number (`PathPattern.number`) + 1; 0 is `unmatched`.
        var series: [Series?] = [Series(route: "unmatched")]
        /// Requests by `protocols` index.
        var byProtocol = [Int](repeating: 0, count: Metrics.protocols.count)

        mutating func record(route: PathPattern?, method: Int, status: Int, microseconds: Int) {
            let slot = route.map { $0.number + 1 } ?? 0
            if slot >= series.count { series += [Series?](repeating: nil, count: slot + 1 - series.count) }
            if series[slot] == nil { series[slot] = Series(route: route?.text ?? "unmatched") }
            series[slot]!.record(method: method, status: status, microseconds: microseconds)
        }
    }

    private let counts = Mutex(Counts())
    /// Text the application appends to every `render()`: gauges it owns (see `addCollector`).
    private let collectors = Mutex<[@Sendable () -> String]>([])

    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public init() {}

    /// Appends what `collector` returns (whole `# HELP`/`# TYPE`/sample lines) to every
    /// `render()`, after the request metrics.
    public func addCollector(_ collector: @escaping @Sendable () -> String) {
        collectors.withLock { $0.append(collector) }
    }

    /// The methods counted by name; any other is counted as `other` (the last index).
    static let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"]

    /// The protocols requests are counted by: a request's version (`HTTP/2.0` is `HTTP/2`).
    static let protocols = ["HTTP/1.0", "HTTP/1.1", "HTTP/2"]

    /// The label of a request's version.
    public static func protocolName(_ version: String) -> String { version == "HTTP/2.0" ? "HTTP/2" : version }

    /// Counts every answer the server makes, as it is handed over — before the client can see it,
    /// so a client that reads `/metrics` next finds its request counted.
    public func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        let reply = try next(request, context)
        if let status = reply.nowStatus {
            record(request.head, context: context, status: status)
            return reply
        }
        return reply.map { [self] response in
            record(request.head, context: context, status: response.status.code)
            return response
        }
    }

    /// Counts what the engine answered before the request reached the middleware
    /// (a request line or header section too long: status 0, route `unmatched`).
    public func completed(_ exchange: CompletedExchange) {
        guard exchange.head == nil else { return }
        counts.withLock { $0.record(route: nil, method: Self.methods.count - 1, status: exchange.status, microseconds: exchange.microseconds) }
    }

    /// Counted under the method the request was routed as: a `POST` with `_method=PUT` or
    /// `X-HTTP-Method-Override: PUT` is a `PUT` (the access log shows what was sent).
    private func record(_ head: RequestHead, context: RequestContext, status: Int) {
        let method = Self.methodIndex(head.method)
        let version = head.version
        let protocolIndex = version == "HTTP/1.1" ? 1 : version == "HTTP/2.0" ? 2 : version == "HTTP/1.0" ? 0 : nil
        let route = context.matchedRoute?.pattern
        counts.withLock { counts in
            counts.record(route: route, method: method, status: status, microseconds: context.elapsedMicroseconds)
            if let protocolIndex { counts.byProtocol[protocolIndex] += 1 }
        }
    }

    /// The index in `methods` (the last: `other`).
    static func methodIndex(_ method: HTTPMethod) -> Int {
        switch method {
        case .get: 0
        case .head: 1
        case .post: 2
        case .put: 3
        case .patch: 4
        case .delete: 5
        case .options: 6
        default: 7
        }
    }

    /// The Prometheus text exposition of everything recorded so far.
    public func render() -> String {
        let (series, byProtocol) = counts.withLock { ($0.series, $0.byProtocol) }
        // Routes of one pattern share a number, and so a series.
        let snapshot = series.compactMap { $0 }.map { (key: $0.route, value: $0) }.sorted { $0.key < $1.key }
        var text = "# HELP jotter_http_requests_total HTTP requests answered, by method, route and status.\n"
        text += "# TYPE jotter_http_requests_total counter\n"
        for (route, series) in snapshot {
            for (key, count) in series.requests.sorted(by: { $0.key < $1.key }) {
                text +=
                    "jotter_http_requests_total{method=\"\(Self.methods[key >> 16])\",route=\"\(Self.escape(route))\",status=\"\(key & 0xFFFF)\"} \(count)\n"
            }
        }
        text += "# HELP jotter_http_request_duration_seconds Time from the request line to the response handed to the engine, by route.\n"
        text += "# TYPE jotter_http_request_duration_seconds histogram\n"
        for (route, series) in snapshot {
            let label = "route=\"\(Self.escape(route))\""
            var cumulative = 0
            for (bound, count) in zip(Self.buckets, series.buckets) {
                cumulative += count
                text += "jotter_http_request_duration_seconds_bucket{\(label),le=\"\(bound)\"} \(cumulative)\n"
            }
            text += "jotter_http_request_duration_seconds_bucket{\(label),le=\"+Inf\"} \(series.total)\n"
            text += "jotter_http_request_duration_seconds_sum{\(label)} \(Self.seconds(microseconds: series.microseconds))\n"
            text += "jotter_http_request_duration_seconds_count{\(label)} \(series.total)\n"
        }
        text += "# HELP jotter_http_requests_by_protocol_total HTTP requests answered, by protocol.\n"
        text += "# TYPE jotter_http_requests_by_protocol_total counter\n"
        for (name, count) in zip(Self.protocols, byProtocol) {
            text += "jotter_http_requests_by_protocol_total{protocol=\"\(name)\"} \(count)\n"
        }
        for collector in collectors.withLock({ $0 }) { text += collector() }
        return text
    }

    /// Whole microseconds as decimal seconds, exactly and without trailing zeros: `0.000454`, `12.5`, `0`.
    static func seconds(microseconds: Int) -> String {
        let whole = microseconds / 1_000_000, fraction = microseconds % 1_000_000
        guard fraction != 0 else { return String(whole) }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }

    public static func escape(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
    }
}
