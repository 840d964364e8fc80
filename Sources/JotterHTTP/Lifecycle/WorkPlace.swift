/// Runs work on threads of its own: where a route whose work may wait (a database round trip,
/// moving a file's bytes) runs instead of the connection's event loop.
///
/// ```swift
/// struct Threads: Executor {
///     let threads: StoreThreads
///     func execute(_ work: @escaping @Sendable () -> Void) { threads.run(work) }
/// }
/// ```
public protocol Executor: Sendable {
    /// Runs `work` soon, on a thread that may block; never on the calling event loop.
    func execute(_ work: @escaping @Sendable () -> Void)
}

/// Where a route's work runs, declared beside its body policy: on the connection's event loop,
/// or on an executor.
///
/// A route's work is everything of the request that is not bytes on the wire: the head phase
/// of its middleware (authentication reads credentials there), opening its body reader, and —
/// once the body is read — finishing the reader, the handler, and the rendering of its reply
/// with every middleware's `map`. On `.loop` all of it runs on the connection's event loop: work
/// that never waits (SQLite's local reads, pure computation). On `.executor` the connection
/// stops reading while it runs there and the outcome is handed back to the connection's loop
/// (the body's bytes are still read, and given to the reader, on the loop): a request without a
/// body makes one trip, from its head to its answer; one with a body two, its head and its end.
///
/// ```swift
/// routes.get("/notes/:id", runs: .executor(storeThreads), handler: show)
/// routes.group { group in
///     group.runs = .executor(storeThreads)   // every route registered in the group
///     …
/// }
/// ```
public struct WorkPlace: Sendable {
    /// nil: the connection's event loop.
    let executor: (any Executor)?

    /// The connection's event loop: for work that never blocks.
    public static let loop = WorkPlace(executor: nil)

    /// `executor`'s threads; the outcome is handed back to the connection's loop.
    public static func executor(_ executor: any Executor) -> WorkPlace { WorkPlace(executor: executor) }

    /// True for `.loop`.
    public var isLoop: Bool { executor == nil }
}
