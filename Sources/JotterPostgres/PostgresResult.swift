import CLibPQ

/// The rows a statement returned (text format), owning libpq's result until it goes away.
///
/// ```swift
/// let rows = try connection.query("SELECT id, body FROM notes WHERE id = $1", [id])
/// for row in rows { let body: String = try row.value("body") }
/// ```
public final class PostgresResult: Sequence {
    let handle: OpaquePointer
    /// How many columns each row has (asked of libpq once).
    let columnCount: Int

    init(handle: OpaquePointer) {
        self.handle = handle
        columnCount = Int(PQnfields(handle))
    }

    deinit { PQclear(handle) }

    /// The number of rows.
    public var count: Int { Int(PQntuples(handle)) }

    /// Rows changed by an INSERT, UPDATE or DELETE (0 for other statements).
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    /// The column names, in order.
    public var columns: [String] {
        (0..<PQnfields(handle)).map { String(cString: PQfname(handle, $0)) }
    }

    /// The row at `index` (0-based, below `count`).
    public subscript(index: Int) -> PostgresRow {
        precondition(index >= 0 && index < count, "row \(index) of \(count)")
        return PostgresRow(result: self, index: Int32(index))
    }

    /// The first row, or nil when there is none.
    public var first: PostgresRow? { count > 0 ? self[0] : nil }

    public func makeIterator() -> AnyIterator<PostgresRow> {
        var next = 0
        return AnyIterator { [self] in
            guard next < count else { return nil }
            defer { next += 1 }
            return self[next]
        }
    }
}

/// One row of a `PostgresResult`; keeps the result alive.
public struct PostgresRow {
    let result: PostgresResult
    let index: Int32

    /// The column's text, nil when NULL.
    public func text(_ column: Int) throws(PostgresError) -> String? {
        guard column >= 0, column < Int(PQnfields(result.handle)) else {
            throw PostgresError(kind: .decoding, message: "no column \(column)")
        }
        let field = Int32(column)
        if PQgetisnull(result.handle, index, field) != 0 { return nil }
        return String(cString: PQgetvalue(result.handle, index, field))
    }

    /// Lends the column's text-format bytes to `body` (nil when NULL), valid only during the call:
    /// no String is made.
    public func withBytes<Result>(_ column: Int, _ body: (UnsafeRawBufferPointer?) throws -> Result) throws -> Result {
        let bytes = try rawBytes(column)
        return try withExtendedLifetime(result) { try body(bytes) }
    }

    /// A `bigint` (or smaller integer) column, read from its text with no String made.
    public func int64(_ column: Int) throws(PostgresError) -> Int64 {
        guard let bytes = try rawBytes(column) else {
            throw PostgresError(kind: .decoding, message: "NULL where Int64 was expected")
        }
        guard let value = withExtendedLifetime(result, { Self.decimal(bytes) }) else {
            throw PostgresError(kind: .decoding, message: "column \(column) is not an Int64")
        }
        return value
    }

    /// The column's bytes in libpq's result (which this row keeps alive), nil when NULL.
    private func rawBytes(_ column: Int) throws(PostgresError) -> UnsafeRawBufferPointer? {
        guard column >= 0, column < result.columnCount else {
            throw PostgresError(kind: .decoding, message: "no column \(column)")
        }
        let field = Int32(column)
        if PQgetisnull(result.handle, index, field) != 0 { return nil }
        return UnsafeRawBufferPointer(start: PQgetvalue(result.handle, index, field), count: Int(PQgetlength(result.handle, index, field)))
    }

    /// Optional sign, then decimal digits that fit in Int64; nil otherwise.
    static func decimal(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative || bytes.first == UInt8(ascii: "+") { index = 1 }
        guard index < bytes.count else { return nil }
        if bytes.count - index <= 18 {  // cannot overflow: no checks per digit (ids, times, versions)
            var value: Int64 = 0
            while index < bytes.count {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value &* 10 &+ Int64(digit)
                index &+= 1
            }
            return negative ? -value : value
        }
        var magnitude: UInt64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflowTimes) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt64(digit))
            guard !overflowTimes, !overflowSum else { return nil }
            magnitude = sum
            index += 1
        }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// The column at `column` (0-based) read as `T`.
    public func value<T: PostgresDecodable>(_ column: Int, as type: T.Type = T.self) throws(PostgresError) -> T {
        try T.decode(postgresText: text(column))
    }

    /// The column named `name` read as `T`.
    public func value<T: PostgresDecodable>(_ name: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        let column = Int(PQfnumber(result.handle, "\"" + name.replacing("\"", with: "\"\"") + "\""))
        guard column >= 0 else { throw PostgresError(kind: .decoding, message: "no column named \(name)") }
        return try value(column, as: type)
    }
}
