import Foundation
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// The README's command lines run as written.
@Suite("README: the jotter echo lines")
struct ReadmeCommandTests {
    /// A shell line's words: single and double quotes, `#` comments; no expansions.
    static func words(_ line: String) -> [String] {
        var words: [String] = [], word = "", quote: Character?, inWord = false
        for character in line {
            if let open = quote {
                if character == open { quote = nil } else { word.append(character) }
            } else if character == "'" || character == "\"" {
                quote = character
                inWord = true
            } else if character == " " {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else if character == "#" && !inWord {
                break
            } else {
                word.append(character)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    @Test("every `jotter echo` line of the README succeeds against a server, in a folder with the files it names")
    func echoLines() throws {
        let text = try String(contentsOf: InstallTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("jotter echo ") }
        try #require(lines.count >= 2)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["form.txt", "a.bin", "photo.jpg"] {
            try Data((name == "form.txt" ? "a=1&b=2" : "bytes of \(name)").utf8).write(to: folder.appendingPathComponent(name))
        }
        let jotter = ServerProcess.binary.deletingLastPathComponent().appendingPathComponent("jotter")
        try TestApp.with { app in
            for line in lines {
                let environment = ["JOTTER_SERVER": "http://127.0.0.1:\(app.port)", "HOME": folder.path]
                let run = try runProgram(
                    [jotter.path] + Self.words(line).dropFirst(), environment: environment, directory: folder, separateErrors: true)
                #expect(run.status == 0, "\(line): \(run.errors)")
            }
        }
    }
}
