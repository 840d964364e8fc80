import Testing
import JotterTestSupport

@Suite("Metrics")
struct MetricsTests {
    @Test("requests are counted by method, route pattern and status, deferred writes with their real status")
    func counts() throws {
        try TestApp.with { app in
            _ = try app.request("GET", "/hello?name=a")
            _ = try app.request("GET", "/hello?name=b")
            _ = try app.request("POST", "/notes", body: "body=x")
            _ = try app.request("GET", "/notes/1")
            _ = try app.request("GET", "/notes/99")
            _ = try app.request("GET", "/nowhere")
            let response = try app.request("GET", "/metrics")
            #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
            let text = response.text
            #expect(text.contains(#"jotter_http_requests_total{method="GET",route="/hello",status="200"} 2"#))
            #expect(text.contains(#"jotter_http_requests_total{method="POST",route="/notes",status="201"} 1"#))
            #expect(text.contains(#"jotter_http_requests_total{method="GET",route="/notes/:id",status="200"} 1"#))
            #expect(text.contains(#"jotter_http_requests_total{method="GET",route="/notes/:id",status="404"} 1"#))
            #expect(text.contains(#"jotter_http_requests_total{method="GET",route="unmatched",status="404"} 1"#))
            #expect(text.contains(#"jotter_http_request_duration_seconds_count{route="/hello"} 2"#))
            #expect(text.contains(#"jotter_http_request_duration_seconds_bucket{route="/hello",le="+Inf"} 2"#))
        }
    }
}
