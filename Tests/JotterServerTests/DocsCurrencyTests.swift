import Foundation
import Testing
import JotterServerTestSupport

/// What the docs say about the running server is what it says about itself: numbers that
/// change with the code are checked against the code, not against a copy.
@Suite("Docs match the server")
struct DocsCurrencyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("docs/API.md's jotter_build_info line is the one /metrics serves; deployment.md's refusal names the same schema version")
    func schemaVersion() throws {
        try TestApp.with { app in
            let metrics = try app.request("GET", "/metrics").text
            let served = try #require(metrics.split(separator: "\n").first { $0.hasPrefix("jotter_build_info{") }.map(String.init))
            #expect(try Self.text("docs/API.md").contains("`\(served)`"), "docs/API.md should show \(served)")
            let match = try #require(served.firstMatch(of: /schema_version="(\d+)"/))
            let version = try #require(Int(match.output.1))
            let deployment = try Self.text("docs/deployment.md")
            #expect(
                deployment.contains("has schema version \(version + 1) but this\njotter understands up to \(version);"),
                "docs/deployment.md's example refusal should be of a database one version ahead of \(version)")
        }
    }

    @Test("docs/uploads-and-echo.md tells of resumable uploads and partial/; the README of make run PORT=… DATA=…")
    func coverage() throws {
        let uploads = try Self.text("docs/uploads-and-echo.md")
        #expect(uploads.contains("## Resumable uploads") && uploads.contains("<data>/partial/"))
        let readme = try Self.text("README.md")
        #expect(readme.contains("make run PORT="), "the README never says how to serve on another port or folder")
        let makefile = try Self.text("Makefile")
        #expect(makefile.contains("--port $(PORT) --data $(DATA)"), "the README's make run PORT=… DATA=… must be what the Makefile reads")
    }
}
