import CLibPQ
#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection: prepared, parameterised statements with text parameters, transactions,
/// and LISTEN/NOTIFY. Not for two threads at once (a `PostgresPool` hands each connection to
/// one caller at a time).
///
/// Every statement with parameters is prepared once per connection (`PQprepare`) and then run
/// with `PQexecPrepared`; values never become SQL text. A broken connection (server restarted,
/// backend terminated) reports `.connectionLost` and stays broken: `isHealthy` turns false and
/// the pool replaces it.
///
/// `@unchecked Sendable`: it moves between threads through the pool, which gives it to one
/// caller at a time; nothing in it is touched concurrently.
public final class PostgresConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private var prepared: [String: String] = [:]
    private var transactionDepth = 0

    /// How long a session may wait or sit before PostgreSQL or the network gives up on it, so
    /// that an instance that dies or stalls — its process killed, its machine gone, its thread
    /// stopped inside a transaction — cannot hold a lock the other instances wait for.
    public struct SessionLimits: Sendable, Equatable {
        /// TCP keepalive probes, both ways: libpq's (`keepalives_idle`, `keepalives_interval`,
        /// `keepalives_count`) find a server that vanished, the server's (`tcp_keepalives_*`)
        /// end the session of a client that vanished, releasing its locks — in about
        /// `idle + interval × count` seconds.
        public var keepaliveIdleSeconds: Int
        public var keepaliveIntervalSeconds: Int
        public var keepaliveCount: Int
        /// `idle_in_transaction_session_timeout`: the server ends a session that sits in an
        /// open transaction this long between statements (Jotter's never do: a transaction's
        /// statements follow each other with no other round trip between them).
        public var idleInTransactionMilliseconds: Int
        /// `lock_timeout`: a statement waiting longer for a lock fails (`.lockTimeout`, a `503`)
        /// instead of waiting for ever.
        public var lockTimeoutMilliseconds: Int

        public init(
            keepaliveIdleSeconds: Int = 10, keepaliveIntervalSeconds: Int = 5, keepaliveCount: Int = 3,
            idleInTransactionMilliseconds: Int = 10_000, lockTimeoutMilliseconds: Int = 10_000
        ) {
            self.keepaliveIdleSeconds = keepaliveIdleSeconds
            self.keepaliveIntervalSeconds = keepaliveIntervalSeconds
            self.keepaliveCount = keepaliveCount
            self.idleInTransactionMilliseconds = idleInTransactionMilliseconds
            self.lockTimeoutMilliseconds = lockTimeoutMilliseconds
        }

        /// The libpq keywords and values that set them, before the URL's: a URL that names
        /// one of them (or `options`) wins.
        var parameters: [(String, String)] {
            let settings = [
                ("tcp_keepalives_idle", String(keepaliveIdleSeconds)), ("tcp_keepalives_interval", String(keepaliveIntervalSeconds)),
                ("tcp_keepalives_count", String(keepaliveCount)),
                ("idle_in_transaction_session_timeout", String(idleInTransactionMilliseconds)),
                ("lock_timeout", String(lockTimeoutMilliseconds)),
            ]
            return [
                ("keepalives", "1"), ("keepalives_idle", String(keepaliveIdleSeconds)),
                ("keepalives_interval", String(keepaliveIntervalSeconds)), ("keepalives_count", String(keepaliveCount)),
                ("options", settings.map { "-c \($0.0)=\($0.1)" }.joined(separator: " ")),
            ]
        }
    }

    /// Opens a connection from a `postgres://` / `postgresql://` URL or a libpq key=value
    /// connection string. `connectTimeout` bounds the connection attempt (whole seconds, at
    /// least 2, as libpq rounds it); `limits` are the session's keepalives and timeouts (the
    /// URL's own settings of them win).
    public init(url: String, applicationName: String = "jotter", connectTimeout: Int = 5, limits: SessionLimits = SessionLimits()) throws {
        try PostgresConnection.validate(url: url)
        // libpq reads the keywords in order, a later one overriding an earlier: the limits
        // first, then the URL (expanded from dbname), then what Jotter always sets.
        let keywords = limits.parameters.map(\.0) + ["dbname", "application_name", "connect_timeout", "client_encoding"]
        let values = limits.parameters.map(\.1) + [url, applicationName, String(max(2, connectTimeout)), "UTF8"]
        let connection: OpaquePointer? = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in
                // Both lists end with NULL; expand_dbname = 1: the dbname value is read as a URL
                // or connection string.
                PQconnectdbParams(keywordPointers + [nil], valuePointers + [nil], 1)
            }
        }
        guard let connection else { throw PostgresError(kind: .connectionFailed, message: "out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(kind: .connectionFailed, message: message)
        }
        handle = connection
        // Notices (e.g. "relation already exists, skipping") go nowhere instead of stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// Checks that libpq can read `url` as connection options, without connecting.
    public static func validate(url: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            let message = error.map { Self.message($0) } ?? "not a connection URL"
            if let error { PQfreemem(error) }
            throw PostgresError(kind: .invalidURL, message: message)
        }
        PQconninfoFree(options)
    }

    /// False once the connection has broken; a broken connection never recovers (open a new one).
    public var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Without waiting, reads whatever the server sent while the connection sat idle, and says
    /// whether it is still usable: a terminated backend or a restarted server has closed the
    /// socket, which this notices without a round trip. Notifications that arrived are kept
    /// for `notifications(timeoutMilliseconds:)`.
    public func probe() -> Bool {
        guard isHealthy else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { return false }
        // A terminated backend sends its FATAL message, then closes: the first read takes the
        // message, a later one meets the end of the stream and marks the connection bad.
        for _ in 0..<4 where poll(&descriptor, 1, 0) > 0 {
            guard PQconsumeInput(handle) == 1 else { return false }
        }
        return isHealthy
    }

    /// True between `BEGIN` and `COMMIT`/`ROLLBACK` (including a failed transaction).
    public var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// The server's process id for this connection (what `pg_terminate_backend` takes).
    public var backendPID: Int { Int(PQbackendPID(handle)) }

    /// The server's version as an integer, e.g. 150018 for 15.18.
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// Runs one statement with `$1…$n` parameters (nil is NULL) and returns its rows.
    /// The statement is prepared on this connection the first time it is seen.
    @discardableResult
    public func query(_ sql: String, _ parameters: [(any PostgresEncodable)?] = []) throws -> PostgresResult {
        let name = try preparedName(for: sql)
        // Values with a binary form (`bytea`) go as bytes; the others as text.
        let binaries = parameters.map { $0?.postgresBinary }
        let texts = parameters.enumerated().map { binaries[$0.offset] == nil ? $0.element?.postgresText : nil }
        // libpq takes C strings: a NUL would cut the value short without a word. Refuse it.
        if let index = texts.firstIndex(where: { $0?.utf8.contains(0) == true }) {
            throw PostgresError(kind: .other, message: "parameter $\(index + 1) holds a NUL character, which PostgreSQL text cannot store")
        }
        guard binaries.contains(where: { $0 != nil }) else {
            let result = withOptionalCStrings(texts) { pointers in
                PQexecPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
            }
            return try check(result)
        }
        let lengths = binaries.map { Int32($0?.count ?? 0) }
        let formats = binaries.map { Int32($0 == nil ? 0 : 1) }
        let copies: [UnsafeMutableRawPointer?] = zip(texts, binaries).map { text, binary in
            if let binary {
                let copy = UnsafeMutableRawPointer.allocate(byteCount: max(binary.count, 1), alignment: 1)
                binary.withUnsafeBytes { if let base = $0.baseAddress { copy.copyMemory(from: base, byteCount: $0.count) } }
                return copy
            }
            return text.map { UnsafeMutableRawPointer(strdup($0)!) }
        }
        defer { for (copy, binary) in zip(copies, binaries) { if binary != nil { copy?.deallocate() } else { free(copy) } } }
        let pointers = copies.map { $0.map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) } }
        let result = PQexecPrepared(handle, name, Int32(pointers.count), pointers, lengths, formats, 0)
        return try check(result)
    }

    /// Runs SQL with no parameters through the simple-query protocol: several statements
    /// separated by `;` are allowed (migrations, `SET`, `LISTEN`). Nothing is prepared.
    @discardableResult
    public func execute(_ sql: String) throws -> PostgresResult {
        try check(PQexec(handle, sql))
    }

    /// Runs `body` in a transaction: `BEGIN` (at `isolation`), then `COMMIT` when it returns or
    /// `ROLLBACK` when it throws. A connection lost during `COMMIT` is `.commitOutcomeUnknown`.
    /// Nested calls run inside the outer transaction (no savepoints).
    ///
    /// `settings` are `SET LOCAL name TO 'value'` for this transaction only, sent with `BEGIN`
    /// in the same round trip (e.g. `[("synchronous_commit", "on")]`). Names are SQL text:
    /// constants of the caller's, never input.
    public func transaction<T>(
        isolation: PostgresIsolation = .readCommitted,
        settings: [(name: String, value: String)] = [],
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        if transactionDepth > 0 {
            transactionDepth += 1
            defer { transactionDepth -= 1 }
            return try body(self)
        }
        let locals = settings.map { "; SET LOCAL \($0.name) TO '\($0.value.replacing("'", with: "''"))'" }.joined()
        try execute("BEGIN ISOLATION LEVEL \(isolation.rawValue)" + locals)
        transactionDepth = 1
        defer { transactionDepth = 0 }
        let value: T
        do {
            value = try body(self)
        } catch {
            if isHealthy { _ = try? execute("ROLLBACK") }
            throw error
        }
        do {
            try execute("COMMIT")
        } catch let error as PostgresError where error.kind == .connectionLost {
            throw PostgresError(
                kind: .commitOutcomeUnknown, sqlState: error.sqlState,
                message: "connection lost during COMMIT: \(error.message)")
        }
        return value
    }

    /// Waits up to `timeout` milliseconds for a notification on a channel this connection
    /// LISTENs to (`execute("LISTEN name")`), returning those that arrived (empty on timeout).
    public func notifications(timeoutMilliseconds timeout: Int32) throws -> [PostgresNotification] {
        var received = drainNotifications()
        if !received.isEmpty { return received }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { throw lostError() }
        let ready = poll(&descriptor, 1, timeout)
        if ready > 0 {
            guard PQconsumeInput(handle) == 1 else { throw lostError() }
            received = drainNotifications()
        }
        return received
    }

    // MARK: - Internals

    private func drainNotifications() -> [PostgresNotification] {
        var received: [PostgresNotification] = []
        while let notice = PQnotifies(handle) {
            received.append(
                PostgresNotification(
                    channel: String(cString: notice.pointee.relname),
                    payload: String(cString: notice.pointee.extra),
                    senderPID: Int(notice.pointee.be_pid)))
            PQfreemem(notice)
        }
        return received
    }

    private func preparedName(for sql: String) throws -> String {
        if let name = prepared[sql] { return name }
        let name = "jotter_\(prepared.count + 1)"
        try check(PQprepare(handle, name, sql, 0, nil))
        prepared[sql] = name
        return name
    }

    @discardableResult
    private func check(_ result: OpaquePointer?) throws -> PostgresResult {
        guard let result else { throw lostOrFailed(nil) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresResult(handle: result)
        default:
            let error = lostOrFailed(result)
            PQclear(result)
            throw error
        }
    }

    private func lostOrFailed(_ result: OpaquePointer?) -> PostgresError {
        let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
        let message =
            result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "M"))) }.map { String(cString: $0) }
            ?? Self.message(PQerrorMessage(handle))
        if !isHealthy {
            return PostgresError(kind: .connectionLost, sqlState: state, message: message)
        }
        return PostgresError(sqlState: state, message: message)
    }

    private func lostError() -> PostgresError {
        PostgresError(kind: .connectionLost, message: Self.message(PQerrorMessage(handle)))
    }

    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        var message = String(cString: text)
        while message.last?.isNewline == true { message.removeLast() }
        return message.isEmpty ? "unknown error" : message
    }
}

/// A transaction's isolation level.
public enum PostgresIsolation: String, Sendable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}

/// A NOTIFY received on a LISTENed channel.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    public let senderPID: Int
}

/// Calls `body` with C copies of `strings` (no NULL after the last) that live for the call.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    withOptionalCStrings(strings.map { Optional($0) }, body)
}

/// Like `withCStrings`, nil entries passed as NULL pointers (NULL parameters).
private func withOptionalCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0)! } }
    defer { copies.forEach { free($0) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}
