import Foundation
import Testing
import JotterTestSupport

/// Every example in the SDK's doc comments compiles against the SDK as an app sees it
/// (`import JotterClient` alone, public API only).
///
/// An example is a ```swift block in the `///` comment of a public declaration of
/// `JotterClient` or `JotterAPI` (whose types the SDK re-exports); output and other text go in
/// plain ``` blocks. Each example becomes the body of its own function in one file, which
/// `swiftc` checks through SIL generation in one run against this build's modules (about a
/// second): the function's parameters and the few declarations below are what an example may
/// take as given — the client, a note being edited, a file's URL… — as the app around it
/// would have them. Errors point at the doc comment's own line (`#sourceLocation`).
@Suite("SDK doc comments: the examples compile")
struct DocCommentExampleTests {
    struct Example {
        var file: String
        var line: Int
        var code: String
    }

    /// The folders whose public doc comments are the SDK's.
    static let folders = ["Sources/JotterClient", "Sources/JotterAPI"]

    /// What every example may use without declaring it.
    static let given = """
        import Foundation
        #if canImport(FoundationNetworking)
        import FoundationNetworking
        #endif
        import JotterClient

        func show(_ note: Note) {}
        func remove(_ id: String) {}
        func reloadEverything() {}
        struct TokenSource { func current() async -> String { "jot_" } }

        """
    static let parameters =
        "client: JotterClient, configuration: inout JotterClient.Configuration, note: inout Note, upload: Upload, "
        + "url: URL, folder: URL, text: String, password: String, tokenFile: String, request: inout URLRequest, bodyFile: URL, "
        + "form: inout MultipartFormData, tokens: TokenSource, engine: NotesSyncEngine"

    /// Every ```swift block of a `///` comment on a public declaration in `folders`.
    static func examples() throws -> [Example] {
        var examples: [Example] = []
        for folder in folders {
            let directory = ReadmeExampleTests.root.appendingPathComponent(folder)
            // Subfolders too (Sync/).
            for name in try FileManager.default.subpathsOfDirectory(atPath: directory.path).sorted() where name.hasSuffix(".swift") {
                let lines = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8).components(separatedBy: "\n")
                let trimmed = lines.map { $0.trimmingCharacters(in: .whitespaces) }
                var index = 0
                while index < lines.count {
                    defer { index += 1 }
                    guard trimmed[index] == "/// ```swift" else { continue }
                    let start = index + 1
                    var end = start
                    while end < lines.count, trimmed[end] != "/// ```" { end += 1 }
                    // The declaration the comment documents: past the comment and any attributes.
                    var declaration = end + 1
                    while declaration < lines.count, trimmed[declaration].hasPrefix("///") || trimmed[declaration].hasPrefix("@") { declaration += 1 }
                    index = end
                    guard declaration < lines.count, trimmed[declaration].hasPrefix("public ") else { continue }
                    // The comment's lines with their indentation inside the block kept.
                    let indented = lines[start..<end].map { line -> String in
                        guard let range = line.range(of: "///") else { return line }
                        let rest = line[range.upperBound...]
                        return String(rest.hasPrefix(" ") ? rest.dropFirst() : rest)
                    }
                    examples.append(Example(file: folder + "/" + name, line: start + 1, code: indented.joined(separator: "\n")))
                }
            }
        }
        return examples
    }

    /// The file that holds every example as a function.
    static func program(_ examples: [Example]) -> String {
        var text = given
        for (number, example) in examples.enumerated() {
            text += "func example\(number)(\(parameters)) async throws {\n"
            text += "#sourceLocation(file: \"\(example.file)\", line: \(example.line))\n"
            text += example.code + "\n"
            text += "#sourceLocation()\n}\n\n"
        }
        return text
    }

    @Test("the SDK has doc-comment examples, and each is found on a public declaration")
    func found() throws {
        let examples = try Self.examples()
        #expect(examples.count >= 25, "\(examples.map { "\($0.file):\($0.line)" })")
        #expect(examples.contains { $0.code.contains("resumableUpload(fileAt: url, state: state)") })
        #expect(!examples.contains { $0.file.hasSuffix("EventStreamParser.swift") }, "an internal type's example is no app's")
    }

    /// `catch let error where …` after a typed-throws call that assigns a `var` in both the `do`
    /// and the `catch` crashes swiftc 6.3.1 (SILGenCleanup) in an app's own function, though not
    /// in `compile()` below, where `note` is a parameter: the examples use `catch { guard … }`.
    @Test("no example catches with `catch let error where`, the form that crashes swiftc 6.3 in an app")
    func noCrashingCatch() throws {
        let crashing = try Self.examples().filter { $0.code.contains("catch let error where") }
        #expect(crashing.isEmpty, "\(crashing.map { "\($0.file):\($0.line)" })")
    }

    @Test("every ```swift example in the SDK's public doc comments compiles with import JotterClient alone")
    func compile() throws {
        try #require(
            FileManager.default.fileExists(
                atPath: ReadmeExampleTests.root.appendingPathComponent(".build/debug/Modules/JotterClient.swiftmodule").path),
            "build first: swift build --build-tests")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-doc-examples-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let main = folder.appendingPathComponent("main.swift")
        try Data(Self.program(try Self.examples()).utf8).write(to: main)
        let compiled = try ReadmeExampleTests.swiftc(main, ["-emit-sil", "-o", "/dev/null", "-suppress-warnings"])
        #expect(compiled.status == 0, "\(compiled.output.prefix(6000))")
    }
}
