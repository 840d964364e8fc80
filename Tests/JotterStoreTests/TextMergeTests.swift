import Foundation
import Testing
@testable import JotterStore

/// The three-way merge (`TextMerge`): examples from the known diff3 failures, properties over
/// random texts and edits, and its bounds on adversarial 1 MiB inputs.
///
/// The random cases come from seeded generators: the seeds below, plus `JOTTER_MERGE_SEED` if set
/// (`JOTTER_MERGE_SEED=1234 swift test --filter TextMergeTests`). A failure names its seed and
/// case.
@Suite("TextMerge: three-way merge of plain text")
struct TextMergeTests {
    static let seeds: [UInt64] = {
        var seeds: [UInt64] = [1, 2, 3, 7, 42, 1_000, 65_537, 0x5EED, 0xC0FFEE, 0xDEADBEEF]
        if let text = ProcessInfo.processInfo.environment["JOTTER_MERGE_SEED"], let seed = UInt64(text) {
            seeds.append(seed)
        }
        return seeds
    }()
    static let casesPerSeed = 150

    // MARK: Examples

    @Test func editsOfDifferentWordsOfOneLineMergeCleanly() throws {
        let outcome = try #require(
            TextMerge.merge(
                base: "The quick brown fox jumps\n",
                current: "The slow brown fox jumps\n",
                incoming: "The quick brown cat jumps\n"))
        #expect(outcome == .init(text: "The slow brown cat jumps\n", result: .clean, regions: []))
    }

    @Test func editsOfDifferentParagraphsMergeCleanly() throws {
        let base = "Groceries\n\nmilk, eggs\n\nCall mum\n"
        let outcome = try #require(
            TextMerge.merge(
                base: base, current: "Groceries\n\nmilk, eggs, bread\n\nCall mum\n",
                incoming: "Groceries for Sunday\n\nmilk, eggs\n\nCall mum at 6\n"))
        #expect(outcome == .init(text: "Groceries for Sunday\n\nmilk, eggs, bread\n\nCall mum at 6\n", result: .clean, regions: []))
    }

    /// Both append at the end: both kept, current's first, the two reported as one region.
    @Test func bothAppendAtTheEnd() throws {
        let outcome = try #require(TextMerge.merge(base: "milk\n", current: "milk\neggs\n", incoming: "milk\nbread\n"))
        #expect(outcome == .init(text: "milk\neggs\nbread\n", result: .overlap, regions: [.init(start: 5, end: 16)]))
        // With no final line break: the line breaks the two sides added, and one between them.
        let bare = try #require(TextMerge.merge(base: "milk", current: "milk\neggs", incoming: "milk\nbread"))
        #expect(bare == .init(text: "milk\neggs\nbread", result: .overlap, regions: [.init(start: 5, end: 15)]))
    }

    /// One side deletes a paragraph, the other edits it: the edit is kept, as an overlap.
    @Test func deletedParagraphThatTheOtherSideEditedIsKept() throws {
        let base = "P1\n\nP2 is here\n\nP3\n"
        let outcome = try #require(TextMerge.merge(base: base, current: "P1\n\nP3\n", incoming: "P1\n\nP2 is there\n\nP3\n"))
        #expect(outcome.text == "P1\n\nP2 is there\n\nP3\n")
        #expect(outcome.result == .overlap)
        #expect(outcome.regions == [.init(start: 4, end: 17)])
        // And the other way round.
        let mirrored = try #require(TextMerge.merge(base: base, current: "P1\n\nP2 is there\n\nP3\n", incoming: "P1\n\nP3\n"))
        #expect(mirrored.text == "P1\n\nP2 is there\n\nP3\n")
        #expect(mirrored.result == .overlap)
    }

    /// The known diff3 failure beside runs of identical lines: both sides insert the same
    /// paragraph after a blank line and one also edits the line before; the two diffs align the
    /// insertion on different blank lines, and a plain diff3 applies it twice. Joplin refuses to
    /// merge there; this merge applies it once.
    @Test func sameInsertionBesideBlankLinesIsNotDuplicated() throws {
        let base = "a\n\nb\n\nc\n"
        let current = "A\n\nn\n\nb\n\nc\n"
        let incoming = "a\n\nn\n\nb\n\nC\n"
        let expected = TextMerge.Outcome(text: "A\n\nn\n\nb\n\nC\n", result: .clean, regions: [])
        #expect(TextMerge.merge(base: base, current: current, incoming: incoming) == expected)
        #expect(TextMerge.merge(base: base, current: incoming, incoming: current) == expected)
    }

    /// The same change made by both sides in a run of identical lines is made once.
    @Test func sameChangeInARunOfIdenticalLinesIsMadeOnce() throws {
        let base = "- [ ]\n- [ ]\n- [ ]\nend\n"
        let both = "- [ ]\n- [ ]\n- [x]\n- [ ]\nend\n"
        let outcome = try #require(TextMerge.merge(base: base, current: both, incoming: "- [ ]\n- [ ]\n- [x]\n- [ ]\nend!\n"))
        #expect(outcome == .init(text: "- [ ]\n- [ ]\n- [x]\n- [ ]\nend!\n", result: .clean, regions: []))
        // Both insert one more identical line in a run of them: once.
        let runs = try #require(TextMerge.merge(base: "x\n\n\n\ny\n", current: "x\n\n\n\n\ny\n", incoming: "X\n\n\n\n\ny\n"))
        #expect(runs == .init(text: "X\n\n\n\n\ny\n", result: .clean, regions: []))
    }

    @Test func sameWordChangedDifferentlyKeepsBothLines() throws {
        let outcome = try #require(
            TextMerge.merge(
                base: "a\nmeet on Monday\nz\n", current: "a\nmeet on Tuesday\nz\n",
                incoming: "a\nmeet on Friday\nz\n"))
        #expect(
            outcome
                == .init(
                    text: "a\nmeet on Tuesday\nmeet on Friday\nz\n", result: .overlap,
                    regions: [.init(start: 2, end: 33)]))
    }

    @Test func identicalChangesAreMadeOnce() throws {
        let outcome = try #require(TextMerge.merge(base: "one\ntwo\n", current: "one\n2\n", incoming: "one\n2\n"))
        #expect(outcome == .init(text: "one\n2\n", result: .clean, regions: []))
    }

    /// Regions count UTF-16 code units: é is one, 🍕 two (a surrogate pair), as in JavaScript.
    @Test func regionsCountUTF16CodeUnits() throws {
        let outcome = try #require(TextMerge.merge(base: "🍕 café\nx\n", current: "🍕 café\nü\n", incoming: "🍕 café\n日本\n"))
        #expect(outcome.text == "🍕 café\nü\n日本\n")
        #expect(outcome.regions == [.init(start: 8, end: 13)])
        let units = Array(outcome.text.utf16)
        #expect(String(decoding: units[8..<13], as: UTF16.self) == "ü\n日本\n")
    }

    @Test func lineEndingsAndNonCharactersArePreservedByteForByte() throws {
        // Canonically equivalent but different bytes (é precomposed and decomposed) are different.
        let outcome = try #require(TextMerge.merge(base: "a\r\nb\r\nc\r\n", current: "a\r\nb\u{0301}\r\nc\r\n", incoming: "a\r\nb\r\nc\r\nd"))
        #expect(Array(outcome.text.utf8) == Array("a\r\nb\u{0301}\r\nc\r\nd".utf8))
        #expect(outcome.result == .clean)
        let nul = try #require(TextMerge.merge(base: "x\0y", current: "x\0y\0", incoming: "w\0y"))
        #expect(Array(nul.text.utf8) == Array("w\0y\0".utf8))
    }

    @Test func emptyTexts() throws {
        #expect(TextMerge.merge(base: "", current: "", incoming: "") == .init(text: "", result: .clean, regions: []))
        #expect(TextMerge.merge(base: "", current: "a", incoming: "") == .init(text: "a", result: .clean, regions: []))
        #expect(TextMerge.merge(base: "a\n", current: "", incoming: "") == .init(text: "", result: .clean, regions: []))
        let both = try #require(TextMerge.merge(base: "", current: "a", incoming: "b"))
        #expect(both == .init(text: "a\nb", result: .overlap, regions: [.init(start: 0, end: 3)]))
    }

    @Test func outcomeAndRegionsEncodeForTheWire() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode([TextMerge.Region(start: 1, end: 4)])
        #expect(String(decoding: data, as: UTF8.self) == #"[{"end":4,"start":1}]"#)
        #expect(try JSONDecoder().decode(TextMerge.Region.self, from: Data(#"{"start":2,"end":3}"#.utf8)) == .init(start: 2, end: 3))
        #expect(String(decoding: try JSONEncoder().encode([TextMerge.Result.overlap]), as: UTF8.self) == #"["overlap"]"#)
    }

    // MARK: Properties

    /// `merge(b, b, x) == x`, `merge(b, x, b) == x`, `merge(b, x, x) == x`, clean — through the
    /// public call (which short-cuts them) and through the algorithm itself.
    @Test(arguments: seeds) func identities(seed: UInt64) {
        var random = SplitMix(seed)
        for index in 0..<Self.casesPerSeed {
            let base = RoughText.random(&random)
            let x = RoughText.edit(base, side: "X", &random)
            let clean = TextMerge.Outcome(text: x, result: .clean, regions: [])
            #expect(TextMerge.merge(base: base, current: base, incoming: x) == clean, "seed \(seed) case \(index)")
            #expect(TextMerge.merge(base: base, current: x, incoming: base) == clean, "seed \(seed) case \(index)")
            #expect(TextMerge.merge(base: base, current: x, incoming: x) == clean, "seed \(seed) case \(index)")
            #expect(TextMerge.mergeMeasured(base: base, current: base, incoming: x).0 == clean, "seed \(seed) case \(index)")
            #expect(TextMerge.mergeMeasured(base: base, current: x, incoming: base).0 == clean, "seed \(seed) case \(index)")
            #expect(TextMerge.mergeMeasured(base: base, current: x, incoming: x).0 == clean, "seed \(seed) case \(index)")
        }
    }

    /// Edits of both sides that do not overlap (at least two unchanged words apart, whole-line
    /// edits two lines apart) are all applied, and the merge is clean.
    @Test(arguments: seeds) func nonOverlappingEditsAreAllApplied(seed: UInt64) {
        var random = SplitMix(seed)
        for index in 0..<Self.casesPerSeed {
            let base = WordText.random(&random)
            let edits = WordText.separatedEdits(base, &random)
            let current = base.applying(edits.filter { $0.side == .current })
            let incoming = base.applying(edits.filter { $0.side == .incoming })
            let expected = base.applying(edits)
            let outcome = TextMerge.merge(base: base.text, current: current.text, incoming: incoming.text)
            #expect(
                outcome == .init(text: expected.text, result: .clean, regions: []),
                "seed \(seed) case \(index)\nbase: \(base.text.debugDescription)\ncurrent: \(current.text.debugDescription)\nincoming: \(incoming.text.debugDescription)"
            )
        }
    }

    /// Both sides replace the same word differently, among other edits: that line is kept in
    /// both versions, current's first, as exactly one region; everything else merges.
    @Test(arguments: seeds) func overlappingEditKeepsBothLinesAsOneRegion(seed: UInt64) {
        var random = SplitMix(seed)
        for index in 0..<Self.casesPerSeed {
            let base = WordText.random(&random)
            let line = random.below(base.lines.count)
            let word = random.below(base.lines[line].count)
            let edits = WordText.separatedEdits(base, &random, avoidingLine: line)
            let mine = WordText.Edit(side: .current, kind: .replace(WordText.marker("C", &random)), line: line, word: word)
            let theirs = WordText.Edit(side: .incoming, kind: .replace(WordText.marker("I", &random)), line: line, word: word)
            let current = base.applying(edits.filter { $0.side == .current } + [mine])
            let incoming = base.applying(edits.filter { $0.side == .incoming } + [theirs])
            // The other edits, and the line both changed in both versions, current's first.
            var expected = base.applying(edits + [mine])
            let currentLine = base.applying([mine]).lines[line]
            let incomingLine = base.applying([theirs]).lines[line]
            let at = expected.lines.firstIndex(of: currentLine)!
            expected.lines.insert(incomingLine, at: at + 1)
            let before = expected.lines[..<at].map { $0.joined(separator: " ") + "\n" }.joined()
            let start = before.utf16.count
            let last = line == base.lines.count - 1 && !base.finalNewline
            let regionText = currentLine.joined(separator: " ") + "\n" + incomingLine.joined(separator: " ") + (last ? "" : "\n")
            let outcome = TextMerge.merge(base: base.text, current: current.text, incoming: incoming.text)
            let context =
                "seed \(seed) case \(index)\nbase: \(base.text.debugDescription)\ncurrent: \(current.text.debugDescription)\nincoming: \(incoming.text.debugDescription)"
            #expect(
                outcome
                    == .init(
                        text: expected.text, result: .overlap,
                        regions: [.init(start: start, end: start + regionText.utf16.count)]), "\(context)")
        }
    }

    /// On rough texts (few distinct lines and words, blank lines, runs of identical lines) with
    /// random, often overlapping, edits: the merge is deterministic; every piece of text either
    /// side inserted is in it exactly once (none dropped, none doubled); the regions are in
    /// bounds, in order, not empty and not touching, and present exactly when it overlaps.
    @Test(arguments: seeds) func everyInsertionKeptOnceAndRegionsValid(seed: UInt64) {
        var random = SplitMix(seed)
        for index in 0..<Self.casesPerSeed {
            let base = RoughText.random(&random)
            let current = RoughText.edit(base, side: "C", &random)
            let incoming = RoughText.edit(base, side: "I", &random)
            let context =
                "seed \(seed) case \(index)\nbase: \(base.debugDescription)\ncurrent: \(current.debugDescription)\nincoming: \(incoming.debugDescription)"
            guard let outcome = TextMerge.merge(base: base, current: current, incoming: incoming) else {
                Issue.record("refused: \(context)")
                continue
            }
            #expect(TextMerge.merge(base: base, current: current, incoming: incoming) == outcome, "\(context)")
            for marker in RoughText.markers(in: current) + RoughText.markers(in: incoming) {
                #expect(outcome.text.components(separatedBy: marker).count == 2, "\(marker) not once in \(outcome.text.debugDescription)\n\(context)")
            }
            #expect((outcome.result == .overlap) == !outcome.regions.isEmpty, "\(context)")
            var end = -1
            for region in outcome.regions {
                #expect(region.start > end && region.start < region.end && region.end <= outcome.text.utf16.count, "\(region) \(context)")
                end = region.end
            }
            // The text outside the regions is taken from the inputs; inside a region, both
            // sides' texts are present (each side's markers there).
            let units = Array(outcome.text.utf16)
            for region in outcome.regions {
                let inside = String(decoding: units[region.start..<region.end], as: UTF16.self)
                #expect(!inside.isEmpty, "\(context)")
            }
        }
    }

    /// The outputs of every case of the fixed seeds, hashed (FNV-1a): the same bytes in every run
    /// and on every platform. If the algorithm changes on purpose, update the figure.
    @Test func sameBytesEveryRun() {
        var hash: UInt64 = 0xcbf29ce484222325
        func mix(_ bytes: some Sequence<UInt8>) {
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
        }
        var overlaps = 0
        for seed in Self.seeds.prefix(10) {
            var random = SplitMix(seed)
            for _ in 0..<100 {
                let base = RoughText.random(&random)
                let current = RoughText.edit(base, side: "C", &random)
                let incoming = RoughText.edit(base, side: "I", &random)
                guard let outcome = TextMerge.merge(base: base, current: current, incoming: incoming) else { mix([0xFF]); continue }
                mix(outcome.text.utf8)
                mix(outcome.result.rawValue.utf8)
                for region in outcome.regions { mix("\(region.start)-\(region.end);".utf8) }
                if outcome.result == .overlap { overlaps += 1 }
            }
        }
        print("TextMerge: 1,000 rough merges, \(overlaps) with overlaps, digest \(String(hash, radix: 16))")
        #expect(String(hash, radix: 16) == Self.digest)
    }

    static let digest = "892d544c14514c2b"

    // MARK: Bounds

    /// 500,000 identical lines (1 MB), each side changing 20 of them: merged, clean, within the
    /// default work cap.
    @Test func manyIdenticalLines() throws {
        let lines = [String](repeating: "x", count: 500_000)
        var current = lines, incoming = lines
        for i in 0..<20 {
            current[i * 24_000 + 1_000] = "C\(i)"
            incoming[i * 24_000 + 13_000] = "I\(i)"
        }
        let (outcome, work) = TextMerge.mergeMeasured(base: text(lines), current: text(current), incoming: text(incoming))
        print("TextMerge: 500,000 identical lines, 20 changes a side: \(work) steps")
        let merged = try #require(outcome)
        #expect(merged.result == .clean)
        var expected = lines
        for i in 0..<20 { expected[i * 24_000 + 1_000] = "C\(i)"; expected[i * 24_000 + 13_000] = "I\(i)" }
        let same = merged.text == text(expected)
        #expect(same)
        #expect(work <= TextMerge.Limits.default.maxWork)
    }

    /// The same with thousands of changes a side: refused by the work cap, and the work stopped
    /// there (not run to the end first).
    @Test func manyIdenticalLinesWithThousandsOfChangesHitTheCap() {
        let lines = [String](repeating: "x", count: 500_000)
        var current = lines, incoming = lines
        for i in 0..<5_000 {
            current[i * 100 + 17] = "C\(i)"
            incoming[i * 100 + 71] = "I\(i)"
        }
        let limits = TextMerge.Limits.default
        let (outcome, work) = TextMerge.mergeMeasured(base: text(lines), current: text(current), incoming: text(incoming))
        print("TextMerge: 500,000 identical lines, 5,000 changes a side: \(outcome == nil ? "refused" : "merged") after \(work) steps")
        #expect(outcome == nil)
        #expect(work <= limits.maxWork + 8 * limits.maxBytes)
        #expect(TextMerge.merge(base: text(lines), current: text(current), incoming: text(incoming)) == nil)
    }

    /// One line of 1 MiB (no line break), different words changed at both ends: clean.
    @Test func oneHugeLine() throws {
        var words = (0..<200_000).map { "w\($0 % 977)" }
        let base = words.joined(separator: " ")
        words[10] = "CURRENT"
        let current = words.joined(separator: " ")
        words[10] = "w10"
        words[199_000] = "INCOMING"
        let incoming = words.joined(separator: " ")
        #expect(base.utf8.count <= 1 << 20)
        let (outcome, work) = TextMerge.mergeMeasured(base: base, current: current, incoming: incoming)
        print("TextMerge: one line of \(base.utf8.count) bytes, a word changed at each end: \(work) steps")
        let merged = try #require(outcome)
        words[10] = "CURRENT"
        let same = merged == .init(text: words.joined(separator: " "), result: .clean, regions: [])
        #expect(same)
    }

    /// One line of 1 MiB of the same word, both sides changing it all over: bounded (merged or
    /// refused within the cap).
    @Test func oneHugeLineOfOneWord() {
        let words = [String](repeating: "ab", count: 349_000)
        var current = words, incoming = words
        for i in stride(from: 5, to: words.count, by: 701) { current[i] = "C" }
        for i in stride(from: 300, to: words.count, by: 997) { incoming[i] = "I" }
        let limits = TextMerge.Limits.default
        let (outcome, work) = TextMerge.mergeMeasured(
            base: words.joined(separator: " "), current: current.joined(separator: " "),
            incoming: incoming.joined(separator: " "))
        print("TextMerge: one line of one word repeated, 1 MB, ~850 changes: \(outcome == nil ? "refused" : "merged") after \(work) steps")
        #expect(work <= limits.maxWork + 8 * limits.maxBytes)
    }

    /// 1 MiB in 20,000 distinct lines, 300 scattered changes a side: clean, with few steps.
    @Test func thousandsOfLines() throws {
        var random = SplitMix(99)
        let letters = Array("abcdefghij")
        let lines = (0..<20_000).map { "line \($0): " + String(repeating: letters[random.below(10)], count: 36) }
        var current = lines, incoming = lines, expected = lines
        for i in 0..<300 {
            current[i * 66 + 3] = "C\(i)"
            incoming[i * 66 + 40] = "I\(i)"
            expected[i * 66 + 3] = "C\(i)"
            expected[i * 66 + 40] = "I\(i)"
        }
        let (outcome, work) = TextMerge.mergeMeasured(base: text(lines), current: text(current), incoming: text(incoming))
        print("TextMerge: 20,000 lines (\(text(lines).utf8.count) bytes), 300 changes a side: \(work) steps")
        #expect(text(lines).utf8.count <= 1 << 20)
        let same = outcome == .init(text: text(expected), result: .clean, regions: [])
        #expect(same)
        #expect(work < TextMerge.Limits.default.maxWork / 10)
    }

    /// Two sides that rewrote 1 MiB of lines drawn from two values: refused, within the cap.
    @Test func rewrittenThroughoutIsRefusedWithinTheCap() {
        var random = SplitMix(7)
        func noise() -> String { text((0..<400_000).map { _ in random.below(2) == 0 ? "a" : "b" }) }
        let limits = TextMerge.Limits.default
        let (outcome, work) = TextMerge.mergeMeasured(base: noise(), current: noise(), incoming: noise())
        print("TextMerge: 3 random texts of 400,000 lines of a or b: \(outcome == nil ? "refused" : "merged") after \(work) steps")
        #expect(outcome == nil)
        #expect(work <= limits.maxWork + 8 * limits.maxBytes)
    }

    @Test func inputsPastMaxBytesAreRefused() {
        let big = String(repeating: "x", count: (1 << 20) + 1)
        #expect(TextMerge.merge(base: big, current: "a", incoming: "b") == nil)
        #expect(TextMerge.merge(base: "a", current: big, incoming: "b") == nil)
        #expect(TextMerge.merge(base: "a", current: "b", incoming: big) == nil)
        #expect(TextMerge.merge(base: "a\n", current: "b\n", incoming: "a\n", limits: .init(maxBytes: 1, maxWork: 1_000)) == nil)
        #expect(TextMerge.merge(base: "a b c\n", current: "a B c\n", incoming: "a b C\n", limits: .init(maxBytes: 100, maxWork: 3)) == nil)
    }

    @Test func aMergedTextPastMaxBytesIsRefused() {
        // Both sides replaced the whole text: the overlap keeps both, 1.2 MB from two of 0.6 MB.
        let base = "as it was\n", current = String(repeating: "a", count: 600_000) + "\n", incoming = String(repeating: "b", count: 600_000) + "\n"
        let unbounded = TextMerge.merge(base: base, current: current, incoming: incoming, limits: .init(maxBytes: 1 << 22, maxWork: 60_000_000))
        #expect(unbounded?.text.utf8.count == 1_200_002 && unbounded?.text == current + incoming, "both sides kept")
        // (Its size, not the text, is what a failure prints.)
        #expect(TextMerge.merge(base: base, current: current, incoming: incoming)?.text.utf8.count == nil)
        // At the limit exactly, a merge stands.
        let small = TextMerge.merge(base: "a\n", current: "b\n", incoming: "c\n")!
        #expect(
            TextMerge.merge(base: "a\n", current: "b\n", incoming: "c\n", limits: .init(maxBytes: small.text.utf8.count, maxWork: 1_000)) == small)
        #expect(
            TextMerge.merge(base: "a\n", current: "b\n", incoming: "c\n", limits: .init(maxBytes: small.text.utf8.count - 1, maxWork: 1_000)) == nil)
    }

    private func text(_ lines: [String]) -> String { lines.map { $0 + "\n" }.joined() }
}

// MARK: Generators

/// SplitMix64: a seeded generator whose sequence is fixed (unlike the system's).
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
    /// 0 ..< bound, by modulo (fixed, whatever the standard library's algorithm).
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// Texts of distinct words in lines, for edits whose places are known.
struct WordText {
    var lines: [[String]]
    var finalNewline: Bool

    var text: String { lines.map { $0.joined(separator: " ") }.joined(separator: "\n") + (finalNewline ? "\n" : "") }

    enum Side { case current, incoming }
    enum Kind { case replace(String), insertBefore(String), delete, deleteLine, insertLine(String) }
    struct Edit {
        var side: Side
        var kind: Kind
        var line: Int
        var word: Int
        var isLineEdit: Bool {
            switch kind {
            case .deleteLine, .insertLine: true;
            default: false
            }
        }
    }

    static let stems = ["w", "café", "日本", "🍕", "x_y", "Ünï"]

    static func marker(_ side: String, _ random: inout SplitMix) -> String {
        "\(side)\(random.below(1_000_000))\(stems[random.below(stems.count)])"
    }

    static func random(_ random: inout SplitMix) -> WordText {
        var serial = 0
        let lines = (0..<1 + random.below(10)).map { _ in
            (0..<1 + random.below(7)).map { _ -> String in
                serial += 1
                return "\(stems[random.below(stems.count)])\(serial)"
            }
        }
        return WordText(lines: lines, finalNewline: random.below(4) != 0)
    }

    /// Edits of both sides at random places, each at least 3 words (whole-line edits: 2 lines)
    /// from any other.
    static func separatedEdits(_ text: WordText, _ random: inout SplitMix, avoidingLine avoided: Int? = nil) -> [Edit] {
        var flat: [(line: Int, word: Int)] = []
        for (l, words) in text.lines.enumerated() { for w in words.indices { flat.append((l, w)) } }
        var edits: [Edit] = []
        func index(_ e: Edit) -> Int { flat.firstIndex { $0.line == e.line && $0.word == e.word }! }
        func far(_ a: Edit, _ b: Edit) -> Bool {
            if a.isLineEdit || b.isLineEdit { return abs(a.line - b.line) >= 2 }
            return abs(index(a) - index(b)) >= 3
        }
        for _ in 0..<random.below(6) {
            let place = flat[random.below(flat.count)]
            let side: Side = random.below(2) == 0 ? .current : .incoming
            let tag = side == .current ? "C" : "I"
            let kind: Kind
            switch random.below(5) {
            case 0: kind = .replace(marker(tag, &random))
            case 1: kind = .insertBefore(marker(tag, &random))
            case 2: kind = text.lines[place.line].count > 1 ? .delete : .replace(marker(tag, &random))
            case 3: kind = text.lines.count > 1 ? .deleteLine : .insertLine(marker(tag, &random))
            default: kind = .insertLine(marker(tag, &random))
            }
            var edit = Edit(side: side, kind: kind, line: place.line, word: place.word)
            if edit.isLineEdit { edit.word = 0 }
            if let avoided, abs(edit.line - avoided) < 3 { continue }
            // Deleting a line next to a deleted line would join two edits.
            guard edits.allSatisfy({ far($0, edit) }) else { continue }
            if case .deleteLine = edit.kind, edits.contains(where: { if case .deleteLine = $0.kind { true } else { false } }) { continue }
            if case .delete = edit.kind, edits.contains(where: { $0.line == edit.line && { if case .delete = $0.kind { true } else { false } }($0) })
            {
                continue
            }
            edits.append(edit)
        }
        return edits
    }

    func applying(_ edits: [Edit]) -> WordText {
        var out: [[String]] = []
        for (l, words) in lines.enumerated() {
            var line: [String] = []
            var deleted = false
            for edit in edits where edit.line == l {
                if case .insertLine(let marker) = edit.kind { out.append([marker]) }
                if case .deleteLine = edit.kind { deleted = true }
            }
            if deleted { continue }
            for (w, word) in words.enumerated() {
                var keep = true
                var replacement = word
                for edit in edits where edit.line == l && edit.word == w {
                    switch edit.kind {
                    case .insertBefore(let marker): line.append(marker)
                    case .replace(let marker): replacement = marker
                    case .delete: keep = false
                    default: break
                    }
                }
                if keep { line.append(replacement) }
            }
            out.append(line)
        }
        return WordText(lines: out, finalNewline: finalNewline)
    }
}

/// Rough texts: few distinct lines and words, blank lines, runs of identical lines.
enum RoughText {
    static let pool = ["", "", "x", "x", "x", "- [ ] a", "a b", "}", "  ", "x y x", "a", "b a"]

    static func random(_ random: inout SplitMix) -> String {
        let lines = (0..<random.below(30)).map { _ in pool[random.below(pool.count)] }
        let text = lines.joined(separator: "\n")
        return random.below(3) == 0 ? text : text + (lines.isEmpty ? "" : "\n")
    }

    /// A few random edits of lines and words; every inserted piece carries a marker unique to
    /// the side (`⟦C12⟧`), or is a line of the pool.
    static func edit(_ text: String, side: String, _ random: inout SplitMix) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var serial = 0
        func marker() -> String { serial += 1; return "⟦\(side)\(serial)⟧" }
        for _ in 0..<random.below(6) {
            let at = random.below(lines.count + 1)
            switch random.below(6) {
            case 0: lines.insert(marker(), at: at)
            case 1: lines.insert(pool[random.below(pool.count)], at: at)
            case 2 where at < lines.count: lines.remove(at: at)
            case 3 where at < lines.count:
                var words = lines[at].split(separator: " ", omittingEmptySubsequences: false).map(String.init)
                words[random.below(words.count)] = marker()
                lines[at] = words.joined(separator: " ")
            case 4 where at < lines.count:
                var words = lines[at].split(separator: " ", omittingEmptySubsequences: false).map(String.init)
                words.insert(marker(), at: random.below(words.count + 1))
                lines[at] = words.joined(separator: " ")
            default:
                lines.insert(contentsOf: [marker(), "", "x"], at: at)
            }
        }
        return lines.joined(separator: "\n")
    }

    static func markers(in text: String) -> [String] {
        var found: [String] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "⟦"), let close = rest[open...].firstIndex(of: "⟧") {
            found.append(String(rest[open...close]))
            rest = rest[rest.index(after: close)...]
        }
        return found
    }
}
