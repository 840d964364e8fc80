import Foundation
import JotterServer

extension TestApp {
    /// Runs async `body` against a fresh server and always stops it.
    ///
    /// ```swift
    /// try await TestApp.with { app in
    ///     let client = JotterClient(baseURL: app.baseURL)
    /// }
    /// ```
    public static func with<T>(
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (TestApp) async throws -> T
    ) async throws -> T {
        let app = try TestApp(configure: configure)
        defer { app.stop() }
        return try await body(app)
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A port nothing listens on: a server's, after it stopped.
    public static func unusedPort() throws -> Int {
        let app = try TestApp()
        defer { app.stop() }
        return app.port
    }
}
