import JotterHTTP
import Synchronization

/// `GET /openapi.json`: the OpenAPI 3.1 description of every endpoint, derived from the route
/// table (each route's `OpenAPIOperation`) and the wire types' schemas, rendered once when the
/// router is built. `docs/openapi.json` is a copy that a test keeps current.
final class OpenAPIController: Sendable {
    private let document = Mutex<[UInt8]>([])

    func register(in routes: inout RouterBuilder) {
        routes.get("/openapi.json", operation: OpenAPIOperations.document) { [self] request, _ in
            Response(status: .ok, contentType: "application/json", body: self.document.withLock { $0 })
        }
    }

    /// Renders the document of `router`'s routes; call once the router is built.
    func publish(_ router: Router) {
        let bytes = OpenAPIDocument.render(routes: router.table, info: OpenAPIOperations.info, components: OpenAPIOperations.components)
        document.withLock { $0 = bytes }
    }
}
