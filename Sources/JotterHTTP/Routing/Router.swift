/// Builds the route table: register routes and middleware, then `build()` an immutable `Router`.
///
/// ```swift
/// var routes = RouterBuilder()
/// routes.add(middleware: ErrorMiddleware(log: log))
/// routes.get("/notes/:id") { request, context in
///     let id = try context.parameters.require("id", as: Int.self)
///     return try notes.show(id).response(for: request)
/// }
/// let router = routes.build()
/// ```
public struct RouterBuilder {
    var middleware: [any Middleware] = []
    var routes: [Route] = []

    public init() {}

    /// Adds middleware that wraps every route registered after it, and the 404/405 answers.
    public mutating func add(middleware: any Middleware) {
        self.middleware.append(middleware)
    }

    /// Registers `handler` for `method` on `path`; `:name` segments are parameters.
    /// `operation` is the route's OpenAPI description (`OpenAPIDocument` renders the table).
    public mutating func on<Output: ResponseGenerator>(
        _ method: HTTPMethod, _ path: String, options: RouteOptions = RouteOptions(), operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output
    ) {
        let responder = middleware.wrapping { request, context in try handler(request, context).response(for: request) }
        routes.append(Route(method: method, pattern: PathPattern(path), options: options, operation: operation, responder: responder))
    }

    public mutating func get<Output: ResponseGenerator>(_ path: String, options: RouteOptions = RouteOptions(), operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.get, path, options: options, operation: operation, handler: handler) }
    public mutating func post<Output: ResponseGenerator>(_ path: String, options: RouteOptions = RouteOptions(), operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.post, path, options: options, operation: operation, handler: handler) }
    public mutating func put<Output: ResponseGenerator>(_ path: String, options: RouteOptions = RouteOptions(), operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.put, path, options: options, operation: operation, handler: handler) }
    public mutating func patch<Output: ResponseGenerator>(_ path: String, options: RouteOptions = RouteOptions(), operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.patch, path, options: options, operation: operation, handler: handler) }
    public mutating func delete<Output: ResponseGenerator>(_ path: String, options: RouteOptions = RouteOptions(), operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.delete, path, options: options, operation: operation, handler: handler) }

    /// The finished, immutable router.
    public func build() -> Router {
        Router(routes: routes, fallback: middleware.wrapping { request, context in throw context.routingError ?? HTTPError(.notFound) })
    }
}

/// Per-route settings.
public struct RouteOptions: Sendable {
    /// Whether `_method` in a form or JSON body may override POST (streamed bodies: header only).
    public var methodOverrideFromBody: Bool
    public init(methodOverrideFromBody: Bool = true) {
        self.methodOverrideFromBody = methodOverrideFromBody
    }
}

struct Route: Sendable {
    let method: HTTPMethod
    let pattern: PathPattern
    let options: RouteOptions
    let operation: OpenAPIOperation?
    let responder: Responder
}

/// The immutable route table: resolves the method override, the path and its parameters, and
/// answers `404`, `405` (with `Allow`) and `HEAD` for any `GET` route.
public struct Router: Sendable {
    /// Routes without parameters by their canonical path ("/notes"), looked up before any split.
    let staticRoutes: [String: [Route]]
    let routes: [Route]
    let fallback: Responder

    /// Every registered route (method, path pattern, OpenAPI operation), in registration order.
    public var table: [RouteEntry] { routes.map { RouteEntry(method: $0.method, path: $0.pattern.text, operation: $0.operation) } }

    init(routes: [Route], fallback: @escaping Responder) {
        self.routes = routes
        self.fallback = fallback
        staticRoutes = Dictionary(grouping: routes.filter(\.pattern.isStatic), by: \.pattern.canonicalPath)
    }

    /// The routes whose path matches, with the path's parameters.
    func candidates(for path: Substring) throws(HTTPError) -> [(route: Route, parameters: Parameters)] {
        if let routes = staticRoutes[String(path)] {
            return routes.map { (route: $0, parameters: Parameters()) }
        }
        let segments = try PathPattern.segments(of: path)
        return routes.compactMap { route in route.pattern.match(segments).map { (route: route, parameters: $0) } }
    }

    /// Answers `request`; never throws, since errors are rendered by the middleware.
    public func respond(to request: Request) -> Response {
        var request = request
        var context = RequestContext()
        do {
            let candidates = try candidates(for: request.path)
            if candidates.isEmpty {
                context.routingError = HTTPError(.notFound, detail: "no resource at \(request.path)")
                return try fallback(request, context)
            }
            if request.method == .post {
                let fromBody = candidates.allSatisfy { $0.route.options.methodOverrideFromBody }
                request.method = try MethodOverride.resolve(request, fromBody: fromBody)
            }
            let method = request.method == .head && !candidates.contains { $0.route.method == .head } ? .get : request.method
            guard let match = candidates.first(where: { $0.route.method == method }) else {
                let allowed = Set(candidates.map(\.route.method.rawValue))
                let allow = (allowed.contains("GET") ? allowed.union(["HEAD"]) : allowed).sorted().joined(separator: ", ")
                context.routingError = HTTPError(.methodNotAllowed, detail: "\(request.method) is not allowed on \(request.path); allowed: \(allow)",
                                                 headers: HTTPHeaders([("Allow", allow)]))
                return try fallback(request, context)
            }
            context.parameters = match.parameters
            var response = try match.route.responder(request, context)
            response.route = match.route.pattern.text
            return response
        } catch let error as HTTPError {
            context.routingError = error
        } catch {
            context.routingError = HTTPError(.internalServerError)
        }
        return (try? fallback(request, context)) ?? ErrorMiddleware.render(context.routingError ?? HTTPError(.internalServerError), requestID: request.id)
    }
}
