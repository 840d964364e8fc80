import Foundation
import JotterServer
import JotterTestSupport

/// A real Jotter server on a free port with its own temporary data folder.
///
/// ```swift
/// try await TestApp.with { app in
///     let response = try app.request("GET", "/hello?name=Bob")
/// }
/// ```
public final class TestApp: @unchecked Sendable {
    public let app: Application
    public let dataDirectory: URL
    /// Remove the data folder on `stop()` (off to restart on the same data).
    public var removesData = true

    /// A server on a fresh temporary data folder, or on `dataDirectory` when given.
    public init(dataDirectory: URL? = nil, configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        self.dataDirectory = dataDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("jotter-test-\(UUID().uuidString)")
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configuration.dataDirectory = self.dataDirectory.path
        configuration.accessLog = ProcessInfo.processInfo.environment["JOTTER_TEST_LOG"] != nil
        configure(&configuration)
        app = try buildApplication(configuration)
        try app.start()
    }

    public var port: Int { app.port }

    /// One request on a new connection.
    public func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: String = "") throws -> WireResponse {
        try RawHTTP(port: port).request(method, target, headers: headers, body: Array(body.utf8), close: true)
    }

    public func stop() {
        app.shutdown()
        if removesData { try? FileManager.default.removeItem(at: dataDirectory) }
    }

    /// Runs `body` against a fresh server and always stops it.
    public static func with<T>(configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestApp) throws -> T) throws -> T {
        let app = try TestApp(configure: configure)
        defer { app.stop() }
        return try body(app)
    }
}
