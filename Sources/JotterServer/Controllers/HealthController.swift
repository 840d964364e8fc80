import JotterAPI
import JotterHTTP

/// `GET /healthz`: `{"status":"ok"}` while the server can serve.
struct HealthController {
    func register(in routes: inout RouterBuilder) {
        routes.get("/healthz") { request, _ in JSON(HealthStatus(status: "ok")) }
    }
}
