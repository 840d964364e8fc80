/// The web app's one-span rebase (`Web/app/merge.js`, `rebase`), for the sync engine: a text
/// typed on (`now`) while an earlier one (`sent`) was being saved, moved onto what the server
/// made of `sent` (`merged`), so that the later edit is sent from the merged version and the
/// server need not merge the earlier text in a second time. Works on Unicode scalars (the web
/// app on UTF-16 units: the same spans).
enum TextRebase {
    /// The one span where `from` and `to` differ: `[start, fromEnd)` of `from` became `[start, toEnd)` of `to`.
    static func changedSpan(_ from: [Unicode.Scalar], _ to: [Unicode.Scalar]) -> (start: Int, fromEnd: Int, toEnd: Int) {
        let shorter = min(from.count, to.count)
        var start = 0
        while start < shorter && from[start] == to[start] { start += 1 }
        var tail = 0
        while tail < shorter - start && from[from.count - 1 - tail] == to[to.count - 1 - tail] { tail += 1 }
        return (start, from.count - tail, to.count - tail)
    }

    /// `now` moved onto `merged`: what was typed after `sent` goes in where it was typed, when
    /// the merge changed nothing there; `nil` when both changed the same place.
    static func rebase(sent: String, now: String, merged: String) -> String? {
        let sent = Array(sent.unicodeScalars), now = Array(now.unicodeScalars), merged = Array(merged.unicodeScalars)
        if now == sent { return text(merged[...]) }
        let typed = changedSpan(sent, now)
        let brought = changedSpan(sent, merged)
        let insert = now[typed.start..<typed.toEnd]
        if typed.fromEnd <= brought.start {
            return text(merged[..<typed.start] + insert + merged[typed.fromEnd...])
        }
        if typed.start >= brought.fromEnd {
            let shift = merged.count - sent.count
            return text(merged[..<(typed.start + shift)] + insert + merged[(typed.fromEnd + shift)...])
        }
        return nil
    }

    private static func text<S: Sequence<Unicode.Scalar>>(_ scalars: S) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }
}
