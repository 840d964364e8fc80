/// A three-way merge of plain text: what a note's body becomes when an edit made against an older
/// version (`base`) meets the body stored since (`current`).
///
/// **Granularity: lines, then words.** The merge is diff3 (Khanna, Kuber and Pierce, "A formal
/// investigation of diff3", 2007) over lines: the base is diffed against each side, the base
/// lines both diffs keep are stable, and each span between stable lines is taken from the side
/// that changed it (or once, if both made the same change). Where both sides changed the same
/// lines, the span is merged again the same way over words (a run of letters, digits, `_` and
/// non-ASCII characters; a run of spaces and tabs; any other single character, `\n` included),
/// so that two edits of different words of one line (a paragraph, in a note) merge cleanly.
///
/// **Overlap: both kept.** Where the word merge still finds both sides changing the same words,
/// the span is kept at line granularity as the current side's lines followed by the incoming
/// side's lines — lines both sides have at the span's start and end once, a `\n` between the two
/// if the current side's text is the end of the note and has none — and that text is reported as
/// a `Region` (`result == .overlap`). No character either side inserted is ever dropped; a
/// deletion by one side that meets an edit by the other keeps the edit.
///
/// **The diff.** Lines are compared whole (bytes). Each two-way diff trims the common head and
/// tail, anchors on the lines unique in both sides (patience diff — so a change beside runs of
/// identical lines, such as blank lines, is not aligned against the wrong copy), falls back to
/// Myers' O(ND) diff where there is no such line, and slides every changed run as far down as
/// equal lines allow, so the same change found by different paths on the two sides is one change
/// (not applied twice). Insertions by both sides at the same place are an overlap (current's
/// first).
///
/// **Determinism.** The output depends only on the three inputs' bytes: no hash order, no clock,
/// no randomness, no Unicode tables (word classes are decided on bytes). `merge(b, b, x) == x`,
/// `merge(b, x, b) == x` and `merge(b, x, x) == x`, all clean.
///
/// **Bounds.** Inputs past `Limits.maxBytes`, merges whose text would be past it (both sides
/// kept where they overlap) and merges that would take more than `Limits.maxWork` steps (one
/// step: one token compared, counted or copied) return `nil`; memory is linear in the inputs'
/// size.
public enum TextMerge {
    /// Limits past which `merge` refuses (returns `nil`).
    public struct Limits: Sendable {
        /// The largest input, in UTF-8 bytes, of each of the three texts.
        public var maxBytes: Int
        /// The most steps the merge may take (tokens compared, counted or copied, over every
        /// diff it runs): the bound on its time.
        public var maxWork: Int

        /// 1 MiB per input, and a work cap that merges any 1 MiB note whose two sides each
        /// changed it in a few hundred places, well under a second.
        public static let `default` = Limits(maxBytes: 1 << 20, maxWork: 60_000_000)
    }

    /// Where both sides changed the same text: offsets into the merged text in UTF-16 code units
    /// (what JavaScript strings and `NSRange` count), `end` exclusive.
    public struct Region: Sendable, Equatable, Codable {
        public var start: Int
        public var end: Int

        public init(start: Int, end: Int) {
            self.start = start
            self.end = end
        }
    }

    /// `clean`: every change of both sides applied, none overlapping; `overlap`: some text both
    /// sides changed is kept from both (see `Outcome.regions`).
    public enum Result: String, Sendable, Codable {
        case clean, overlap
    }

    /// A merge's text, whether some of it overlapped, and where.
    public struct Outcome: Sendable, Equatable {
        /// The merged text.
        public var text: String
        /// `.overlap` exactly when `regions` is not empty.
        public var result: Result
        /// The overlapping spans of `text`, in order, none empty, none touching another.
        public var regions: [Region]

        public init(text: String, result: Result, regions: [Region]) {
            self.text = text
            self.result = result
            self.regions = regions
        }
    }

    /// Merges two texts descended from one.
    ///
    /// - Parameters:
    ///   - base: The common ancestor (the revision the incoming edit was made from).
    ///   - current: The stored body, which changed since `base`.
    ///   - incoming: The client's body, made from `base`.
    ///   - limits: Past these, the merge is refused.
    /// - Returns: The merged text, or `nil` if an input or the merged text is larger than
    ///   `limits.maxBytes` or the merge would take more than `limits.maxWork` steps.
    public static func merge(base: String, current: String, incoming: String, limits: Limits = .default) -> Outcome? {
        counted(base: base, current: current, incoming: incoming, limits: limits).outcome
    }

    /// `merge`, with the steps it took: what it cost (at most `limits.maxWork` plus the last
    /// count that passed it; 0 when one side is the base or an input is past `maxBytes`).
    public static func counted(base: String, current: String, incoming: String, limits: Limits = .default) -> (outcome: Outcome?, work: Int) {
        let o = Array(base.utf8), a = Array(current.utf8), b = Array(incoming.utf8)
        guard o.count <= limits.maxBytes, a.count <= limits.maxBytes, b.count <= limits.maxBytes else { return (nil, 0) }
        // What one side did not change is the other side's text, whatever its size.
        if a == o { return (Outcome(text: incoming, result: .clean, regions: []), 0) }
        if b == o || b == a { return (Outcome(text: current, result: .clean, regions: []), 0) }
        let meter = WorkMeter(limit: limits.maxWork)
        do {
            var merger = Merger(meter: meter)
            try merger.mergeLines(o, a, b)
            let outcome = merger.outcome()
            // The merged text is bounded as the inputs are: an overlap keeps both sides, and a
            // note made twice as large as any edit may be could never be merged again.
            return (outcome.text.utf8.count <= limits.maxBytes ? outcome : nil, meter.used)
        } catch {
            return (nil, meter.used)
        }
    }

    /// What `merge` does, and the steps it took (`nil` when past the cap): for tests and figures.
    static func mergeMeasured(base: String, current: String, incoming: String, limits: Limits = .default) -> (Outcome?, work: Int) {
        let o = Array(base.utf8), a = Array(current.utf8), b = Array(incoming.utf8)
        guard o.count <= limits.maxBytes, a.count <= limits.maxBytes, b.count <= limits.maxBytes else { return (nil, 0) }
        let meter = WorkMeter(limit: limits.maxWork)
        var merger = Merger(meter: meter)
        do {
            try merger.mergeLines(o, a, b)
            return (merger.outcome(), meter.used)
        } catch {
            return (nil, meter.used)
        }
    }
}

/// One span of a diff3 parse: `stable` spans are the same in all three texts.
struct Diff3Chunk: Equatable {
    var base: Range<Int>
    var current: Range<Int>
    var incoming: Range<Int>
    var stable: Bool
}

enum Diff3 {
    /// The diff3 parse of three token lists that share one interner (`distinct` ids).
    static func chunks(_ o: MergeTokens, _ a: MergeTokens, _ b: MergeTokens, distinct: Int, meter: WorkMeter) throws(MergeWorkExceeded)
        -> [Diff3Chunk]
    {
        let ma = try TokenDiff(o.ids, a.ids, distinct: distinct, meter: meter).matchesOfA()
        let mb = try TokenDiff(o.ids, b.ids, distinct: distinct, meter: meter).matchesOfA()
        try meter.spend(o.count + a.count + b.count)
        var chunks: [Diff3Chunk] = []
        let n = o.count
        var lo = 0, la = 0, lb = 0
        while true {
            var i = lo
            while i < n, ma[i] == la + (i - lo), mb[i] == lb + (i - lo) { i += 1 }
            if i > lo {
                let length = i - lo
                chunks.append(Diff3Chunk(base: lo..<i, current: la..<la + length, incoming: lb..<lb + length, stable: true))
                lo = i; la += length; lb += length
            }
            if lo == n, la == a.count, lb == b.count { break }
            // The next base token both sides kept ends the unstable span.
            var next = lo
            while next < n, ma[next] < 0 || mb[next] < 0 { next += 1 }
            let ea = next < n ? ma[next] : a.count
            let eb = next < n ? mb[next] : b.count
            chunks.append(Diff3Chunk(base: lo..<next, current: la..<ea, incoming: lb..<eb, stable: false))
            lo = next; la = ea; lb = eb
        }
        return chunks
    }
}

/// What to do with each span of a diff3 parse.
enum Take: Equatable {
    /// Copy tokens of the base (0), current (1) or incoming (2) text.
    case copy(Int, Range<Int>)
    /// Both sides changed this span, differently.
    case overlap(Diff3Chunk)
}

extension Diff3 {
    /// Takes each span from the side that changed it; an identical change once.
    ///
    /// One more rule, against the known diff3 duplication: when one side's change, a stable
    /// span `s` and the other side's pure insertion `q` follow each other, and the first side's
    /// text there already reads `…s q` (or, mirrored, `q s…`), the two diffs only aligned the
    /// same insertion differently around identical tokens (blank lines, list markers); it is
    /// taken once, from the first side's text, instead of twice.
    static func takes(_ chunks: [Diff3Chunk], _ o: MergeTokens, _ a: MergeTokens, _ b: MergeTokens) -> [Take] {
        let texts = [o, a, b]
        // The side whose text an unstable span takes: 1 current, 2 incoming, 0 overlap.
        func side(_ chunk: Diff3Chunk) -> Int {
            if a.same(chunk.current, as: chunk.base, in: o) { return 2 }
            if b.same(chunk.incoming, as: chunk.base, in: o) || a.same(chunk.current, as: chunk.incoming, in: b) { return 1 }
            return 0
        }
        func part(_ chunk: Diff3Chunk, _ side: Int) -> Range<Int> { side == 1 ? chunk.current : chunk.incoming }
        func ids(_ side: Int, _ range: Range<Int>) -> ArraySlice<Int32> { texts[side].ids[range] }

        var takes: [Take] = []
        var i = 0
        while i < chunks.count {
            let chunk = chunks[i]
            if chunk.stable {
                takes.append(.copy(0, chunk.base))
                i += 1
                continue
            }
            let first = side(chunk)
            if first == 0 {
                takes.append(.overlap(chunk))
                i += 1
                continue
            }
            if i + 2 < chunks.count, chunks[i + 1].stable, !chunks[i + 2].stable {
                let stable = ids(0, chunks[i + 1].base)
                let next = chunks[i + 2]
                let second = side(next)
                if second != 0, second != first {
                    let mine = ids(first, part(chunk, first))
                    let theirs = ids(second, part(next, second))
                    // `mine s` ends with `s q`, q the second side's insertion.
                    if next.base.isEmpty, mine.count >= theirs.count,
                        (mine + stable).suffix(stable.count + theirs.count).elementsEqual(stable + theirs)
                    {
                        takes.append(.copy(first, part(chunk, first)))
                        takes.append(.copy(0, chunks[i + 1].base))
                        i += 3
                        continue
                    }
                    // q the first side's insertion, `s theirs` starts with `q s`.
                    if chunk.base.isEmpty, theirs.count >= mine.count,
                        (stable + theirs).prefix(mine.count + stable.count).elementsEqual(mine + stable)
                    {
                        takes.append(.copy(0, chunks[i + 1].base))
                        takes.append(.copy(second, part(next, second)))
                        i += 3
                        continue
                    }
                }
            }
            takes.append(.copy(first, part(chunk, first)))
            i += 1
        }
        return takes
    }
}

/// Builds the merged bytes and the overlapping regions (byte offsets until `outcome()`).
struct Merger {
    let meter: WorkMeter
    var output: [UInt8] = []
    var regions: [Range<Int>] = []

    init(meter: WorkMeter) { self.meter = meter }

    mutating func mergeLines(_ o: [UInt8], _ a: [UInt8], _ b: [UInt8]) throws(MergeWorkExceeded) {
        try meter.spend((o.count + a.count + b.count) / 16)
        var interner = TokenInterner()
        let base = Tokenizer.lines(o, interner: &interner)
        let current = Tokenizer.lines(a, interner: &interner)
        let incoming = Tokenizer.lines(b, interner: &interner)
        let texts = [base, current, incoming]
        output.reserveCapacity(max(a.count, b.count))
        let chunks = try Diff3.chunks(base, current, incoming, distinct: interner.distinct, meter: meter)
        for take in Diff3.takes(chunks, base, current, incoming) {
            switch take {
            case .copy(let text, let range):
                append(texts[text], range)
            case .overlap(let chunk):
                if try !mergeWords(base, current, incoming, chunk) {
                    keepBoth(current, incoming, chunk)
                }
            }
        }
    }

    /// Merges a span both sides changed again, over words; appends it and returns true if no
    /// words overlap, else appends nothing and returns false.
    mutating func mergeWords(_ base: MergeTokens, _ current: MergeTokens, _ incoming: MergeTokens, _ chunk: Diff3Chunk) throws(MergeWorkExceeded)
        -> Bool
    {
        func span(_ tokens: MergeTokens, _ range: Range<Int>) -> Range<Int> {
            tokens.offset(range.lowerBound)..<tokens.offset(range.upperBound)
        }
        var interner = TokenInterner()
        let o = Tokenizer.words(base.bytes, span: span(base, chunk.base), interner: &interner)
        let a = Tokenizer.words(current.bytes, span: span(current, chunk.current), interner: &interner)
        let b = Tokenizer.words(incoming.bytes, span: span(incoming, chunk.incoming), interner: &interner)
        try meter.spend(o.count + a.count + b.count)
        let chunks = try Diff3.chunks(o, a, b, distinct: interner.distinct, meter: meter)
        let takes = Diff3.takes(chunks, o, a, b)
        let texts = [o, a, b]
        var copies: [(Int, Range<Int>)] = []
        for take in takes {
            guard case .copy(let text, let range) = take else { return false }
            copies.append((text, range))
        }
        for (text, range) in copies { append(texts[text], range) }
        return true
    }

    /// Both sides' lines of a span: their common first and last lines once, the rest current's
    /// then incoming's, as one region.
    mutating func keepBoth(_ current: MergeTokens, _ incoming: MergeTokens, _ chunk: Diff3Chunk) {
        var a = chunk.current, b = chunk.incoming
        var head = 0
        while head < a.count, head < b.count, current.ids[a.lowerBound + head] == incoming.ids[b.lowerBound + head] { head += 1 }
        var tail = 0
        while tail < a.count - head, tail < b.count - head,
            current.ids[a.upperBound - 1 - tail] == incoming.ids[b.upperBound - 1 - tail]
        { tail += 1 }
        append(current, a.lowerBound..<a.lowerBound + head)
        let start = output.count
        a = a.lowerBound + head..<a.upperBound - tail
        b = b.lowerBound + head..<b.upperBound - tail
        append(current, a)
        if !a.isEmpty, !b.isEmpty, output.last != 0x0A { output.append(0x0A) }
        append(incoming, b)
        if output.count > start { regions.append(start..<output.count) }
        append(current, chunk.current.upperBound - tail..<chunk.current.upperBound)
    }

    mutating func append(_ tokens: MergeTokens, _ range: Range<Int>) {
        guard !range.isEmpty else { return }
        output.append(contentsOf: tokens.bytes[tokens.offset(range.lowerBound)..<tokens.offset(range.upperBound)])
    }

    /// The text, and the regions in UTF-16 code units.
    func outcome() -> TextMerge.Outcome {
        var utf16 = 0
        var byte = 0
        var converted: [TextMerge.Region] = []
        converted.reserveCapacity(regions.count)
        // UTF-16 units before byte offset `target`: one per scalar, two for a 4-byte one.
        func advance(to target: Int) {
            while byte < target {
                let lead = output[byte]
                if lead & 0xC0 != 0x80 { utf16 += lead >= 0xF0 ? 2 : 1 }
                byte += 1
            }
        }
        for region in regions {
            advance(to: region.lowerBound)
            let start = utf16
            advance(to: region.upperBound)
            converted.append(TextMerge.Region(start: start, end: utf16))
        }
        return TextMerge.Outcome(
            text: String(decoding: output, as: UTF8.self),
            result: converted.isEmpty ? .clean : .overlap, regions: converted)
    }
}
