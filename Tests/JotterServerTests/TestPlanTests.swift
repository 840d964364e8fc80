import Foundation
import Testing

/// The Makefile runs the suites tagged `.timing` in a pass of their own, one test at a time;
/// `swift test` can only select by name, so the Makefile lists them. This keeps the list and the
/// tags the same.
@Suite("Test plan")
struct TestPlanTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("the Makefile's TIMING_TESTS names exactly the suites tagged .timing")
    func timingSuites() throws {
        let makefile = try String(contentsOf: Self.root.appendingPathComponent("Makefile"), encoding: .utf8)
        let line = try #require(makefile.split(separator: "\n").first { $0.hasPrefix("TIMING_TESTS = ") })
        let listed = Set(line.dropFirst("TIMING_TESTS = ".count).split(separator: "|").map(String.init))
        var tagged = Set<String>()
        let tests = Self.root.appendingPathComponent("Tests")
        let files = FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        for file in files where file.pathExtension == "swift" {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (index, text) in lines.enumerated() where text.hasPrefix("@Suite(") {
                // The attribute may run over several lines (swift format wraps it): up to the type.
                let end = try #require(lines[index...].firstIndex { $0.contains("struct ") || $0.contains("class ") })
                guard lines[index..<end].contains(where: { $0.contains(".tags(.timing)") }) || text.contains(".tags(.timing)") else { continue }
                let name = lines[end].split(separator: " ").drop { $0 != "struct" && $0 != "class" }.dropFirst().first
                tagged.insert(String(try #require(name).prefix { $0.isLetter || $0.isNumber }))
            }
        }
        #expect(!tagged.isEmpty)
        #expect(listed == tagged, "Makefile lists \(listed.sorted()), tagged: \(tagged.sorted())")
    }
}
