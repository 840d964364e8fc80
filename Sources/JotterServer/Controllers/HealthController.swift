import JotterAPI
import JotterHTTP

/// `GET /healthz`: `{"status":"ok"}` while the server can serve; `GET /metrics`: Prometheus text.
struct HealthController {
    let metrics: Metrics

    func register(in routes: inout RouterBuilder) {
        routes.get("/healthz", operation: HealthOperations.health) { request, _ in JSON(HealthStatus(status: "ok")) }
    }

    /// `/metrics`, registered apart: it needs credentials when they are required.
    func registerMetrics(in routes: inout RouterBuilder) {
        let metrics = self.metrics
        routes.get("/metrics", operation: HealthOperations.metrics) { request, _ in
            Response(status: .ok, contentType: Metrics.contentType, body: Array(metrics.render().utf8))
        }
    }
}
