import JotterHTTP
import JotterStore

/// A store's threads as the executor routes run on (`WorkPlace.executor`).
struct StoreExecutor: Executor {
    let threads: StoreThreads
    func execute(_ work: @escaping @Sendable () -> Void) { threads.run(work) }
}

/// Where routes run, as the store says (`RouterBuilder.runs`, or a route's `runs:`).
extension DataStore {
    /// For routes that read the store: on the request's event loop when reads are local and
    /// short (SQLite), on the store's threads when they wait on the network (PostgreSQL) — so no
    /// engine thread ever waits for a database round trip.
    var readPlace: WorkPlace { readThreads.map { .executor(StoreExecutor(threads: $0)) } ?? .loop }

    /// For routes whose work blocks whatever the backend (moving a file's bytes into the blob
    /// store, a backup): the store's threads.
    var blockingPlace: WorkPlace { .executor(StoreExecutor(threads: threads)) }
}
