import Foundation
import Testing

/// The README's SDK example compiles as written, as the `main.swift` of an app that depends on
/// the `JotterClient` product alone: built (through SIL generation, where Swift 6.3.1 crashed
/// on a `catch … where` at top level) against this build's modules.
@Suite("README: the SDK example")
struct ReadmeExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every ```swift block of the README that is a program (it imports JotterClient).
    static func programs() throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        return text.components(separatedBy: "```swift\n").dropFirst().compactMap { block in
            let code = block.components(separatedBy: "```")[0]
            return code.contains("import JotterClient") ? code : nil
        }
    }

    @Test("the README's program compiles as main.swift with only import Foundation and import JotterClient")
    func compiles() throws {
        let programs = try Self.programs()
        try #require(!programs.isEmpty)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let modules = Self.root.appendingPathComponent(".build/debug/Modules")
        try #require(FileManager.default.fileExists(atPath: modules.appendingPathComponent("JotterClient.swiftmodule").path),
                     "build first: swift build --build-tests")
        for program in programs {
            #expect(!program.contains("import JotterAPI"), "the example needs only import JotterClient")
            let main = folder.appendingPathComponent("main.swift")
            try Data(program.utf8).write(to: main)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["swiftc", "-emit-sil", "-o", "/dev/null", main.path, "-module-name", "ReadmeApp",
                                 "-I", modules.path,
                                 // The SDK's system libraries on Linux, as SwiftPM hands them to an app that depends on it.
                                 "-Xcc", "-fmodule-map-file=" + Self.root.appendingPathComponent("Sources/CCrypto/module.modulemap").path,
                                 "-Xcc", "-fmodule-map-file=" + Self.root.appendingPathComponent("Sources/CTLS/module.modulemap").path]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(output.prefix(3000))")
        }
    }
}
