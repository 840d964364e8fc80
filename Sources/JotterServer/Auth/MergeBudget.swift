import JotterHTTP
import JotterStore

/// Each user's budget of merge work: how much of the merging a write made from an older version
/// asks for (`Base-Version`) one user may have done, counted in the merge's own steps
/// (`TextMerge.counted`: tokens compared, counted or copied — deterministic, whatever the
/// machine). On SQLite every merge runs in the one writer thread, where a merge that reaches
/// the step cap holds every other user's writes for about half a second; refused with nothing
/// stored, it could be sent again at once. The budget bounds what one user takes of it.
///
/// A token bucket of `LimitCounters` (the buckets the request limits use), one per owner, in
/// this process's memory: each instance budgets the merges it runs. Before a merge is started
/// the most one merge can cost (the step cap) is taken from it — refused when it is spent, with
/// `429`, `Retry-After` and problem `/problems/merge-budget-spent`, before any merge work and
/// with nothing stored — and once the write is done what the merge did not use is given back:
/// a merge that ran past the cap (`409 merge-too-large`) costs the cap, one that never ran
/// (another answer) nothing. Taking the cap first bounds the merges one user has running at
/// once (`capacity / cap` and one more) as well as their rate.
final class MergeBudget: Sendable {
    /// Steps a bucket holds at most, and gains each second.
    let capacity: Double
    let perSecond: Double
    /// The most one merge can cost: the cap of `TextMerge.Limits`.
    let mostPerMerge: Double
    private let counters: any LimitCounters

    init(
        capacity: Int, perSecond: Int, mostPerMerge: Int = TextMerge.Limits.default.maxWork,
        counters: any LimitCounters = MemoryLimitCounters()
    ) {
        self.capacity = Double(max(1, capacity))
        self.perSecond = Double(max(1, perSecond))
        self.mostPerMerge = Double(mostPerMerge)
        self.counters = counters
    }

    static let problemType = "/problems/merge-budget-spent"

    private var interval: Double { 1 / perSecond }

    private static func key(_ owner: Owner) -> String { "merge " + String(owner.id) }

    /// Takes the most one merge can cost from `owner`'s budget, or throws `429` (taking nothing)
    /// when it is spent.
    func reserve(_ owner: Owner) throws {
        let taken = try counters.take([Self.key(owner)], capacity: capacity, interval: interval, cost: mostPerMerge)
        guard taken.allowed else {
            let seconds = max(1, Int(taken.wait(interval: interval).rounded(.up)))
            var error = HTTPError(
                HTTPStatus(429),
                detail: "your edits made from older versions have taken all the merge work the server gives one user for now: "
                    + "nothing was changed; send this edit again in \(seconds) s and it is merged",
                headers: HTTPHeaders([("Retry-After", String(seconds))]))
            error.type = Self.problemType
            throw error
        }
    }

    /// Settles `owner`'s budget with what the merge of a write cost (`outcome`; nil for a write
    /// that failed or whose key was refused: no merge ran): gives back what was `reserved` and
    /// not used — all of it when no merge ran, none when it ran past its bounds — or, when
    /// nothing was reserved (the note's version moved on after it was read, so the store merged
    /// a write sent as a plain update), takes what it cost.
    func settle(_ owner: Owner, reserved: Bool, after outcome: NoteWriteOutcome?) {
        let work: Double
        switch outcome {
        case .done(let change): work = min(mostPerMerge, Double(max(0, change.merge?.work ?? 0)))
        case .cannotMerge: work = mostPerMerge
        default: work = 0
        }
        let cost = work - (reserved ? mostPerMerge : 0)
        guard cost != 0 else { return }
        _ = try? counters.take([Self.key(owner)], capacity: capacity, interval: interval, cost: cost)
    }
}
