import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A bounded pool of `PostgresConnection`s to one database.
///
/// At most `size` connections exist; they are opened on first need, and a caller finding all of
/// them busy waits up to `acquireTimeout` before `.poolTimeout`. A connection that broke (or
/// whose server closed it while it sat idle — see `PostgresConnection.probe()`) is dropped and
/// a new one opened on next need, so the pool comes back by itself after PostgreSQL restarts.
///
/// ```swift
/// let pool = try PostgresPool(.init(url: "postgres://jotter@db/jotter", size: 8))
/// let count: Int = try pool.transaction { try $0.query("SELECT count(*) FROM notes")[0].value(0) }
/// ```
public final class PostgresPool: Sendable {
    /// Where to connect and how many connections to keep.
    public struct Configuration: Sendable {
        /// A `postgres://` URL or libpq connection string.
        public var url: String
        /// The most connections open at once (at least 1).
        public var size: Int
        /// How long a caller waits for a free connection, in milliseconds.
        public var acquireTimeoutMilliseconds: Int
        /// How long opening one connection may take, in seconds (libpq's `connect_timeout`).
        public var connectTimeoutSeconds: Int
        /// `application_name`, shown in `pg_stat_activity`.
        public var applicationName: String

        public init(
            url: String, size: Int = 8, acquireTimeoutMilliseconds: Int = 5_000,
            connectTimeoutSeconds: Int = 5, applicationName: String = "jotter"
        ) {
            self.url = url
            self.size = max(1, size)
            self.acquireTimeoutMilliseconds = acquireTimeoutMilliseconds
            self.connectTimeoutSeconds = connectTimeoutSeconds
            self.applicationName = applicationName
        }
    }

    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var closed = false
    }

    public let configuration: Configuration
    private let slots: DispatchSemaphore
    private let state = Mutex(State())

    /// Checks the URL; connects nothing until a connection is first needed.
    public init(_ configuration: Configuration) throws {
        try PostgresConnection.validate(url: configuration.url)
        self.configuration = configuration
        slots = DispatchSemaphore(value: configuration.size)
    }

    /// Connections open now (busy or idle).
    public var openConnections: Int { state.withLock { $0.open } }

    /// Connections open and waiting in the pool.
    public var idleConnections: Int { state.withLock { $0.idle.count } }

    /// Runs `body` with a connection of its own, returned to the pool afterwards (or dropped if
    /// it broke or was left inside a transaction).
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try checkOut()
        defer { checkIn(connection) }
        return try body(connection)
    }

    /// Runs `body` in a transaction, again (up to `attempts` runs in all, with a short pause
    /// between) when it failed with a retryable error: serialization failure, deadlock, or a
    /// connection lost before `COMMIT`. `body` must be safe to run again: it may only touch
    /// the database through the connection it is given.
    public func transaction<T>(
        isolation: PostgresIsolation = .readCommitted,
        attempts: Int = 3,
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        var attempt = 1
        while true {
            do {
                return try withConnection { try $0.transaction(isolation: isolation, body) }
            } catch let error as PostgresError where error.isRetryable && attempt < attempts {
                usleep(UInt32(min(attempt, 5)) * 20_000)
                attempt += 1
            }
        }
    }

    /// Closes the idle connections and refuses new check-outs; busy ones close when returned.
    public func close() {
        let idle = state.withLock { state -> [PostgresConnection] in
            state.closed = true
            defer { state.open -= state.idle.count; state.idle = [] }
            return state.idle
        }
        _ = idle  // deinit closes each (PQfinish)
    }

    // MARK: - Check-out and check-in

    private func checkOut() throws -> PostgresConnection {
        guard slots.wait(timeout: .now() + .milliseconds(configuration.acquireTimeoutMilliseconds)) == .success else {
            throw PostgresError(
                kind: .poolTimeout, message: "all \(configuration.size) connections stayed busy for \(configuration.acquireTimeoutMilliseconds) ms")
        }
        while true {
            let taken = state.withLock { state -> (closed: Bool, connection: PostgresConnection?) in
                if state.closed { return (true, nil) }
                if let connection = state.idle.popLast() { return (false, connection) }
                state.open += 1
                return (false, nil)
            }
            if taken.closed {
                slots.signal()
                throw PostgresError(kind: .unavailable, message: "the connection pool is closed")
            }
            if let connection = taken.connection {
                if connection.probe() { return connection }
                state.withLock { $0.open -= 1 }
                continue
            }
            do {
                return try PostgresConnection(
                    url: configuration.url, applicationName: configuration.applicationName,
                    connectTimeout: configuration.connectTimeoutSeconds)
            } catch {
                state.withLock { $0.open -= 1 }
                slots.signal()
                throw error
            }
        }
    }

    private func checkIn(_ connection: PostgresConnection) {
        let keep = connection.isHealthy && !connection.isInTransaction
        state.withLock { state in
            if keep && !state.closed {
                state.idle.append(connection)
            } else {
                state.open -= 1
            }
        }
        slots.signal()
    }
}
