#if canImport(FoundationEssentials)
import JotterCLICore
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The progress of one transfer on standard error: a bar with rate and ETA, redrawn at most
/// ten times a second, on a terminal; nothing otherwise (the caller prints a summary line).
///
/// ```
/// photo.jpg  [##########··········]  52%  2.3 MiB/4.4 MiB  41.0 MB/s  ETA 0:01
/// ```
final class ProgressBar: Sendable {
    private struct State {
        var lastDraw = 0.0
        var drawn = false
        var complete = false
    }

    let label: String
    let console: Console
    let started = Date()
    private let state = Mutex(State())

    init(label: String, console: Console) {
        self.label = label
        self.console = console
    }

    /// Seconds since the transfer started.
    var elapsed: Double { Date().timeIntervalSince(started) }

    /// Redraws the bar if a tenth of a second has passed (or the transfer is complete).
    func update(completed: Int64, total: Int64?, startedAt offset: Int64 = 0) {
        guard console.isTerminal else { return }
        let elapsed = self.elapsed
        let due = state.withLock { state -> Bool in
            let complete = completed == total
            guard elapsed - state.lastDraw >= 0.1 || (complete && !state.complete) else { return false }
            state.lastDraw = elapsed
            state.complete = complete
            state.drawn = true
            return true
        }
        if due {
            console.err(
                "\r" + Self.line(label: label, completed: completed, total: total, transferred: completed - offset, elapsed: elapsed) + "\u{1B}[K")
        }
    }

    /// Clears the bar's line.
    func finish() {
        if state.withLock({ $0.drawn }) { console.err("\r\u{1B}[K") }
    }

    /// The bar's text: `transferred` bytes (this run) in `elapsed` seconds give the rate and ETA.
    static func line(label: String, completed: Int64, total: Int64?, transferred: Int64, elapsed: Double, width: Int = 20) -> String {
        let rate = elapsed > 0 ? Double(transferred) / elapsed : 0
        guard let total, total > 0 else {
            return "\(label)  \(TextFormat.bytes(completed))  \(TextFormat.rate(rate))"
        }
        let fraction = min(1, Double(completed) / Double(total))
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "·", count: width - filled)
        let eta = rate > 0 ? TextFormat.duration(Double(total - completed) / rate) : "-:--"
        return
            "\(label)  [\(bar)]  \(Int(fraction * 100))%  \(TextFormat.bytes(completed))/\(TextFormat.bytes(total))  \(TextFormat.rate(rate))  ETA \(eta)"
    }
}
