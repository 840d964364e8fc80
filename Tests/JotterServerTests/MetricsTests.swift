import Testing
import JotterServerTestSupport

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

    @Test("a method override is counted as the method it was routed as, not the POST that carried it")
    func overrideCountedAsRouted() throws {
        try TestApp.with { app in
            #expect(try app.request("POST", "/notes", body: "body=x").status == 201)
            #expect(try app.request("POST", "/notes/1", body: "_method=PUT&body=y").status == 200)
            #expect(try app.request("POST", "/notes/1", headers: [("X-HTTP-Method-Override", "PATCH")], body: "body=z").status == 200)
            let text = try app.request("GET", "/metrics").text
            #expect(text.contains(#"jotter_http_requests_total{method="PUT",route="/notes/:id",status="200"} 1"#), "\(text)")
            #expect(text.contains(#"jotter_http_requests_total{method="PATCH",route="/notes/:id",status="200"} 1"#), "\(text)")
            #expect(!text.contains(#"jotter_http_requests_total{method="POST",route="/notes/:id""#), "\(text)")
        }
    }

    /// A request its route's middleware refuses from the head (no credentials) is counted under
    /// that route: it was counted as `unmatched`, with the 404s of unknown paths, so 401s per
    /// route could not be told apart (operator trial, F4).
    @Test("a request refused by its route's middleware is counted under the route, not as unmatched")
    func refusalsCountedUnderTheirRoute() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            try app.addUser("ann", password: "correct horse", admin: true)
            let token = try app.token("ann", password: "correct horse")
            #expect(try app.request("GET", "/notes").status == 401)
            #expect(try app.request("GET", "/notes/1").status == 401)
            #expect(try app.request("GET", "/metrics").status == 401)
            let text = try app.request("GET", "/metrics", token: token).text
            #expect(text.contains(#"jotter_http_requests_total{method="GET",route="/notes",status="401"} 1"#), "\(text)")
            #expect(text.contains(#"jotter_http_requests_total{method="GET",route="/notes/:id",status="401"} 1"#), "\(text)")
            #expect(text.contains(#"jotter_http_requests_total{method="GET",route="/metrics",status="401"} 1"#), "\(text)")
            #expect(!text.contains(#"jotter_http_requests_total{method="GET",route="unmatched""#), "\(text)")
        }
    }

    /// Sums of durations are whole microseconds written as decimals, so a scrape never shows
    /// binary floating-point noise (`0.00045400000000000003`).
    @Test("every sample's value is a plain decimal: at most six digits after the point")
    func plainDecimals() throws {
        try TestApp.with { app in
            for index in 0..<200 { _ = try app.request("GET", "/hello?name=\(index)") }
            let text = try app.request("GET", "/metrics").text
            let samples = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
            #expect(samples.count > 10)
            for sample in samples {
                let value = sample.split(separator: " ").last.map(String.init) ?? ""
                #expect(value.wholeMatch(of: /-?[0-9]+(\.[0-9]{1,6})?/) != nil, "\(sample)")
            }
        }
    }
}
