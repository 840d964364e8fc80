import Foundation
import Synchronization
import Testing
@testable import JotterHTTP
import JotterHTTPTesting

/// The request lifecycle driven in process, without a socket.
@Suite("Request lifecycle: route first, body policies, middleware phases")
struct LifecycleTests {
    /// Refuses every request in its head phase, as an authentication middleware would.
    struct Refuse: Middleware {
        func head(_ head: RequestHead, context: inout RequestContext) throws {
            throw HTTPError(.unauthorized, detail: "sign in first", headers: HTTPHeaders([("WWW-Authenticate", "Bearer")]))
        }
    }

    /// Adds a header to every answer, now or later.
    struct Stamp: Middleware {
        let name: String
        func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
            let name = self.name
            return try next(request, context).map { response in
                var response = response
                response.headers.add("X-Stamp", name)
                return response
            }
        }
    }

    enum User: RequestContextKey { typealias Value = String }

    /// Puts the user named by `X-User` into the context.
    struct Identify: Middleware {
        func head(_ head: RequestHead, context: inout RequestContext) throws {
            context[User.self] = head.headers["X-User"]
        }
    }

    /// Counts what the lifecycle reports as completed.
    final class Completions: Middleware {
        let statuses = Mutex<[Int]>([])
        func completed(_ exchange: CompletedExchange) { statuses.withLock { $0.append(exchange.status) } }
    }

    final class Collect: RequestBodyStream {
        let bytes = Mutex<[UInt8]>([])
        let finished = Atomic<Bool>(false)
        let aborted = Atomic<Bool>(false)
        func receive(_ chunk: UnsafeRawBufferPointer) throws { bytes.withLock { $0 += chunk } }
        func finish() throws { finished.store(true, ordering: .relaxed) }
        func abort() { aborted.store(true, ordering: .relaxed) }
    }

    static func temporaryFolder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lifecycle-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func multipart(_ parts: [(name: String, filename: String?, content: String)]) -> (String, [UInt8]) {
        var body = ""
        for part in parts {
            body += "--XyZ\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let filename = part.filename { body += "; filename=\"\(filename)\"\r\nContent-Type: text/plain" }
            body += "\r\n\r\n\(part.content)\r\n"
        }
        body += "--XyZ--\r\n"
        return ("multipart/form-data; boundary=XyZ", Array(body.utf8))
    }

    @Test("a head-phase refusal answers before any body byte, through the middleware outside it only")
    func headRefusal() throws {
        let folder = try Self.temporaryFolder()
        var routes = RouterBuilder()
        routes.add(middleware: RequestIDMiddleware())
        routes.add(middleware: Stamp(name: "outer"))
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.group { protected in
            protected.add(middleware: Refuse())
            protected.add(middleware: Stamp(name: "inner"))
            protected.post("/uploads", body: .multipart()) { request, _ in "stored \(request.files.count)" }
        }
        routes.get("/open") { _, _ in "open" }
        let client = InProcessClient(router: routes.build(), temporaryDirectory: folder)
        let (type, body) = Self.multipart([("file", "a.txt", String(repeating: "x", count: 200_000))])
        let answer = client.send("POST", "/uploads", headers: [("Content-Type", type)], body: body)
        #expect(answer.status == 401)
        #expect(answer.header("WWW-Authenticate") == "Bearer")
        #expect(answer.header("Content-Type") == "application/problem+json")
        #expect(answer.answeredBeforeBody)
        #expect(answer.bytesAccepted == 0)
        #expect(answer.headers.values("X-Stamp") == ["outer"])
        #expect(answer.header("X-Request-Id")?.isEmpty == false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        // Routes outside the group are not refused.
        #expect(client.send("GET", "/open").text == "open")
    }

    @Test("a body sent to a route that takes none is refused; a file part to a route without files too")
    func bodyPolicies() throws {
        let folder = try Self.temporaryFolder()
        var routes = RouterBuilder()
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.get("/thing") { _, _ in "thing" }
        routes.post("/form") { request, _ in "name=\(try request.body().string("name") ?? "-")" }
        routes.post("/small", body: .buffered(limit: 8)) { request, _ in "\(request.rawBody.count)" }
        routes.delete("/thing", body: .noBody) { _, _ in "deleted" }
        let client = InProcessClient(router: routes.build(), temporaryDirectory: folder)
        // A route that says it takes no body refuses one, whatever its method's default.
        #expect(client.send("DELETE", "/thing", body: "x=1").status == 413)
        #expect(client.send("DELETE", "/thing").text == "deleted")

        let get = client.send("GET", "/thing", body: "hello")
        #expect(get.status == 413)
        #expect(get.answeredBeforeBody)
        #expect(get.text.contains("GET /thing takes no request body"))
        let chunked = client.send("GET", "/thing", body: Array("hello".utf8), chunked: true)
        #expect(chunked.status == 413)

        let (type, body) = Self.multipart([("name", nil, "Bob"), ("file", "a.txt", "secret")])
        let file = client.send("POST", "/form", headers: [("Content-Type", type)], body: body)
        #expect(file.status == 415)
        #expect(file.text.contains("takes no file parts"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        let (fieldsType, fields) = Self.multipart([("name", nil, "Bob")])
        #expect(client.send("POST", "/form", headers: [("Content-Type", fieldsType)], body: fields).text == "name=Bob")

        #expect(client.send("POST", "/small", body: "12345678").text == "8")
        let over = client.send("POST", "/small", body: "123456789")
        #expect(over.status == 413)
        #expect(over.text.contains("this endpoint's limit of 8 bytes"))
    }

    @Test("a raw stream body reaches its receiver chunk by chunk; an aborted one is told")
    func streamPolicy() throws {
        let receivers = Mutex<[Collect]>([])
        var routes = RouterBuilder()
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.put(
            "/raw",
            body: .stream(limit: 100) { _, _ in
                let receiver = Collect()
                receivers.withLock { $0.append(receiver) }
                return receiver
            }
        ) { request, _ in
            let receiver = try #require(request.bodyStream as? Collect)
            return "got \(receiver.bytes.withLock { $0.count }) finished \(receiver.finished.load(ordering: .relaxed))"
        }
        let client = InProcessClient(router: routes.build())
        #expect(client.send("PUT", "/raw", body: Array(repeating: 7, count: 90), chunkSize: 10).text == "got 90 finished true")
        let over = client.send("PUT", "/raw", body: Array(repeating: 7, count: 120), chunkSize: 10, chunked: true)
        #expect(over.status == 413)
        #expect(over.text.contains("this endpoint's limit of 100 bytes"), "\(over.text)")
        #expect(receivers.withLock { $0.last?.aborted.load(ordering: .relaxed) } == true)
    }

    @Test("_method in a form body picks the route after the body; the override header at the head")
    func methodOverride() throws {
        var routes = RouterBuilder()
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.get("/items/:id") { _, context in "get \(context.parameters["id"] ?? "")" }
        routes.put("/items/:id") { request, context in "put \(context.parameters["id"] ?? "") \(try request.body().string("body") ?? "")" }
        routes.group { guarded in
            guarded.add(middleware: Refuse())
            guarded.delete("/items/:id") { _, _ in "deleted" }
        }
        let client = InProcessClient(router: routes.build())
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        #expect(client.send("POST", "/items/4", headers: form, body: "_method=PUT&body=x").text == "put 4 x")
        #expect(client.send("POST", "/items/4", headers: [("X-HTTP-Method-Override", "PUT")] + form, body: "body=y").text == "put 4 y")
        // The final route's own head phase runs once `_method` has chosen it.
        #expect(client.send("POST", "/items/4", headers: form, body: "_method=DELETE").status == 401)
        #expect(client.send("POST", "/items/4", headers: form, body: "body=z").status == 405)
        #expect(client.send("POST", "/items/4", headers: form, body: "_method=GET").status == 400)
    }

    @Test("_method in a body also picks a route that takes no body, or whose choice for the head is a buffered body")
    func methodOverrideBesideNoBodyAndChoice() throws {
        var routes = RouterBuilder()
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.get("/files/:id") { _, _ in "get" }
        routes.delete("/files/:id", body: .noBody) { _, _ in "deleted" }
        routes.patch(
            "/files/:id",
            body: .choosing { head in head.headers["Upload-Offset"] == nil ? .buffered() : .stream { _, _ in Collect() } }
        ) { request, _ in "patched \(try request.body().string("note") ?? "")" }
        let client = InProcessClient(router: routes.build())
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        #expect(client.send("POST", "/files/4", headers: form, body: "_method=PATCH&note=2").text == "patched 2")
        #expect(client.send("POST", "/files/4", headers: form, body: "_method=DELETE").text == "deleted")
        #expect(client.send("POST", "/files/4", headers: form, body: "note=2").status == 405)
        // A body the PATCH route would stream is never read for `_method`: 405 at the head.
        let streamed = client.send("POST", "/files/4", headers: form + [("Upload-Offset", "0")], body: "_method=PATCH")
        #expect(streamed.status == 405)
    }

    @Test("where no route takes a body, only a small body is read for _method: never a whole --max-body-size before the 405")
    func methodOverrideWhereNoRouteTakesABody() throws {
        var routes = RouterBuilder()
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.delete("/users/:name", body: .noBody) { _, _ in "deleted" }
        let client = InProcessClient(router: routes.build())
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        #expect(client.send("POST", "/users/ann", headers: form, body: "_method=DELETE").text == "deleted")
        let large = client.send("POST", "/users/ann", headers: form, body: "_method=DELETE&pad=" + String(repeating: "x", count: 2000))
        #expect(large.status == 413)
        #expect(large.text.contains("this endpoint's limit of 1024 bytes"), "\(large.text)")
    }

    @Test("a later reply is rendered when resumed and passes every middleware's map and recover")
    func laterReplies() throws {
        var routes = RouterBuilder()
        routes.add(middleware: Stamp(name: "outer"))
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.post("/write") { request, _ in
            Reply.later { done in
                DispatchQueue.global().async { done { try "written".response(for: request) } }
            }
        }
        routes.post("/stale") { request, _ in
            Reply.later { done in
                DispatchQueue.global().async { done { throw HTTPError(.preconditionFailed, detail: "stale") } }
            }
        }
        let client = InProcessClient(router: routes.build())
        let written = client.send("POST", "/write")
        #expect(written.text == "written")
        #expect(written.header("X-Stamp") == "outer")
        let stale = client.send("POST", "/stale")
        #expect(stale.status == 412)
        #expect(stale.header("Content-Type") == "application/problem+json")
        #expect(stale.header("X-Stamp") == "outer")
    }

    @Test("typed context values set in the head phase reach the handler")
    func contextValues() throws {
        var routes = RouterBuilder()
        routes.add(middleware: Identify())
        routes.get("/me") { _, context in context[User.self] ?? "nobody" }
        let client = InProcessClient(router: routes.build())
        #expect(client.send("GET", "/me", headers: [("X-User", "ann")]).text == "ann")
        #expect(client.send("GET", "/me").text == "nobody")
    }

    @Test("every request completes once — routed, refused before routing, or refused by framing")
    func completions() throws {
        let completions = Completions()
        var routes = RouterBuilder()
        routes.add(middleware: completions)
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.get("/ok") { _, _ in "ok" }
        let client = InProcessClient(router: routes.build())
        _ = client.send("GET", "/ok")
        _ = client.send("GET", "/missing")
        _ = client.send("GET", "/ok", headers: [("Content-Length", "1"), ("Transfer-Encoding", "chunked")])
        #expect(completions.statuses.withLock { $0 } == [200, 404, 400])
    }

    @Test("the lifecycle's phases: a request without a body refused at the head is answered on the next call")
    func phases() throws {
        var routes = RouterBuilder()
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.get("/ok") { _, _ in "ok" }
        let router = routes.build()
        let limits = RequestLifecycle.Limits(maxBodySize: 10, maxUploadSize: 10, maxParts: 10, temporaryDirectory: "/tmp")
        let missing = RequestLifecycle(router: router, limits: limits, target: "/missing", remoteAddress: "-", clock: .system)
        guard case .proceed = missing.headerComplete(method: "GET", version: "HTTP/1.1", headers: HTTPHeaders([("Host", "x")])) else {
            Issue.record("a refusal without a body waits for the next call")
            return
        }
        guard case .respond(let notFound) = missing.bodyComplete() else { Issue.record("404 expected"); return }
        #expect(notFound.status == .notFound)

        let withBody = RequestLifecycle(router: router, limits: limits, target: "/missing", remoteAddress: "-", clock: .system)
        let action = withBody.headerComplete(method: "POST", version: "HTTP/1.1", headers: HTTPHeaders([("Host", "x"), ("Content-Length", "5")]))
        guard case .respond(let refused) = action else { Issue.record("a refusal with a body answers at once"); return }
        #expect(refused.status == .notFound)

        let tooBig = RequestLifecycle(router: router, limits: limits, target: "/ok", remoteAddress: "-", clock: .system)
        guard
            case .respond(let large) = tooBig.headerComplete(
                method: "GET", version: "HTTP/1.1",
                headers: HTTPHeaders([("Host", "x"), ("Content-Length", "500")]))
        else {
            Issue.record("413 at the head expected")
            return
        }
        #expect(large.status == .contentTooLarge)
    }

    @Test("a step announced for a route's executor and never sent away (its stream ended first) is let go with the request")
    func stepNeverSentAway() {
        let executor = HTTP1StateMachineTests.ManualExecutor()
        var routes = RouterBuilder()
        routes.get("/away", runs: .executor(executor)) { _, _ in "away" }
        let router = routes.build()
        let limits = RequestLifecycle.Limits(maxBodySize: 10, maxUploadSize: 10, maxParts: 10, temporaryDirectory: "/tmp")
        weak var released: RequestLifecycle?
        do {
            let lifecycle = RequestLifecycle(router: router, limits: limits, target: "/away", remoteAddress: "-", clock: .system)
            released = lifecycle
            guard case .elsewhere = lifecycle.headerComplete(method: "GET", version: "HTTP/2.0", headers: HTTPHeaders([("Host", "x")])) else {
                Issue.record("the route's step runs elsewhere")
                return
            }
            lifecycle.completed(status: 0, bytesSent: 0, outcome: .clientAbort)
        }
        #expect(released == nil, "the step's work holds the lifecycle")
        #expect(executor.run() == 0)
    }
}
