import Synchronization
import JotterSystem

/// One unit of work for the writer thread.
///
/// `apply` runs on the writer thread inside the batch's transaction and the job's own savepoint;
/// what it returns is called after COMMIT returned (the change is durable). If `apply` throws,
/// or the commit fails, `fail` is called instead. Exactly one of the two is called, once.
struct WriteJob: Sendable {
    let apply: @Sendable (SQLiteConnection) throws(StoreError) -> @Sendable () -> Void
    let fail: @Sendable (StoreError) -> Void
    /// A deletion: retried with the space reserve released when the disk is full.
    var freesSpace = false

    /// A job computing a value in the transaction and handing it to `completion` once durable.
    static func make<Value: Sendable>(
        _ apply: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> Value,
        freesSpace: Bool = false,
        completion: @escaping @Sendable (Result<Value, StoreError>) -> Void
    ) -> WriteJob {
        WriteJob(
            apply: { db throws(StoreError) in
                let value = try apply(db)
                return { completion(.success(value)) }
            },
            fail: { completion(.failure($0)) },
            freesSpace: freesSpace
        )
    }
}

/// The queue between submitting threads and the single writer thread.
///
/// Submitters append under a `Mutex`; the writer takes everything queued at that moment (up to
/// a batch limit) in one go, so writes arriving while a commit is being synced share the next
/// commit. The writer sleeps on a semaphore only when the queue is empty.
final class WriteQueue: Sendable {
    private struct State {
        var pending: [WriteJob] = []
        var writerSleeping = false
        var stopping = false
    }

    private let state = Mutex(State())
    private let wake = Semaphore()

    /// Queues `job`; false (and the job is not queued) once the queue is stopping.
    func enqueue(_ job: WriteJob) -> Bool {
        let (accepted, mustWake) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopping else { return (false, false) }
            state.pending.append(job)
            let mustWake = state.writerSleeping
            state.writerSleeping = false
            return (true, mustWake)
        }
        if mustWake { wake.signal() }
        return accepted
    }

    /// The next batch (at most `limit` jobs, in submission order), waiting while there is none;
    /// empty only once the queue is stopping and drained.
    func nextBatch(limit: Int) -> [WriteJob] {
        while true {
            let batch: [WriteJob]? = state.withLock { state in
                if state.pending.count > limit {
                    let batch = Array(state.pending.prefix(limit))
                    state.pending.removeFirst(limit)
                    return batch
                }
                if !state.pending.isEmpty {
                    defer { state.pending = [] }
                    return state.pending
                }
                if state.stopping { return [] }
                state.writerSleeping = true
                return nil
            }
            if let batch { return batch }
            wake.wait()
        }
    }

    /// Refuses new jobs; the writer drains what is queued, then gets an empty batch.
    func stop() {
        let mustWake = state.withLock { state in
            state.stopping = true
            defer { state.writerSleeping = false }
            return state.writerSleeping
        }
        if mustWake { wake.signal() }
    }
}
