import Foundation
import Glibc
@testable import JotterHTTP
import JotterTestSupport

/// An `HTTPServer` on a free port with a few routes that exercise the engine.
final class EngineFixture {
    let server: HTTPServer
    let hub = EventBroadcaster(heartbeat: 30)
    /// `GET /hold` holds its loop: its later reply's render signals `held`, then waits for `gate`.
    let held = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)

    init(configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var configuration = HTTPServer.Configuration(port: 0, threads: 2, shutdownGracePeriod: 3)
        configure(&configuration)
        var routes = RouterBuilder()
        routes.add(middleware: RequestIDMiddleware())
        routes.add(middleware: ErrorMiddleware(log: Logger(accessLog: false)))
        routes.get("/hello") { request, _ in "hello" }
        routes.post("/body") { request, _ in "\(request.method) \(request.rawBody.count)" }
        routes.put("/body") { request, _ in "\(request.method) \(request.rawBody.count)" }
        routes.delete("/body") { request, _ in "\(request.method) \(request.rawBody.count)" }
        routes.post("/streamed", body: .multipart()) { request, _ in "\(request.method)" }
        routes.put("/streamed") { request, _ in "\(request.method)" }
        routes.get("/items/:id") { request, context in "item \(try context.parameters.require("id", as: Int.self))" }
        routes.get("/slow") { request, _ in
            usleep(400_000)
            return "slow done"
        }
        routes.get("/deferred") { request, context in
            Reply.later { done in
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) {
                    done { try "deferred \(context.requestID)".response(for: request) }
                }
            }
        }
        routes.get("/deferred-error") { request, _ in
            Reply.later { done in
                DispatchQueue.global().async { done { throw HTTPError(.preconditionFailed, detail: "stale") } }
            }
        }
        let held = self.held, gate = self.gate
        routes.get("/hold") { request, _ in
            Reply.later { done in
                DispatchQueue.global().async {
                    done {
                        held.signal()
                        gate.wait()
                        return try "released".response(for: request)
                    }
                }
            }
        }
        let hub = self.hub
        routes.get("/events") { request, _ in
            let body = hub.subscribe()
            body.release(replay: [], after: 0)
            return Response.stream(body, headers: HTTPHeaders([("Content-Type", "text/event-stream")]))
        }
        routes.post("/publish") { request, _ in
            let fields = try request.body()
            hub.publish(ServerSentEvent(id: Int64(try fields.string("id") ?? "0"), event: "test", data: try fields.string("data") ?? ""))
            return "published"
        }
        routes.get("/crash") { request, _ -> String in
            struct Boom: Error {}
            throw Boom()
        }
        server = HTTPServer(configuration: configuration, router: routes.build(), log: Logger(accessLog: false))
        try server.start()
    }

    var port: Int { server.port }

    func connect(from source: String? = nil, timeout: Double = 5) throws -> RawHTTP {
        try RawHTTP(port: port, sourceAddress: source, timeout: timeout)
    }

    deinit { server.shutdown() }
}
