import Glibc

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
        routes.append(
            Route(
                method: method, pattern: PathPattern(path), body: body ?? .standard(for: method), place: runs ?? self.runs,
                operation: operation, stack: currentStack(),
                handler: { request, context in try handler(request, context).reply(for: request) }))
    }

    public mutating func get<Output: ResponseGenerator>(
        _ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output
    ) { on(.get, path, body: body, runs: runs, operation: operation, handler: handler) }
    public mutating func post<Output: ResponseGenerator>(
        _ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output
    ) { on(.post, path, body: body, runs: runs, operation: operation, handler: handler) }
    public mutating func put<Output: ResponseGenerator>(
        _ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output
    ) { on(.put, path, body: body, runs: runs, operation: operation, handler: handler) }
    public mutating func patch<Output: ResponseGenerator>(
        _ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output
    ) { on(.patch, path, body: body, runs: runs, operation: operation, handler: handler) }
    public mutating func delete<Output: ResponseGenerator>(
        _ path: String, body: BodyPolicy? = nil, runs: WorkPlace? = nil, operation: OpenAPIOperation? = nil,
        handler: @escaping @Sendable (Request, RequestContext) throws -> Output
    ) { on(.delete, path, body: body, runs: runs, operation: operation, handler: handler) }

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
    /// `place` is the connection's loop (read once here, not per request).
    let runsOnLoop: Bool
    let operation: OpenAPIOperation?
    /// The middleware around the handler.
    let stack: MiddlewareStack
    /// The handler itself; `stack.respond` runs it inside the middleware.
    let handler: @Sendable (Request, RequestContext) throws -> Reply

    init(
        method: HTTPMethod, pattern: PathPattern, body: BodyPolicy, place: WorkPlace = .loop, operation: OpenAPIOperation? = nil,
        stack: MiddlewareStack, handler: @escaping @Sendable (Request, RequestContext) throws -> Reply
    ) {
        self.method = method
        self.pattern = pattern
        self.body = body
        self.place = place
        runsOnLoop = place.isLoop
        self.operation = operation
        self.stack = stack
        self.handler = handler
    }
}

/// Where the router sends a request, decided from its head.
enum Resolution {
    /// This route answers, with these path parameters.
    case route(Route, Parameters)
    /// A POST whose buffered body may carry `_method`: the route is picked once the body is read.
    case choice(MethodChoice)
    /// 400 (bad path), 404, 405 or a bad override header — answered through the router's own middleware.
    case refused(HTTPError)
}

/// The routes whose pattern matches a path, with the path's parameters: by pattern, each
/// pattern's routes as the router holds them (a dynamic path makes one array of the matching
/// patterns, usually one, not one entry per route; a static path makes none).
struct Candidates: Sendable {
    var groups: [(routes: [Route], parameters: Parameters)]

    var isEmpty: Bool { groups.isEmpty }

    /// Every candidate route, in order.
    var routes: LazySequence<FlattenSequence<LazyMapSequence<[(routes: [Route], parameters: Parameters)], [Route]>>> {
        groups.lazy.flatMap(\.routes)
    }

    /// The first route for which `matches` holds, with its parameters.
    func first(where matches: (Route) -> Bool) -> (route: Route, parameters: Parameters)? {
        for group in groups {
            for route in group.routes where matches(route) { return (route, group.parameters) }
        }
        return nil
    }
}

/// The routes a POST's `_method` field may pick from, and how its body is read meanwhile.
final class MethodChoice: Sendable {
    /// The candidates (the POST route among them, which answers without `_method`).
    let candidates: Candidates
    /// How the body is read: as the POST route reads it, or as the largest of the others.
    let body: BodyPolicy
    /// Where the work runs until the route is known: the POST route's place.
    let place: WorkPlace
    let runsOnLoop: Bool
    /// The middleware whose head phase runs before the body: the POST route's, or the router's own.
    let stack: MiddlewareStack

    init(candidates: Candidates, body: BodyPolicy, place: WorkPlace, stack: MiddlewareStack) {
        self.candidates = candidates
        self.body = body
        self.place = place
        runsOnLoop = place.isLoop
        self.stack = stack
    }
}

/// The immutable route table: resolves the path and its parameters and the method override,
/// and answers `404`, `405` (with `Allow`) and `HEAD` for any `GET` route. (A class: every
/// request holds it, with one reference count.)
public final class Router: Sendable {
    /// Routes without parameters, by the length of their path then the path's bytes: a path is
    /// compared with the few of its length, byte by byte, before any split.
    let staticRoutes: [[(path: [UInt8], candidates: Candidates)]]
    /// The patterns with parameters, each once with its routes, by segment count (the index), in
    /// registration order: a path is matched once per pattern, not once per route.
    let dynamicPatterns: [[(pattern: PathPattern, routes: [Route])]]
    let routes: [Route]
    /// The top-level middleware: they answer what no route does.
    let stack: MiddlewareStack
    let trustedProxies: TrustedProxies

    /// Every registered route (method, path pattern, OpenAPI operation), in registration order.
    public var table: [RouteEntry] { routes.map { RouteEntry(method: $0.method, path: $0.pattern.text, operation: $0.operation) } }

    /// Methods a `_method` field or `X-HTTP-Method-Override` header may turn a POST into.
    static let overridable: [HTTPMethod] = [.put, .patch, .delete]

    init(routes: [Route], stack: MiddlewareStack, trustedProxies: TrustedProxies = TrustedProxies()) {
        self.routes = routes
        self.stack = stack
        self.trustedProxies = trustedProxies
        var staticRoutes: [[(path: [UInt8], candidates: Candidates)]] = []
        for route in routes where route.pattern.isStatic {
            let path = Array(route.pattern.canonicalPath.utf8)
            while staticRoutes.count <= path.count { staticRoutes.append([]) }
            if let index = staticRoutes[path.count].firstIndex(where: { $0.path == path }) {
                staticRoutes[path.count][index].candidates.groups[0].routes.append(route)
            } else {
                staticRoutes[path.count].append((path: path, candidates: Candidates(groups: [(routes: [route], parameters: Parameters())])))
            }
        }
        self.staticRoutes = staticRoutes
        var dynamicPatterns: [[(pattern: PathPattern, routes: [Route])]] = []
        for route in routes where !route.pattern.isStatic {
            let count = route.pattern.segments.count
            while dynamicPatterns.count <= count { dynamicPatterns.append([]) }
            if let index = dynamicPatterns[count].firstIndex(where: { $0.pattern.text == route.pattern.text }) {
                dynamicPatterns[count][index].routes.append(route)
            } else {
                dynamicPatterns[count].append((route.pattern, [route]))
            }
        }
        self.dynamicPatterns = dynamicPatterns
    }

    /// The routes whose path matches, with the path's parameters.
    func candidates(for path: Substring) throws(HTTPError) -> Candidates {
        let original = path
        var path = path
        let found = path.withUTF8 { bytes in
            Result { () throws(HTTPError) in try candidates(for: UnsafeRawBufferPointer(bytes), path: original) }
        }
        return try found.get() ?? Candidates(groups: [])
    }

    private func candidates(for bytes: UnsafeRawBufferPointer, path: Substring) throws(HTTPError) -> Candidates? {
        if let found = staticCandidates(bytes) { return found }
        let (count, escaped) = PathPattern.segmentCount(bytes)
        if !escaped, bytes.count > 1, bytes.last == UInt8(ascii: "/") || path.contains("//") {
            // Empty segments (`//`, a trailing `/`) are left out here as for routes with
            // parameters: `/hello/` is `/hello`, as `/notes/7/` is `/notes/7`.
            let canonical = Array(("/" + path.split(separator: "/").joined(separator: "/")).utf8)
            if let found = canonical.withUnsafeBytes({ staticCandidates($0) }) { return found }
        }
        guard count < dynamicPatterns.count, !dynamicPatterns[count].isEmpty else {
            if escaped { _ = try PathPattern.segments(of: path) }  // a malformed escape is 400, not 404
            return nil
        }
        var found = Candidates(groups: [])
        let patterns = dynamicPatterns[count]
        let segments = escaped ? try PathPattern.segments(of: path) : []
        for index in patterns.indices {
            // The pattern matched in place (not copied out of the array: no retain of its parts).
            guard let parameters = escaped ? patterns[index].pattern.match(segments) : patterns[index].pattern.match(unescaped: bytes) else {
                continue
            }
            found.groups.append((routes: patterns[index].routes, parameters: parameters))
        }
        return found
    }

    /// The routes of the static path `bytes` (compared byte by byte), or nil.
    private func staticCandidates(_ bytes: UnsafeRawBufferPointer) -> Candidates? {
        guard bytes.count < staticRoutes.count else { return nil }
        for entry in staticRoutes[bytes.count] where memcmp(entry.path, bytes.baseAddress!, bytes.count) == 0 {
            return entry.candidates
        }
        return nil
    }

    /// The router's answer for a method no route has (`404` for an unknown path, else `405`
    /// with `Allow`), closing the connection: for a request whose head the engine could not
    /// parse past its method.
    func refusal(method: String, target: String) -> HTTPError? {
        var head = RequestHead(method: HTTPMethod(method), target: target)
        guard case .refused(var error) = resolve(&head) else { return nil }
        error.closesConnection = true
        return error
    }

    /// Routes `head` (applying an `X-HTTP-Method-Override` header to a POST).
    func resolve(_ head: inout RequestHead) -> Resolution {
        if !trustedProxies.isEmpty { head.forwarded = trustedProxies.forwarded(peer: head.peerAddress, headers: head.headers) }
        let candidates: Candidates
        do { candidates = try self.candidates(for: head.path) } catch {
            return .refused(error)
        }
        guard !candidates.isEmpty else {
            return .refused(HTTPError(.notFound, detail: "no resource at \(Logger.sanitize(String(head.path)))"))
        }
        if head.method == .post {
            if let header = head.headers["X-HTTP-Method-Override"] {
                do { head.method = try Self.override(header) } catch { return .refused(error) }
            } else if candidates.routes.allSatisfy({ $0.method == .get || $0.method == .head || $0.body.resolved(for: head).letsBodyChoose }),
                candidates.routes.contains(where: { $0.method == .post || Self.overridable.contains($0.method) })
            {
                // `_method` in the body may still choose (no route here streams this body): read
                // it as the POST route reads its body, or (no POST route) as the largest of the
                // routes it may choose — then under the router's own middleware only, so that a
                // POST without `_method` is `405` before any route's middleware (authentication)
                // has run; the route `_method` picks runs its middleware's head phase once the
                // body is read.
                let post = candidates.first { $0.method == .post }
                let posted = head
                let limits = candidates.routes.map { $0.body.resolved(for: posted) }.filter(\.isBuffered).map(\.memoryLimit)
                // Routes that take no body need only `_method` read: a small bound, so that a POST
                // there is never held for a whole `--max-body-size` before its 405.
                let limit = limits.isEmpty ? Self.methodFieldLimit : limits.contains { $0 == nil } ? nil : limits.compactMap { $0 }.max()
                let body = post?.route.body ?? .buffered(limit: limit)
                return .choice(
                    MethodChoice(
                        candidates: candidates, body: body, place: post?.route.place ?? .loop,
                        stack: post?.route.stack ?? stack))
            }
        }
        return select(head.method, among: candidates, path: head.path)
    }

    /// The bytes read for `_method` where no route at the path takes a body.
    static let methodFieldLimit = 1024

    /// After a body that could carry `_method`: the route it (or its absence) picks.
    func finish(_ choice: MethodChoice, head: inout RequestHead, body: RequestBody) -> Resolution {
        do {
            if let field = try body.string("_method") {
                head.method = try Self.override(field)
            }
        } catch {
            return .refused(error)
        }
        return select(head.method, among: choice.candidates, path: head.path)
    }

    private func select(_ method: HTTPMethod, among candidates: Candidates, path: Substring) -> Resolution {
        let wanted = method == .head && !candidates.routes.contains { $0.method == .head } ? .get : method
        guard let match = candidates.first(where: { $0.method == wanted }) else {
            let allowed = Set(candidates.routes.map(\.method.rawValue))
            let allow = (allowed.contains("GET") ? allowed.union(["HEAD"]) : allowed).sorted().joined(separator: ", ")
            return .refused(
                HTTPError(
                    .methodNotAllowed,
                    detail: "\(Logger.sanitize(method.rawValue)) is not allowed on \(Logger.sanitize(String(path))); allowed: \(allow)",
                    headers: HTTPHeaders([("Allow", allow)])))
        }
        return .route(match.route, match.parameters)
    }

    private static func override(_ value: String) throws(HTTPError) -> HTTPMethod {
        let method = HTTPMethod(value.trimmingASCIISpaces().uppercased())
        guard overridable.contains(method) else {
            throw HTTPError.badRequest("method override '\(Logger.sanitize(value))' is not one of PUT, PATCH, DELETE")
        }
        return method
    }
}
