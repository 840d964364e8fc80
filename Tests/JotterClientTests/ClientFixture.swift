import Foundation
import JotterClient
import JotterServer
import JotterServerTestSupport

/// A fresh server on port 0 and a client for it; the server always stops.
func withClient<T>(
    configure: (inout ServerConfiguration) -> Void = { _ in },
    client configureClient: (inout JotterClient.Configuration) -> Void = { _ in },
    _ body: (JotterClient, TestApp) async throws -> T
) async throws -> T {
    try await TestApp.with(configure: configure) { app in
        var configuration = JotterClient.Configuration()
        configureClient(&configuration)
        return try await body(JotterClient(baseURL: app.baseURL, configuration: configuration), app)
    }
}
