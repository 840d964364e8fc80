import Foundation
import Glibc
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// The README's SDK example compiles as written, as the `main.swift` of an app that depends on
/// the `JotterClient` product alone: built (through SIL generation, where Swift 6.3.1 crashed
/// on a `catch … where` at top level) against this build's modules; and, linked with this
/// build's objects, it runs against a real server from its first line to its last.
@Suite("README: the SDK example")
struct ReadmeExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every ```swift block of the README.
    static func swiftBlocks() throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        return text.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
    }

    /// Every ```swift block of the README that is a program (it imports JotterClient).
    static func programs() throws -> [String] {
        try swiftBlocks().filter { $0.contains("import JotterClient") }
    }

    /// The README's lines for an app's Package.swift, in a package of their own in a folder not
    /// named jotter, beside this repository's folder named `jotter` as the README assumes:
    /// SwiftPM resolves them (a wrong `package:` name or a missing `.package(…)` is an error here).
    @Test("the README's Package.swift lines resolve in an app folder beside the repository (../jotter)")
    func manifestResolves() throws {
        let lines = try #require(try Self.swiftBlocks().first { $0.contains("In Package.swift") }, "no Package.swift block in the README")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-readme-manifest-\(UUID().uuidString)")
        let app = folder.appendingPathComponent("my-app")
        try FileManager.default.createDirectory(at: app.appendingPathComponent("Sources/MyApp"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("jotter"), withDestinationURL: Self.root)
        let manifest = "// swift-tools-version:6.0\nimport PackageDescription\n\nlet package = Package(\n    name: \"MyApp\",\n\(lines))\n"
        try Data(manifest.utf8).write(to: app.appendingPathComponent("Package.swift"))
        try Data("import JotterClient\n".utf8).write(to: app.appendingPathComponent("Sources/MyApp/main.swift"))
        let run = try runProgram(["swift", "package", "--package-path", app.path, "resolve"])
        #expect(run.status == 0, "\(manifest)\n\(run.output.prefix(3000))")
    }

    @Test("the README's program compiles as main.swift with only import Foundation and import JotterClient")
    func compiles() throws {
        let programs = try Self.programs()
        try #require(!programs.isEmpty)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try #require(
            FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(".build/debug/Modules/JotterClient.swiftmodule").path),
            "build first: swift build --build-tests")
        for program in programs {
            #expect(!program.contains("import JotterAPI"), "the example needs only import JotterClient")
            let main = folder.appendingPathComponent("main.swift")
            try Data(program.utf8).write(to: main)
            let compiled = try Self.swiftc(main, ["-emit-sil", "-o", "/dev/null"])
            #expect(compiled.status == 0, "\(compiled.output.prefix(3000))")
        }
    }

    /// The program run as a new user runs it, with `photo.jpg` in its folder and the server at
    /// the address it names (here the test server's port): every line is reached — the notes,
    /// the upload, the download, the resumable upload — and then the event loop, which runs
    /// until it is stopped, prints a note created meanwhile.
    @Test("the README's program runs to its last line against a real server: copy.jpg is photo.jpg, the resumable SHA-256 printed, then live events")
    func runs() throws {
        let program = try #require(try Self.programs().first)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-readme-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try TestApp.with { app in
            let address = "http://127.0.0.1:8080"
            try #require(program.contains(address), "the example's server address changed: update this test")
            let main = folder.appendingPathComponent("main.swift")
            try Data(program.replacingOccurrences(of: address, with: "http://127.0.0.1:\(app.port)").utf8).write(to: main)
            let executable = folder.appendingPathComponent("readme-app")
            let built = try Self.buildApp(main, to: executable)
            try #require(built.status == 0, "\(built.output.prefix(3000))")

            let photo = (0..<300_000).map { _ in UInt8.random(in: 0...255) }
            try Data(photo).write(to: folder.appendingPathComponent("photo.jpg"))
            let digest = sha256(photo)

            let outputURL = folder.appendingPathComponent("output.txt")
            // Line-buffered, so what it printed can be read while it runs.
            let process = try ChildProgram(["stdbuf", "-oL", executable.path], directory: folder, output: .file(outputURL))
            defer { process.stop() }
            func output() -> String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }
            /// Waits up to 60 s for `condition`, doing `meanwhile` every half second.
            func waitFor(_ condition: () -> Bool, meanwhile: () -> Void = {}) -> Bool {
                let deadline = Date().addingTimeInterval(60)
                while Date() < deadline {
                    if condition() { return true }
                    if !process.isRunning { return condition() }
                    meanwhile()
                    usleep(500_000)
                }
                return condition()
            }

            #expect(waitFor { output().contains(digest) }, "the resumable upload's SHA-256 never printed: \(output().suffix(2000))")
            #expect(process.isRunning, "ended before its event loop: \(output().suffix(2000))")
            #expect(try Data(contentsOf: folder.appendingPathComponent("copy.jpg")) == Data(photo))
            let live = "written while the README example listens"
            #expect(
                waitFor(
                    { output().contains(live) },
                    meanwhile: { _ = try? app.request("POST", "/notes", body: "body=\(live.replacingOccurrences(of: " ", with: "+"))") }),
                "no live event printed: \(output().suffix(2000))")
        }
    }

    /// `main` built into `executable`, linked with the objects of the JotterClient product's
    /// targets as SwiftPM links them into an app; how `swiftc` ended and what it printed.
    static func buildApp(_ main: URL, to executable: URL) throws -> ProgramRun {
        let build = root.appendingPathComponent(".build/debug")
        let objects = try ["JotterClient", "JotterAPI", "JotterWire", "JotterSystem"].flatMap { target in
            let objectFolder = build.appendingPathComponent("\(target).build")
            return try FileManager.default.contentsOfDirectory(atPath: objectFolder.path)
                .filter { $0.hasSuffix(".o") }.map { objectFolder.appendingPathComponent($0).path }
        }
        return try swiftc(main, ["-o", executable.path] + objects + ["-lssl", "-lcrypto", "-lsqlite3"])
    }

    /// `swiftc` on `main` as the module `ReadmeApp`, against this build's modules and the SDK's
    /// system libraries; its exit status and what it wrote to standard error.
    static func swiftc(_ main: URL, _ arguments: [String]) throws -> ProgramRun {
        let modules = root.appendingPathComponent(".build/debug/Modules")
        return try runProgram(
            [
                "swiftc", main.path, "-module-name", "ReadmeApp", "-I", modules.path,
                // The SDK's system libraries on Linux, as SwiftPM hands them to an app that depends on it.
                "-Xcc", "-fmodule-map-file=" + root.appendingPathComponent("Sources/CCrypto/module.modulemap").path,
                "-Xcc", "-fmodule-map-file=" + root.appendingPathComponent("Sources/CTLS/module.modulemap").path,
                "-Xcc", "-fmodule-map-file=" + root.appendingPathComponent("Sources/CSQLite/module.modulemap").path,
            ] + arguments)
    }
}
