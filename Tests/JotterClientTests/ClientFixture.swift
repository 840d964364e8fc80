import Foundation
import JotterClient
import JotterServer
import JotterTestSupport

/// A fresh server on port 0 and a client for it; the server always stops.
func withClient<T>(configure: (inout ServerConfiguration) -> Void = { _ in },
                   client configureClient: (inout JotterClient.Configuration) -> Void = { _ in },
                   _ body: (JotterClient, TestApp) async throws -> T) async throws -> T {
    let app = try TestApp(configure: configure)
    defer { app.stop() }
    var configuration = JotterClient.Configuration()
    configureClient(&configuration)
    let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, configuration: configuration)
    return try await body(client, app)
}

/// A port nothing listens on: bound, then closed.
func closedPort() throws -> Int {
    let app = try TestApp()
    let port = app.port
    app.stop()
    return port
}

/// A fresh temporary folder, removed by the caller.
func temporaryFolder() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-client-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
