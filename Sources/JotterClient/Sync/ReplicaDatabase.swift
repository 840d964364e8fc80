import Foundation
import CSQLite

/// A value bound to, or read from, a SQLite statement.
enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    var real: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }
    var text: String? { if case .text(let value) = self { value } else { nil } }
}

/// The sync engine's SQLite file, through the system's libsqlite3: one connection, used by one
/// actor (`NotesSyncEngine`) at a time. WAL with `synchronous=FULL`: a committed transaction
/// survives the process being killed, and the power going, at any point.
final class ReplicaDatabase {
    private let handle: OpaquePointer
    let path: String

    /// SQLite's `SQLITE_TRANSIENT`: it copies what is bound (a macro Swift can't import).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(path: String) throws(JotterClientError) {
        self.path = path
        var db: OpaquePointer?
        let status = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw .localFile("cannot open the sync database \(path): \(message)")
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
        try execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON")
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    private func failure(_ what: String) -> JotterClientError {
        .localFile("the sync database \(path): \(what): \(String(cString: sqlite3_errmsg(handle)))")
    }

    /// Runs statements with no parameters and no rows (the schema, pragmas).
    func execute(_ sql: String) throws(JotterClientError) {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql.prefix(60).description) }
    }

    /// Runs one statement with `values` bound to its `?`s; its rows, each a list of columns.
    @discardableResult
    func rows(_ sql: String, _ values: [SQLValue] = []) throws(JotterClientError) -> [[SQLValue]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw failure("prepare") }
        defer { sqlite3_finalize(statement) }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .null: sqlite3_bind_null(statement, index)
            case .integer(let number): sqlite3_bind_int64(statement, index, number)
            case .real(let number): sqlite3_bind_double(statement, index, number)
            case .text(let text):
                // The UTF-8 byte count, not -1: with -1 SQLite stops at the first U+0000, and a
                // note with a NUL would be cut there (and the cut text pushed).
                var utf8 = text.utf8CString
                utf8.removeLast()  // its terminating NUL
                utf8.withUnsafeBufferPointer { bytes in
                    _ = sqlite3_bind_text(statement, index, bytes.baseAddress, Int32(bytes.count), Self.transient)
                }
            }
        }
        var result: [[SQLValue]] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw failure("step") }
            result.append(
                (0..<sqlite3_column_count(statement)).map { column in
                    switch sqlite3_column_type(statement, column) {
                    case SQLITE_INTEGER: .integer(sqlite3_column_int64(statement, column))
                    case SQLITE_FLOAT: .real(sqlite3_column_double(statement, column))
                    case SQLITE_NULL: .null
                    default: .text(Self.text(statement, column))
                    }
                })
        }
        return result
    }

    /// A text column, all of its `sqlite3_column_bytes` (`String(cString:)` would stop at a NUL).
    private static func text(_ statement: OpaquePointer, _ column: Int32) -> String {
        guard let start = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }

    /// The first column of the first row, if any.
    func scalar(_ sql: String, _ values: [SQLValue] = []) throws(JotterClientError) -> SQLValue? {
        try rows(sql, values).first?.first
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction: all of it is committed, or none.
    func transaction<T>(_ body: () throws(JotterClientError) -> T) throws(JotterClientError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}
