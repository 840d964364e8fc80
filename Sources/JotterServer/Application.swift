#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterHTTP

/// The running Jotter server: the HTTP engine with every route registered.
///
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.port = 0
/// let app = try buildApplication(configuration)
/// try app.start()
/// print("listening on \(app.url)")
/// app.shutdown()
/// ```
public final class Application: Sendable {
    public let configuration: ServerConfiguration
    let server: HTTPServer
    let log: Logger

    init(configuration: ServerConfiguration, server: HTTPServer, log: Logger) {
        self.configuration = configuration
        self.server = server
        self.log = log
    }

    /// Starts serving; the port is known once this returns.
    public func start() throws {
        try server.start()
        log.info("jotter listening on \(url) with \(configuration.threads) engine thread(s), data in \(configuration.dataDirectory)")
    }

    /// Stops accepting, finishes requests in flight, stops.
    public func shutdown() {
        server.shutdown()
    }

    /// The port in use (the real one when configured with 0).
    public var port: Int { server.port }

    /// `http://host:port` of the running server.
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "http://\(host):\(port)"
    }
}

/// Builds the application for `configuration`: creates the data folder and registers every
/// route behind the shared middleware.
public func buildApplication(_ configuration: ServerConfiguration) throws -> Application {
    let log = Logger(accessLog: configuration.accessLog)
    do {
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
    } catch {
        throw ServerStartError(description: "cannot create the data folder '\(configuration.dataDirectory)': \(error)")
    }
    var routes = RouterBuilder()
    routes.add(middleware: ErrorMiddleware(log: log))
    HelloController().register(in: &routes)
    HealthController().register(in: &routes)
    let server = HTTPServer(configuration: configuration.http, router: routes.build(), log: log)
    return Application(configuration: configuration, server: server, log: log)
}
