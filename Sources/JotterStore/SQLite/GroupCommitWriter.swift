#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import JotterSystem

/// The one writer: a plain thread owning the read-write connection, committing writes in groups.
///
/// Each turn it takes every job queued at that moment (up to `maxBatch`), runs them in one
/// `BEGIN IMMEDIATE … COMMIT`, each inside its own SAVEPOINT so one failing job is rolled back
/// alone (a job alone in its batch needs none: rolling back the transaction undoes it), then
/// the statements the jobs deferred to the end of the transaction (the full-text index:
/// `FullTextIndex`), and only after COMMIT returns — durable under `synchronous=FULL` —
/// acknowledges them. One fsync thus covers every write that arrived while the previous one
/// was syncing.
///
/// ```swift
/// let writer = try GroupCommitWriter(connection: db, maxBatch: 256)
/// writer.submit(.make({ db throws(StoreError) in try db.run(sql, values) }, completion: { print($0) }))
/// writer.stop()
/// ```
final class GroupCommitWriter: Sendable {
    private let queue = WriteQueue()
    private let counters = WriterCounters()
    private let thread = Mutex<SystemThread?>(nil)

    /// Starts the writer thread; `connection` now belongs to it (the caller must not touch it).
    init(connection: SQLiteConnection, maxBatch: Int, reserve: sending SpaceReserve? = nil) throws(StoreError) {
        let loop = WriterLoop(db: connection, queue: queue, maxBatch: max(1, maxBatch), counters: counters, reserve: reserve)
        do {
            let started = try SystemThread.start { loop.run() }
            thread.withLock { $0 = started }
        } catch {
            throw .system("could not start the SQLite writer thread (\(error))")
        }
    }

    /// Queues a job; if the writer is stopped, fails it at once with `StoreError.closed`.
    func submit(_ job: WriteJob) {
        if !queue.enqueue(job) { job.fail(.closed) }
    }

    /// Commits and writes so far.
    var statistics: WriteStatistics {
        WriteStatistics(
            commits: counters.commits.load(ordering: .relaxed),
            writes: counters.writes.load(ordering: .relaxed))
    }

    /// Finishes the queued jobs, then ends the thread, which closes the connection. Idempotent;
    /// from the writer thread itself (a completion) it does not wait.
    func stop() {
        queue.stop()
        thread.withLock { thread in
            defer { thread = nil }; return thread
        }?.join()
    }

    deinit { stop() }
}

private final class WriterCounters: Sendable {
    let commits = Atomic<Int>(0)
    let writes = Atomic<Int>(0)
}

/// The writer thread's side: the connection and the batch loop. Only ever used on that thread
/// (handed over to `SystemThread.start`, never touched by the creator again).
private final class WriterLoop {
    private enum Outcome {
        case applied(@Sendable () -> Void)
        case failed(StoreError)
    }

    private let db: SQLiteConnection
    private let queue: WriteQueue
    private let maxBatch: Int
    private let counters: WriterCounters
    private let reserve: SpaceReserve?

    init(db: SQLiteConnection, queue: WriteQueue, maxBatch: Int, counters: WriterCounters, reserve: SpaceReserve?) {
        self.db = db
        self.queue = queue
        self.maxBatch = maxBatch
        self.counters = counters
        self.reserve = reserve
    }

    func run() {
        while true {
            let batch = queue.nextBatch(limit: maxBatch)
            if batch.isEmpty { break }  // stopping and drained
            commit(batch)
        }
        db.close()
    }

    /// One transaction for the whole batch; acknowledgements only after COMMIT returned. When
    /// the disk is full, the space reserve is released and the deletions are tried again alone.
    private func commit(_ batch: [WriteJob], retrying: Bool = false) {
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(batch.count)
        do {
            try db.run("BEGIN IMMEDIATE")
            if batch.count == 1 {
                outcomes.append(.applied(try batch[0].apply(db)))
            } else {
                for job in batch { outcomes.append(try applyInSavepoint(job)) }
            }
            try db.runDeferred()
            try db.run("COMMIT")
            db.endDeferred()
        } catch {
            db.endDeferred()
            if !db.isAutocommit { try? db.run("ROLLBACK") }
            if !retrying, error.isOutOfSpace, batch.contains(where: \.freesSpace) {
                // The writes that need space took the deletions down with them: try those again
                // alone, with the reserve's room.
                _ = reserve?.release()
                for job in batch where !job.freesSpace { job.fail(error) }
                commit(batch.filter(\.freesSpace), retrying: true)
                return
            }
            for job in batch { job.fail(error) }
            return
        }
        reserve?.restoreIfRoom()
        counters.commits.add(1, ordering: .relaxed)
        counters.writes.add(batch.count, ordering: .relaxed)
        for (job, outcome) in zip(batch, outcomes) {
            switch outcome {
            case .applied(let acknowledge): acknowledge()
            case .failed(let error): job.fail(error)
            }
        }
    }

    /// Applies one job in its own savepoint: its failure undoes only its own changes. Throws
    /// only when SQLite abandoned the whole transaction (disk full, I/O error).
    private func applyInSavepoint(_ job: WriteJob) throws(StoreError) -> Outcome {
        try db.run("SAVEPOINT job")
        let deferred = db.deferredMark
        do {
            let acknowledge = try job.apply(db)
            try db.run("RELEASE job")
            return .applied(acknowledge)
        } catch {
            if db.isAutocommit { throw error }
            try db.run("ROLLBACK TO job")
            db.rollBackDeferred(to: deferred)
            try db.run("RELEASE job")
            return .failed(error)
        }
    }
}
