#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CSQLite

/// `SQLITE_TRANSIENT` is a C macro (`(sqlite3_destructor_type)-1`) Swift cannot import: SQLite
/// copies the bound bytes before the bind call returns, so Swift's buffers may go away at once.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A value bound to a `?` parameter.
enum SQLiteValue: Sendable, Hashable {
    case integer(Int64)
    case text(String)
    case blob(Data)
    case null
}

extension SQLiteValue {
    /// `.integer`, or `.null` for nil.
    static func integer(_ value: Int64?) -> SQLiteValue { value.map { .integer($0) } ?? .null }
    /// `.text`, or `.null` for nil.
    static func text(_ value: String?) -> SQLiteValue { value.map { .text($0) } ?? .null }
}

/// A prepared statement, owned by its connection's cache and used by one thread at a time.
///
/// Get one from `SQLiteConnection.statement(_:)`; the connection's `run`/`query` helpers bind,
/// step and reset it. Columns are read while a row is current (after `step()` returned true).
final class Statement {
    let handle: OpaquePointer
    private unowned let connection: SQLiteConnection

    init(handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `values` to parameters 1…n (clearing any previous bindings).
    func bind(_ values: [SQLiteValue]) throws(StoreError) {
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .integer(let number):
                rc = sqlite3_bind_int64(handle, index, number)
            case .text(let string):
                rc = sqlite3_bind_text64(handle, index, string, UInt64(string.utf8.count), SQLITE_TRANSIENT, UInt8(SQLITE_UTF8))
            case .blob(let data):
                rc = data.withUnsafeBytes { bytes in
                    // A zero-length blob with a nil pointer would bind NULL; bind zeroblob instead.
                    guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
                    return sqlite3_bind_blob64(handle, index, base, UInt64(bytes.count), SQLITE_TRANSIENT)
                }
            case .null:
                rc = sqlite3_bind_null(handle, index)
            }
            guard rc == SQLITE_OK else { throw connection.error(rc, context: "bind parameter \(index)") }
        }
    }

    /// Advances to the next row: true when a row is current, false when the statement is done.
    func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(rc, context: "step")
        }
    }

    /// Resets the statement so it can run again and releases any read snapshot it holds.
    func reset() {
        sqlite3_reset(handle)
    }

    // MARK: - Columns (0-based)

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    func string(_ column: Int32) -> String {
        // Call text() before bytes(): the byte count is for the UTF-8 form text() produced.
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }

    /// The column's text as UTF-8 bytes, borrowed from SQLite: valid until the next `step()`,
    /// `reset()` or column read of this statement.
    func textBytes(_ column: Int32) -> UnsafeRawBufferPointer {
        // text() before bytes(), as in string(_:).
        guard let text = sqlite3_column_text(handle, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column)))
    }

    func data(_ column: Int32) -> Data {
        guard let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }
}
