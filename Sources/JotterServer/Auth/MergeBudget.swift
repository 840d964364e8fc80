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
/// this process's memory: each instance budgets the merges it runs. Every edit sent with a
/// `Base-Version` (any of them may be merged: the note can move on before it is written) takes
/// the most one merge can cost (the step cap) before it is queued — refused when the bucket is
/// spent, with `429`, `Retry-After` and problem `/problems/merge-budget-spent`, before any merge
/// work and with nothing stored — and once the write is done what the merge did not use is given
/// back: a merge costs its `NoteMerge.work` (steps, or CPU time if more), one that ran past the
/// cap (`409 merge-too-large`) the cap, an answer with no merge nothing, and a write that failed
/// (its merge may have run before the failure) the cap. Taking the cap first bounds the merges
/// one user has running at once (`capacity / cap` and one more) as well as their rate.
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

    /// Settles `owner`'s budget once the write `reserve` paid for is done: gives back what its
    /// merge did not use (`outcome`; nil: nothing was written, a refused key) — all of it for an
    /// answer that merged nothing, none for a merge past its bounds. A write that failed is not
    /// settled: its merge may have run before the failure, and the reservation stays spent.
    func settle(_ owner: Owner, after outcome: NoteWriteOutcome?) {
        let work: Double
        switch outcome {
        case .done(let change): work = min(mostPerMerge, Double(max(0, change.merge?.work ?? 0)))
        case .cannotMerge: work = mostPerMerge
        default: work = 0
        }
        guard work < mostPerMerge else { return }
        _ = try? counters.take([Self.key(owner)], capacity: capacity, interval: interval, cost: work - mostPerMerge)
    }
}
