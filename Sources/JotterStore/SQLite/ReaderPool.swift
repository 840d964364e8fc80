import Synchronization

/// Read-only connections handed out one per calling thread at a time.
///
/// In WAL mode a reader reads its snapshot while the writer appends to the WAL, so reads never
/// wait for writes. A caller borrows an idle connection (or a new one is opened), uses it on its
/// own thread, and gives it back; at most `maxIdle` idle connections are kept, extras are closed.
/// Each connection keeps its own prepared-statement cache, so hot queries are prepared once per
/// connection.
///
/// ```swift
/// let note = try readers.withConnection { db in try db.first(sql, [.integer(id)]) { … } }
/// ```
final class ReaderPool: Sendable {
    private struct State {
        var idle: [SQLiteConnection] = []
        var closed = false
    }

    private let path: String
    private let maxIdle: Int
    private let busyTimeoutMilliseconds: Int32
    private let state = Mutex(State())

    init(path: String, maxIdle: Int, busyTimeoutMilliseconds: Int32) {
        self.path = path
        self.maxIdle = max(1, maxIdle)
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
    }

    /// Runs `body` with a connection that no other thread uses until `body` returns.
    func withConnection<T>(_ body: (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        let connection = try borrow()
        defer { giveBack(connection) }
        return try body(connection)
    }

    /// Closes the idle connections; later borrows fail with `StoreError.closed`, connections in
    /// use are closed when they come back.
    func close() {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        for connection in idle { connection.close() }
    }

    /// How many idle connections the pool holds (for tests).
    var idleCount: Int { state.withLock { $0.idle.count } }

    private enum Borrowed {
        case idle(SQLiteConnection)
        case openNew
        case closed
    }

    private func borrow() throws(StoreError) -> SQLiteConnection {
        let borrowed: Borrowed = state.withLock { state in
            if state.closed { return .closed }
            return state.idle.popLast().map { .idle($0) } ?? .openNew
        }
        switch borrowed {
        case .idle(let connection):
            return connection
        case .closed:
            throw .closed
        case .openNew:
            return try SQLiteConnection(
                path: path, flags: SQLiteConnection.readOnly,
                busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        }
    }

    private func giveBack(_ connection: SQLiteConnection) {
        let kept = state.withLock { state in
            guard !state.closed, state.idle.count < maxIdle else { return false }
            state.idle.append(connection)
            return true
        }
        if !kept { connection.close() }
    }
}
