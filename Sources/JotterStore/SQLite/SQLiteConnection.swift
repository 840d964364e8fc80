internal import CSQLite

/// One SQLite connection with a statement cache, used by one thread at a time.
///
/// Opened with `SQLITE_OPEN_NOMUTEX`: SQLite does no locking of its own on it, so whoever owns
/// the connection must hand it between threads only through a lock (the reader pool's `Mutex`)
/// or a thread start (the writer). Every statement is prepared once per SQL text and reused.
///
/// ```swift
/// let db = try SQLiteConnection(path: path, flags: SQLiteConnection.readWrite)
/// try db.run("INSERT INTO t(x) VALUES (?)", [.text("hi")])
/// let xs = try db.query("SELECT x FROM t WHERE rowid > ?", [.integer(0)]) { $0.string(0) }
/// ```
///
/// `@unchecked Sendable`: the handle and the cache are only touched by the thread that currently
/// owns the connection; ownership moves only under the reader pool's `Mutex` (its lock/unlock
/// orders every use before the next owner's) or by starting the writer thread, which happens
/// after the opener's last use (`pthread_create` is a memory barrier).
final class SQLiteConnection: @unchecked Sendable {
    /// Read-write, created if missing, no SQLite mutex, extended result codes.
    static let readWrite = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
    /// Read-write, never created, no SQLite mutex, extended result codes.
    static let readWriteExisting = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
    /// Read-only, no SQLite mutex, extended result codes.
    static let readOnly = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE

    private(set) var handle: OpaquePointer?
    private var cache: [String: Statement] = [:]
    /// The same statements by where their SQL text's bytes are: the queries are fixed strings
    /// (literals and `static let`s, whose bytes never move), so this finds them with one integer
    /// hash and one comparison instead of hashing the whole text. A text whose bytes sit where
    /// another's were only misses here (the comparison) and is found by its text.
    private var byAddress: [UnsafeRawPointer: (sql: String, statement: Statement)] = [:]
    let path: String
    /// Statements held back to the end of the writer's transaction (`deferUntilCommit`), and how
    /// many of them have run in it so far.
    private var deferred: [(sql: String, values: [SQLiteValue])] = []
    private var deferredRun = 0

    /// Opens `path` with `flags` and sets a busy timeout, so lock waits retry instead of failing.
    init(path: String, flags: Int32, busyTimeoutMilliseconds: Int32 = 5_000) throws(StoreError) {
        self.path = path
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        handle = db
        guard rc == SQLITE_OK, db != nil else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            handle = nil
            throw .sqlite(code: rc, message: message, context: "open \(path)")
        }
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
    }

    deinit { close() }

    /// Finalizes every cached statement and closes the connection. Idempotent.
    func close() {
        byAddress.removeAll()
        cache.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// The cached prepared statement for `sql`, preparing it on first use.
    func statement(_ sql: String) throws(StoreError) -> Statement {
        // Only large (heap or literal) texts have an address of their own; a small string's
        // bytes are copied out for the call.
        let address = sql.utf8.count > 15 ? sql.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil : nil
        if let address, let known = byAddress[address], known.sql == sql { return known.statement }
        if let cached = cache[sql] {
            if let address { remember(address, sql, cached) }
            return cached
        }
        guard let handle else { throw .closed }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            sqlite3_finalize(stmt)
            throw error(rc, context: "prepare")
        }
        let statement = Statement(handle: stmt, connection: self)
        cache[sql] = statement
        if let address { remember(address, sql, statement) }
        return statement
    }

    /// Files a statement by its text's address; texts built afresh each time (whose addresses
    /// vary) could fill this without end, so it starts over once it outgrows the cache.
    private func remember(_ address: UnsafeRawPointer, _ sql: String, _ statement: Statement) {
        if byAddress.count >= 2 * cache.count + 64 { byAddress.removeAll(keepingCapacity: true) }
        byAddress[address] = (sql, statement)
    }

    /// Runs `sql` with `values` to completion (INSERT/UPDATE/DELETE/BEGIN/COMMIT…).
    func run(_ sql: String, _ values: [SQLiteValue] = []) throws(StoreError) {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() {}
    }

    /// Runs a query and maps each row; the statement is reset before returning.
    func query<T>(_ sql: String, _ values: [SQLiteValue] = [], row: (Statement) -> T) throws(StoreError) -> [T] {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var rows: [T] = []
        while try statement.step() { rows.append(row(statement)) }
        return rows
    }

    /// The rows of a query, mapped, up to and including the first for which `last` is true.
    func query<T>(_ sql: String, _ values: [SQLiteValue] = [], row: (Statement) -> T, last: (T) -> Bool) throws(StoreError) -> [T] {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var rows: [T] = []
        while try statement.step() {
            let value = row(statement)
            rows.append(value)
            if last(value) { break }
        }
        return rows
    }

    /// Runs a query and hands each row to `row` while it is current, until `row` returns false
    /// or the rows end; the statement is reset before returning.
    func forEachRow(_ sql: String, _ values: [SQLiteValue] = [], _ row: (Statement) throws(StoreError) -> Bool) throws(StoreError) {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() {
            guard try row(statement) else { return }
        }
    }

    /// The first row of a query, mapped, or nil when there is none.
    func first<T>(_ sql: String, _ values: [SQLiteValue] = [], row: (Statement) -> T) throws(StoreError) -> T? {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        return try statement.step() ? row(statement) : nil
    }

    /// Runs a script of one or more statements without parameters (schema, PRAGMAs). Never for
    /// anything that contains request text.
    func execute(_ script: String) throws(StoreError) {
        guard let handle else { throw .closed }
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, script, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard rc == SQLITE_OK else {
            throw .sqlite(code: rc, message: message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc)))
        }
    }

    /// Runs `body` in one read transaction, so every query in it sees the same snapshot.
    func readTransaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try run("BEGIN")
        do {
            let value = try body()
            try run("COMMIT")
            return value
        } catch {
            if !isAutocommit { try? run("ROLLBACK") }
            throw error
        }
    }

    /// Holds `sql` back until `runDeferred()`, which the writer calls at the end of each
    /// transaction, before COMMIT (the full-text index: `FullTextIndex`).
    func deferUntilCommit(_ sql: String, _ values: [SQLiteValue]) {
        deferred.append((sql, values))
    }

    /// Where the deferred statements stand: taken when a savepoint begins, for
    /// `rollBackDeferred(to:)` when it is rolled back.
    struct DeferredMark {
        fileprivate let count: Int
        fileprivate let run: Int
    }

    var deferredMark: DeferredMark { DeferredMark(count: deferred.count, run: deferredRun) }

    /// After `ROLLBACK TO` the savepoint begun at `mark`: the statements deferred since are
    /// forgotten, and those run since (earlier ones, run early by `runDeferred()`) — undone
    /// with the savepoint — are run again at the end.
    func rollBackDeferred(to mark: DeferredMark) {
        if mark.count < deferred.count { deferred.removeSubrange(mark.count...) }
        deferredRun = min(deferredRun, mark.run)
    }

    /// Forgets every deferred statement: the transaction committed or was rolled back.
    func endDeferred() {
        deferred.removeAll(keepingCapacity: true)
        deferredRun = 0
    }

    /// Runs the deferred statements not run yet, in the order they were deferred.
    func runDeferred() throws(StoreError) {
        while deferredRun < deferred.count {
            let statement = deferred[deferredRun]
            try run(statement.sql, statement.values)
            deferredRun += 1
        }
    }

    /// Turns the schema's triggers off on this connection (`SQLITE_DBCONFIG_ENABLE_TRIGGER`):
    /// whoever uses it then makes their changes itself. Other connections keep them.
    func disableTriggers() throws(StoreError) {
        guard let handle else { throw .closed }
        let rc = jotter_sqlite3_enable_triggers(handle, 0)
        guard rc == SQLITE_OK else { throw error(rc, context: "disable triggers") }
    }

    /// The rowid of the last INSERT on this connection.
    var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    /// True outside a transaction (also after SQLite rolled one back on its own after an error).
    var isAutocommit: Bool { handle.map { sqlite3_get_autocommit($0) != 0 } ?? true }

    /// A `StoreError` for result code `rc`, with this connection's current error message.
    func error(_ rc: Int32, context: String? = nil) -> StoreError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        return .sqlite(code: rc, message: message, context: context)
    }
}
