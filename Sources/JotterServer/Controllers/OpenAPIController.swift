import JotterHTTP

/// `GET /openapi.json`: the OpenAPI 3.1 description of every endpoint. A test checks that it
/// names exactly the routes the server registers.
struct OpenAPIController {
    func register(in routes: inout RouterBuilder) {
        routes.get("/openapi.json") { request, _ in
            Response(status: .ok, contentType: "application/json", body: Array(OpenAPIDocument.json.utf8))
        }
    }
}
