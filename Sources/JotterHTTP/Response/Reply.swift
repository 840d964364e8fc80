/// What a handler (and every middleware around it) answers: a response now, or one that is
/// known later — after a group commit, say.
///
/// A later reply holds no thread: the engine suspends the connection and calls `start`, whose
/// work finishes on any thread by calling `done` with a closure that renders the response.
/// That closure, and every `map` or `recover` middleware added, run on the engine thread once
/// the connection resumes, so the thread that did the work (a database writer) only hands over
/// its result.
///
/// ```swift
/// return Reply.later { done in
///     store.submit(write) { result in done { try render(result) } }
/// }
/// ```
public struct Reply: Sendable {
    enum Storage: Sendable {
        case now(Response)
        case later(Later)
    }

    private(set) var storage: Storage

    /// A response that is complete now.
    public static func now(_ response: Response) -> Reply { Reply(storage: .now(response)) }

    /// A response known later. `start` runs once, on the engine thread, after the connection is
    /// suspended; it must call `done` exactly once, from any thread, with the closure that
    /// renders the answer (or throws, rendered like any thrown error).
    public static func later(
        _ start: @escaping @Sendable (_ done: @escaping @Sendable (_ render: @escaping @Sendable () throws -> Response) -> Void) -> Void
    ) -> Reply {
        Reply(storage: .later(Later(start: start, finish: { try $0.get() })))
    }

    /// The response changed by `transform` — now, or on the engine thread once it is known.
    public func map(_ transform: @escaping @Sendable (Response) throws -> Response) rethrows -> Reply {
        switch storage {
        case .now(let response): return .now(try transform(response))
        case .later(let later):
            let finish = later.finish
            return Reply(storage: .later(Later(start: later.start, finish: { try transform(try finish($0)) })))
        }
    }

    /// The reply `transform` makes of this one's outcome, on `executor` (a thread that may block:
    /// a database write that must follow the answer before it is sent). The reply becomes
    /// `later` whatever this one is. A thrown error is rendered like any other.
    ///
    /// ```swift
    /// return reply.then(on: storeThreads) { outcome in
    ///     if case .success(let response) = outcome { try keep(response) }
    ///     return .now(try outcome.get())
    /// }
    /// ```
    public func then(
        on executor: any Executor,
        _ transform: @escaping @Sendable (Result<Response, any Error>) throws -> Reply
    ) -> Reply {
        let start: @Sendable (@escaping @Sendable (Result<Response, any Error>) -> Void) -> Void
        switch storage {
        case .now(let response): start = { $0(.success(response)) }
        case .later(let later): start = { outcome in later.start { render in outcome(Result { try later.complete(render) }) } }
        }
        return .later { done in
            start { outcome in
                executor.execute {
                    let reply: Reply
                    do { reply = try transform(outcome) } catch { return done { throw error } }
                    switch reply.storage {
                    case .now(let response): done { response }
                    case .later(let next): next.start { render in done { try next.complete(render) } }
                    }
                }
            }
        }
    }

    /// A later reply whose failure is turned into a response by `handler`. (A reply that is
    /// `now` has no failure: errors before it were thrown.)
    public func recover(_ handler: @escaping @Sendable (any Error) throws -> Response) -> Reply {
        guard case .later(let later) = storage else { return self }
        let finish = later.finish
        return Reply(
            storage: .later(
                Later(
                    start: later.start,
                    finish: { result in
                        do { return try finish(result) } catch { return try handler(error) }
                    })))
    }

    /// The response, when it is known now.
    public var response: Response? {
        if case .now(let response) = storage { return response }
        return nil
    }

    /// Changes the response in place when it is known now (its fields stay uniquely owned, so
    /// adding one copies nothing); false for a later reply.
    mutating func updateNow(_ change: (inout Response) -> Void) -> Bool {
        guard case .now(var response) = storage else { return false }
        storage = .now(Response())  // drop the reply's reference before changing the response
        change(&response)
        storage = .now(response)
        return true
    }

    /// The status of a response known now, read without copying it.
    var nowStatus: Int? {
        if case .now(let response) = storage { return response.status.code }
        return nil
    }
}

/// The parts of a later reply: the work, and what turns its outcome into the final response.
package struct Later: Sendable {
    package let start: @Sendable (_ done: @escaping @Sendable (_ render: @escaping @Sendable () throws -> Response) -> Void) -> Void
    /// The render closure's outcome through every middleware's `map`/`recover`.
    let finish: @Sendable (Result<Response, any Error>) throws -> Response

    /// Runs `render` and the middleware's transforms; the final response, or the error that
    /// escaped all of them.
    func complete(_ render: () throws -> Response) throws -> Response {
        try finish(Result { try render() })
    }
}
