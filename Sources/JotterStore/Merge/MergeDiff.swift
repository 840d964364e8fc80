/// The merge ran past `TextMerge.Limits.maxWork`.
struct MergeWorkExceeded: Error {}

/// Counts the merge's steps against its cap: one step is one token compared, counted or copied.
final class WorkMeter {
    let limit: Int
    private(set) var used = 0

    init(limit: Int) { self.limit = limit }

    @inline(__always) func spend(_ steps: Int) throws(MergeWorkExceeded) {
        used &+= steps
        if used > limit { throw MergeWorkExceeded() }
    }
}

/// A two-way diff of token ids: which tokens of `a` and of `b` are not in their common
/// subsequence (`changedA`, `changedB`).
///
/// Each span is first trimmed of its common head and tail; then the tokens that occur exactly
/// once in both sides' spans are anchors (patience diff: the longest increasing run of them, by
/// patience sorting), and the spans between anchors are diffed the same way; a span with no
/// anchor is diffed by Myers' O(ND) algorithm in linear space (the middle snake). Every step is
/// counted by the `WorkMeter`, which stops the diff past its cap.
///
/// At the end, each pure insertion or deletion is slid as far down as equal tokens allow (a run
/// `x[s..<e]` moves down while `x[s] == x[e]`, until it would touch another change): the same
/// insertion written beside identical lines (blank lines, list markers) is then reported at the
/// same place whichever way it was found, so a three-way merge sees it as one change, not two.
struct TokenDiff {
    var changedA: [Bool]
    var changedB: [Bool]

    /// `match[i]`: the index in `b` of `a[i]`, or -1 when `a[i]` is changed.
    func matchesOfA() -> [Int] {
        var match = [Int](repeating: -1, count: changedA.count)
        var j = 0
        for i in changedA.indices where !changedA[i] {
            while changedB[j] { j += 1 }
            match[i] = j
            j += 1
        }
        return match
    }

    init(_ a: [Int32], _ b: [Int32], distinct: Int, meter: WorkMeter) throws(MergeWorkExceeded) {
        var differ = Differ(a: a, b: b, distinct: distinct, meter: meter)
        try differ.run()
        changedA = differ.changedA
        changedB = differ.changedB
        try Self.pairReplacements(&changedA, &changedB, a, meter: meter)
        Self.slideDown(&changedA, &changedB, a, b)
    }

    /// One change: `a[aLo..<aHi]` became `b[bLo..<bHi]`.
    struct Hunk { var aLo, aHi, bLo, bHi: Int }

    static func hunks(_ changedA: [Bool], _ changedB: [Bool]) -> [Hunk] {
        var hunks: [Hunk] = []
        let nA = changedA.count, nB = changedB.count
        var i = 0, j = 0
        while i < nA || j < nB {
            if i < nA, j < nB, !changedA[i], !changedB[j] { i += 1; j += 1; continue }
            var i2 = i, j2 = j
            while i2 < nA, changedA[i2] { i2 += 1 }
            while j2 < nB, changedB[j2] { j2 += 1 }
            hunks.append(Hunk(aLo: i, aHi: i2, bLo: j, bHi: j2))
            i = i2; j = j2
        }
        return hunks
    }

    /// Puts deleted tokens of a run of identical ones next to the insertions that replaced them.
    ///
    /// In a run of identical lines (`x x x x`), replacing one by `C` costs the same as inserting
    /// `C` and deleting any other `x` of the run, and a diff may report either (Myers' does: all
    /// the deletions at one end); the merge would then move text between the two places.
    /// Insertions are placed by what they insert, deletions of identical tokens by nothing, so
    /// the deletions move: a change that deletes more tokens than it inserts hands its surplus
    /// (its last deleted tokens) down to the next change if that one inserts more than it deletes
    /// and the tokens between let them slide (each equal to the one it passes); then, backwards,
    /// a change still short of deletions takes them up from the next one's surplus.
    static func pairReplacements(_ changedA: inout [Bool], _ changedB: inout [Bool], _ a: [Int32], meter: WorkMeter) throws(MergeWorkExceeded) {
        var hunks = Self.hunks(changedA, changedB)
        guard hunks.count > 1 else { return }
        func surplus(_ h: Hunk) -> Int { (h.aHi - h.aLo) - (h.bHi - h.bLo) }
        var moved = false
        // Down: the last `m` deleted tokens of `first` slide over the gap to before `second`.
        for k in 0..<hunks.count - 1 {
            let first = hunks[k], second = hunks[k + 1]
            let m = surplus(first)
            guard m > 0, surplus(second) < 0 else { continue }
            let gap = second.aLo - first.aHi
            try meter.spend(gap)
            var slides = true
            for t in 0..<gap where a[first.aHi - m + t] != a[first.aHi + t] { slides = false; break }
            guard slides else { continue }
            hunks[k].aHi -= m
            hunks[k + 1].aLo -= m
            moved = true
        }
        // Up: the first deleted tokens of `second` slide over the gap to after `first`.
        for k in stride(from: hunks.count - 2, through: 0, by: -1) {
            let first = hunks[k], second = hunks[k + 1]
            let m = min(-surplus(first), surplus(second))
            guard m > 0 else { continue }
            let gap = second.aLo - first.aHi
            try meter.spend(gap)
            var slides = true
            for t in 0..<gap where a[second.aLo - 1 - t] != a[second.aLo + m - 1 - t] { slides = false; break }
            guard slides else { continue }
            hunks[k].aHi += m
            hunks[k + 1].aLo += m
            moved = true
        }
        guard moved else { return }
        for index in changedA.indices { changedA[index] = false }
        for index in changedB.indices { changedB[index] = false }
        for hunk in hunks {
            for i in hunk.aLo..<hunk.aHi { changedA[i] = true }
            for j in hunk.bLo..<hunk.bHi { changedB[j] = true }
        }
    }

    /// Slides each pure insertion and pure deletion as far down as equal tokens allow
    /// (`x[s..<e]` moves to `x[s+1...e]` while `x[s] == x[e]`), stopping before it would touch
    /// another change. Replacements stay where they are, so a changed line is never split from
    /// the line that replaced it.
    static func slideDown(_ changedA: inout [Bool], _ changedB: inout [Bool], _ a: [Int32], _ b: [Int32]) {
        let nA = a.count, nB = b.count
        // A slide stops before it would touch the next change, so the hunks after it stay as found.
        for hunk in hunks(changedA, changedB) {
            var i = hunk.aLo, j = hunk.bLo, i2 = hunk.aHi, j2 = hunk.bHi
            if i2 == i {
                // b[j..<j2] inserted before a[i] (which pairs with b[j2]).
                while i < nA, j2 < nB, b[j] == b[j2], j2 + 1 == nB || !changedB[j2 + 1], i + 1 == nA || !changedA[i + 1] {
                    changedB[j] = false; changedB[j2] = true
                    i += 1; j += 1; j2 += 1
                }
            } else if j2 == j {
                // a[i..<i2] deleted before b[j] (which pairs with a[i2]).
                while j < nB, i2 < nA, a[i] == a[i2], i2 + 1 == nA || !changedA[i2 + 1], j + 1 == nB || !changedB[j + 1] {
                    changedA[i] = false; changedA[i2] = true
                    i += 1; i2 += 1; j += 1
                }
            }
        }
    }
}

private struct Differ {
    let a: [Int32]
    let b: [Int32]
    var changedA: [Bool]
    var changedB: [Bool]
    let meter: WorkMeter
    /// Patience scratch, by token id; put back to zero after each use.
    var countA: [Int32]
    var countB: [Int32]
    var placeB: [Int32]
    /// Myers scratch: the furthest x reached per diagonal, searching forward (from index 0)
    /// and backward (from `backwardStart`).
    var reached: [Int]
    let backwardStart: Int

    init(a: [Int32], b: [Int32], distinct: Int, meter: WorkMeter) {
        self.a = a
        self.b = b
        self.meter = meter
        changedA = [Bool](repeating: false, count: a.count)
        changedB = [Bool](repeating: false, count: b.count)
        countA = [Int32](repeating: 0, count: distinct)
        countB = [Int32](repeating: 0, count: distinct)
        placeB = [Int32](repeating: 0, count: distinct)
        let diagonals = 2 * (a.count + b.count) + 3
        reached = [Int](repeating: 0, count: 2 * diagonals)
        backwardStart = diagonals
    }

    struct Span { var aLo, aHi, bLo, bHi: Int; var anchors: Bool }

    mutating func run() throws(MergeWorkExceeded) {
        // A stack, not recursion: the depth could be the number of lines.
        var spans = [Span(aLo: 0, aHi: a.count, bLo: 0, bHi: b.count, anchors: true)]
        while var span = spans.popLast() {
            try meter.spend(1)
            // Common head and tail.
            var head = 0
            while span.aLo < span.aHi, span.bLo < span.bHi, a[span.aLo] == b[span.bLo] {
                span.aLo += 1; span.bLo += 1; head += 1
            }
            while span.aLo < span.aHi, span.bLo < span.bHi, a[span.aHi - 1] == b[span.bHi - 1] {
                span.aHi -= 1; span.bHi -= 1; head += 1
            }
            try meter.spend(head)
            if span.aLo == span.aHi || span.bLo == span.bHi {
                for i in span.aLo..<span.aHi { changedA[i] = true }
                for j in span.bLo..<span.bHi { changedB[j] = true }
                continue
            }
            if span.anchors, try anchor(span, into: &spans) { continue }
            try bisect(span, into: &spans)
        }
    }

    /// Patience: pushes the spans between the unique common tokens; false if there is none.
    mutating func anchor(_ span: Span, into spans: inout [Span]) throws(MergeWorkExceeded) -> Bool {
        try meter.spend(2 * (span.aHi - span.aLo + span.bHi - span.bLo))
        for i in span.aLo..<span.aHi { countA[Int(a[i])] &+= 1 }
        for j in span.bLo..<span.bHi { countB[Int(b[j])] &+= 1; placeB[Int(b[j])] = Int32(j) }
        // Unique in both, in a's order: (i, j).
        var pairs: [(Int, Int)] = []
        for i in span.aLo..<span.aHi {
            let id = Int(a[i])
            if countA[id] == 1, countB[id] == 1 { pairs.append((i, Int(placeB[id]))) }
        }
        for i in span.aLo..<span.aHi { countA[Int(a[i])] = 0 }
        for j in span.bLo..<span.bHi { countB[Int(b[j])] = 0 }
        if pairs.isEmpty { return false }

        // The longest run of pairs increasing in j (patience sorting).
        try meter.spend(pairs.count * (1 + Int.bitWidth - pairs.count.leadingZeroBitCount))
        var tails: [Int] = []  // index into pairs of the smallest tail of each length
        var previous = [Int](repeating: -1, count: pairs.count)
        for (index, pair) in pairs.enumerated() {
            var lo = 0, hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if pairs[tails[mid]].1 < pair.1 { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 { previous[index] = tails[lo - 1] }
            if lo == tails.count { tails.append(index) } else { tails[lo] = index }
        }
        var chain: [Int] = []
        var at = tails.last!
        while at >= 0 { chain.append(at); at = previous[at] }
        chain.reverse()

        var aLo = span.aLo, bLo = span.bLo
        for index in chain {
            let (i, j) = pairs[index]
            spans.append(Span(aLo: aLo, aHi: i, bLo: bLo, bHi: j, anchors: true))
            aLo = i + 1
            bLo = j + 1
        }
        spans.append(Span(aLo: aLo, aHi: span.aHi, bLo: bLo, bHi: span.bHi, anchors: true))
        return true
    }

    /// Myers' middle snake: splits the span in two around a common run on a shortest edit path.
    mutating func bisect(_ span: Span, into spans: inout [Span]) throws(MergeWorkExceeded) {
        let n = span.aHi - span.aLo
        let m = span.bHi - span.bLo
        let delta = n - m
        let odd = delta & 1 != 0
        let offset = n + m + 1  // diagonal k is at index k + offset
        let limit = (n + m + 1) / 2
        reached[offset + 1] = 0
        reached[backwardStart + offset + 1] = 0
        var split: (x0: Int, y0: Int, x1: Int, y1: Int)? = nil
        search: for d in 0...limit {
            try meter.spend(2 * d + 2)
            var k = -d
            while k <= d {
                let (x0, x) = try reach(k, round: d, offset: offset, in: span, fromEnd: false)
                let kb = delta - k
                if odd, kb >= -(d - 1), kb <= d - 1, x + reached[backwardStart + offset + kb] >= n {
                    split = (x0, x0 - k, x, x - k)
                    break search
                }
                k += 2
            }
            k = -d
            while k <= d {
                let (x0, x) = try reach(k, round: d, offset: offset, in: span, fromEnd: true)
                let kf = delta - k
                if !odd, kf >= -d, kf <= d, x + reached[offset + kf] >= n {
                    split = (n - x, m - (x - k), n - x0, m - (x0 - k))
                    break search
                }
                k += 2
            }
        }
        // Each half must be smaller than the span, or the stack would never empty.
        guard let (x0, y0, x1, y1) = split, x0 + y0 < n + m, x1 + y1 > 0 else {
            // Cannot happen for a trimmed span; if it did, call it all changed rather than loop.
            for i in span.aLo..<span.aHi { changedA[i] = true }
            for j in span.bLo..<span.bHi { changedB[j] = true }
            return
        }
        spans.append(Span(aLo: span.aLo, aHi: span.aLo + x0, bLo: span.bLo, bHi: span.bLo + y0, anchors: false))
        spans.append(Span(aLo: span.aLo + x1, aHi: span.aHi, bLo: span.bLo + y1, bHi: span.bHi, anchors: false))
    }

    /// Round `d` of the middle-snake search on diagonal `k`, from the span's start or (`fromEnd`)
    /// from its end: one step on from the neighbouring diagonal that reached further in round
    /// d − 1 (down from k + 1 or right from k − 1), then along the run of equal tokens. Records
    /// the furthest x reached on `k` and returns where the run began (`x0`) and ended (`x`);
    /// y is x − k.
    @inline(__always)
    private mutating func reach(
        _ k: Int, round d: Int, offset: Int, in span: Span,
        fromEnd: Bool
    ) throws(MergeWorkExceeded) -> (x0: Int, x: Int) {
        let n = span.aHi - span.aLo, m = span.bHi - span.bLo
        let at = (fromEnd ? backwardStart : 0) + offset + k  // diagonal k in `reached`
        let x0 = k == -d || (k != d && reached[at - 1] < reached[at + 1]) ? reached[at + 1] : reached[at - 1] + 1
        var x = x0, y = x0 - k
        if fromEnd {
            while x < n, y < m, a[span.aHi - 1 - x] == b[span.bHi - 1 - y] { x += 1; y += 1 }
        } else {
            while x < n, y < m, a[span.aLo + x] == b[span.bLo + y] { x += 1; y += 1 }
        }
        try meter.spend(x - x0)
        reached[at] = x
        return (x0, x)
    }
}
