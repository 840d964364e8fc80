/// Builds the route table: register middleware, routes and groups, then `build()` an
/// immutable `Router`.
///
/// ```swift
/// var routes = RouterBuilder()
/// routes.add(middleware: ErrorMiddleware(log: log))
/// routes.get("/healthz") { _, _ in "ok" }
/// routes.group { protected in
///     protected.add(middleware: Authentication())     // only for the routes of this group
///     protected.get("/notes/:id") { request, context in
///         let id = try context.parameters.require("id", as: Int.self)
///         return try notes.show(id).response(for: request)
///     }
/// }
/// let router = routes.build()
/// ```
public struct RouterBuilder {
    private(set) var middleware: [any Middleware] = []
    private var stack: MiddlewareStack?
    var routes: [Route] = []
    /// Peers whose `Forwarded` / `X-Forwarded-For` / `X-Forwarded-Proto` give the client's
    /// address and scheme (`RequestHead.remoteAddress`, `forwardedProto`); none by default.
    public var trustedProxies = TrustedProxies()
    /// Where the routes registered from now on run when they don't say (`WorkPlace`); a group
    /// starts with its parent's. `.loop` by default.
    public var runs = WorkPlace.loop

    public init() {}

    /// Adds middleware that wraps every route registered after it (in this builder or group),
    /// and — at the top level — the answers given without a route (404, 405, framing errors).
    public mutating func add(middleware: any Middleware) {
        self.middleware.append(middleware)
        stack = nil
    }

    /// Routes registered in `configure` get the middleware added there too; the middleware
    /// added inside stays inside.
    public mutating func group(_ configure: (inout RouterBuilder) -> Void) {
        var group = RouterBuilder()
        group.middleware = middleware
        group.runs = runs
        group.stack = currentStack()
        configure(&group)
        routes += group.routes
    }

    /// Registers `handler` for `method` on `path`; `:name` segments are parameters. `body` says
    /// how the request body is read (default: none for GET, HEAD and OPTIONS, buffered otherwise);
    /// `runs` where the route's work runs (default: the builder's `runs`). `operation` is the
    /// route's OpenAPI description (`OpenAPIDocument` renders the table).
    public mutating func on<Output: ResponseGenerator>(
        _ method: HTTPMethod, _ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output
    ) {
        let stack = currentStack()
        let responder = stack.wrap { request, context in try handler(request, context).reply(for: request) }
        routes.append(Route(method: method, pattern: PathPattern(path), body: body ?? .standard(for: method), place: runs ?? self.runs,
                            operation: operation, stack: stack, responder: responder))
    }

    public mutating func get<Output: ResponseGenerator>(_ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.get, path, body: body, runs: runs, operation: operation, handler: handler) }
    public mutating func post<Output: ResponseGenerator>(_ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.post, path, body: body, runs: runs, operation: operation, handler: handler) }
    public mutating func put<Output: ResponseGenerator>(_ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.put, path, body: body, runs: runs, operation: operation, handler: handler) }
    public mutating func patch<Output: ResponseGenerator>(_ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.patch, path, body: body, runs: runs, operation: operation, handler: handler) }
    public mutating func delete<Output: ResponseGenerator>(_ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output) { on(.delete, path, body: body, runs: runs, operation: operation, handler: handler) }

    /// The finished, immutable router.
    public func build() -> Router {
        var builder = self
        return Router(routes: routes, stack: builder.currentStack(), trustedProxies: trustedProxies)
    }

    private mutating func currentStack() -> MiddlewareStack {
        if let stack { return stack }
        let made = MiddlewareStack(middleware)
        stack = made
        return made
    }
}

final class Route: Sendable {
    let method: HTTPMethod
    let pattern: PathPattern
    let body: BodyPolicy
    let place: WorkPlace
    let operation: OpenAPIOperation?
    let stack: MiddlewareStack
    let responder: Responder

    init(method: HTTPMethod, pattern: PathPattern, body: BodyPolicy, place: WorkPlace = .loop, operation: OpenAPIOperation? = nil,
         stack: MiddlewareStack, responder: @escaping Responder) {
        self.method = method
        self.pattern = pattern
        self.body = body
        self.place = place
        self.operation = operation
        self.stack = stack
        self.responder = responder
    }
}

/// Where a request goes, decided from its head.
struct RouteMatch {
    /// The route that answers; nil while a `_method` field in the body may still choose (see
    /// `overrideCandidates`), or when `error` answers instead.
    var route: Route?
    var parameters = Parameters()
    /// How the body is read.
    var body: BodyPolicy = .noBody
    /// Where the route's work runs (while `_method` may still choose: the POST route's place).
    var place = WorkPlace.loop
    /// The middleware whose head phase runs now.
    var stack: MiddlewareStack
    /// A POST whose buffered body may carry `_method`: the routes it may pick from, and the POST
    /// route that answers without one.
    var overrideCandidates: [(route: Route, parameters: Parameters)] = []
    /// 400 (bad path), 404 or 405 — answered through the router's own middleware.
    var error: HTTPError?
}

/// The immutable route table: resolves the path and its parameters and the method override,
/// and answers `404`, `405` (with `Allow`) and `HEAD` for any `GET` route.
public struct Router: Sendable {
    /// Routes without parameters by their canonical path ("/notes"), looked up before any split.
    let staticRoutes: [String: [(route: Route, parameters: Parameters)]]
    /// The patterns with parameters, each once with its routes, by segment count, in
    /// registration order: a path is split and matched once per pattern, not once per route.
    let dynamicPatterns: [Int: [(pattern: PathPattern, routes: [Route])]]
    let routes: [Route]
    /// The top-level middleware: they answer what no route does.
    let stack: MiddlewareStack
    let trustedProxies: TrustedProxies

    /// Every registered route (method, path pattern, OpenAPI operation), in registration order.
    public var table: [RouteEntry] { routes.map { RouteEntry(method: $0.method, path: $0.pattern.text, operation: $0.operation) } }

    /// Methods a `_method` field or `X-HTTP-Method-Override` header may turn a POST into.
    static let overridable: Set<String> = ["PUT", "PATCH", "DELETE"]

    init(routes: [Route], stack: MiddlewareStack, trustedProxies: TrustedProxies = TrustedProxies()) {
        self.routes = routes
        self.stack = stack
        self.trustedProxies = trustedProxies
        staticRoutes = Dictionary(grouping: routes.filter(\.pattern.isStatic), by: \.pattern.canonicalPath)
            .mapValues { $0.map { (route: $0, parameters: Parameters()) } }
        var patterns: [(pattern: PathPattern, routes: [Route])] = []
        for route in routes where !route.pattern.isStatic {
            if let index = patterns.firstIndex(where: { $0.pattern.text == route.pattern.text }) {
                patterns[index].routes.append(route)
            } else {
                patterns.append((route.pattern, [route]))
            }
        }
        dynamicPatterns = Dictionary(grouping: patterns, by: \.pattern.segments.count)
    }

    /// The routes whose path matches, with the path's parameters.
    func candidates(for path: Substring) throws(HTTPError) -> [(route: Route, parameters: Parameters)] {
        if let routes = staticRoutes[String(path)] { return routes }
        let segments = try PathPattern.segments(of: path)
        var found: [(route: Route, parameters: Parameters)] = []
        for (pattern, routes) in dynamicPatterns[segments.count] ?? [] {
            guard let parameters = pattern.match(segments) else { continue }
            found.reserveCapacity(found.count + routes.count)
            for route in routes { found.append((route: route, parameters: parameters)) }
        }
        return found
    }

    /// Routes `head` (applying an `X-HTTP-Method-Override` header to a POST).
    /// The router's answer for a method no route has (`404` for an unknown path, else `405`
    /// with `Allow`), closing the connection: for a request whose head the engine could not
    /// parse past its method.
    func refusal(method: String, target: String) -> HTTPError? {
        var head = RequestHead(method: HTTPMethod(method), target: target)
        guard var error = resolve(&head).error else { return nil }
        error.closesConnection = true
        return error
    }

    func resolve(_ head: inout RequestHead) -> RouteMatch {
        if !trustedProxies.isEmpty { head.forwarded = trustedProxies.forwarded(peer: head.peerAddress, headers: head.headers) }
        let candidates: [(route: Route, parameters: Parameters)]
        do { candidates = try self.candidates(for: head.path) } catch {
            return RouteMatch(stack: stack, error: error)
        }
        guard !candidates.isEmpty else {
            return RouteMatch(stack: stack, error: HTTPError(.notFound, detail: "no resource at \(Logger.sanitize(String(head.path)))"))
        }
        if head.method == .post {
            if let header = head.headers["X-HTTP-Method-Override"] {
                do { head.method = try Self.override(header) } catch { return RouteMatch(stack: stack, error: error) }
            } else if candidates.allSatisfy({ $0.route.body.isBuffered || $0.route.method == .get || $0.route.method == .head }),
                      candidates.contains(where: { $0.route.method == .post || Self.overridable.contains($0.route.method.rawValue) }) {
                // `_method` in the body may still choose: read it as the POST route reads its body,
                // or (no POST route) as the largest of the routes it may choose — then under the
                // router's own middleware only, so that a POST without `_method` is `405` before
                // any route's middleware (authentication) has run; the route `_method` picks runs
                // its middleware's head phase once the body is read.
                let post = candidates.first { $0.route.method == .post }
                let limits = candidates.filter { $0.route.body.isBuffered }.map { $0.route.body.memoryLimit }
                let body = post?.route.body ?? .buffered(limit: limits.contains { $0 == nil } ? nil : limits.compactMap { $0 }.max())
                return RouteMatch(route: nil, parameters: post?.parameters ?? candidates[0].parameters, body: body,
                                  place: post?.route.place ?? .loop, stack: post?.route.stack ?? stack, overrideCandidates: candidates)
            }
        }
        return select(head.method, among: candidates, path: head.path)
    }

    /// After a body that could carry `_method`: the route it (or its absence) picks.
    func finish(_ match: RouteMatch, head: inout RequestHead, body: RequestBody) -> RouteMatch {
        do {
            if let field = try body.string("_method") {
                head.method = try Self.override(field)
            }
        } catch {
            return RouteMatch(stack: match.stack, error: error)
        }
        return select(head.method, among: match.overrideCandidates, path: head.path)
    }

    private func select(_ method: HTTPMethod, among candidates: [(route: Route, parameters: Parameters)], path: Substring) -> RouteMatch {
        let wanted = method == .head && !candidates.contains { $0.route.method == .head } ? .get : method
        guard let match = candidates.first(where: { $0.route.method == wanted }) else {
            let allowed = Set(candidates.map(\.route.method.rawValue))
            let allow = (allowed.contains("GET") ? allowed.union(["HEAD"]) : allowed).sorted().joined(separator: ", ")
            return RouteMatch(stack: stack, error: HTTPError(.methodNotAllowed,
                detail: "\(Logger.sanitize(method.rawValue)) is not allowed on \(Logger.sanitize(String(path))); allowed: \(allow)",
                headers: HTTPHeaders([("Allow", allow)])))
        }
        return RouteMatch(route: match.route, parameters: match.parameters, body: match.route.body, place: match.route.place,
                          stack: match.route.stack)
    }

    private static func override(_ value: String) throws(HTTPError) -> HTTPMethod {
        let method = value.trimmingASCIISpaces().uppercased()
        guard overridable.contains(method) else {
            throw HTTPError.badRequest("method override '\(Logger.sanitize(value))' is not one of PUT, PATCH, DELETE")
        }
        return HTTPMethod(method)
    }
}
