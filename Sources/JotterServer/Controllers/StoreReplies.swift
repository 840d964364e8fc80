import JotterHTTP
import JotterStore

/// Where a handler's store work runs: on the request's engine thread when the store's reads are
/// local and short (SQLite), on one of the store's threads when they may wait for the network
/// (PostgreSQL) — so no engine thread ever waits for a database round trip.
extension DataStore {
    /// The reply of `work`, which reads the store (and may start a write).
    func reading(_ work: @escaping @Sendable () throws -> Reply) throws -> Reply {
        readsWait ? Reply.elsewhere(dispatch, work) : try work()
    }

    /// Hands a later reply its answer once a write's completion has it: `make` (which may read
    /// the store, to render attachments) runs on the engine thread with local reads, on a store
    /// thread otherwise — never on the writer, which only hands the outcome over.
    func answer(_ done: @escaping @Sendable (_ render: @escaping @Sendable () throws -> Response) -> Void,
                _ make: @escaping @Sendable () throws -> Response) {
        guard readsWait else { return done(make) }
        dispatch {
            let response = Result { try make() }
            done { try response.get() }
        }
    }
}
