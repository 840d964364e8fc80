/// A failure talking to PostgreSQL, classified so that callers can tell what to do next: run the
/// transaction again (`isRetryable`), answer `503` and let the client come back
/// (`isTransient`), or report a defect or a constraint (everything else).
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, as far as a caller's next step is concerned.
    public enum Kind: String, Sendable {
        /// The URL (or connection string) is not one libpq can read.
        case invalidURL
        /// No connection could be made (server down, refused, wrong password, no such database).
        case connectionFailed
        /// The connection broke while a statement ran (server restarted, backend terminated,
        /// network reset). The transaction in progress was rolled back by the server.
        case connectionLost
        /// The connection broke while `COMMIT` was in flight: the transaction may or may not have
        /// committed. Not safe to retry blindly; the caller must find out.
        case commitOutcomeUnknown
        /// SQLSTATE 40001: a serializable or repeatable-read transaction lost a race. Run it again.
        case serializationFailure
        /// SQLSTATE 40P01: PostgreSQL broke a deadlock by aborting this transaction. Run it again.
        case deadlock
        /// SQLSTATE 23505.
        case uniqueViolation
        /// SQLSTATE 23503.
        case foreignKeyViolation
        /// SQLSTATE 57014: `statement_timeout` or a cancel request.
        case queryCanceled
        /// SQLSTATE 55P03: a lock was not granted within `lock_timeout` (someone holds it).
        case lockTimeout
        /// SQLSTATE 57P03 and the like: the server is starting up or shutting down.
        case unavailable
        /// Every pooled connection stayed busy for the pool's acquire timeout.
        case poolTimeout
        /// A column's text could not be read as the Swift type asked for, or no such column.
        case decoding
        /// Any other error the server or libpq reported (syntax, undefined table, …).
        case other
    }

    public let kind: Kind
    /// The five-character SQLSTATE when the server sent one (`"40001"`), else nil.
    public let sqlState: String?
    /// The primary message, from the server or libpq, without a trailing newline.
    public let message: String

    public init(kind: Kind, sqlState: String? = nil, message: String) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
    }

    /// Builds the error for a SQLSTATE reported by the server on a live connection.
    init(sqlState: String?, message: String) {
        self.init(kind: Self.kind(forSQLState: sqlState), sqlState: sqlState, message: message)
    }

    /// The kind for a SQLSTATE: classes 08 (connection exception) and 57P (operator
    /// intervention, e.g. `57P01` admin shutdown) mean the server or the link went away.
    static func kind(forSQLState state: String?) -> Kind {
        guard let state else { return .other }
        switch state {
        case "40001": return .serializationFailure
        case "40P01": return .deadlock
        case "23505": return .uniqueViolation
        case "23503": return .foreignKeyViolation
        case "57014": return .queryCanceled
        case "55P03": return .lockTimeout
        case "57P01", "57P02": return .connectionLost
        case "57P03": return .unavailable
        default: return state.hasPrefix("08") ? .connectionLost : .other
        }
    }

    /// True when running the whole transaction again is safe and may well succeed: the server
    /// rolled it back (serialization failure, deadlock, connection lost before `COMMIT`), or it
    /// never started (no connection).
    public var isRetryable: Bool {
        switch kind {
        case .serializationFailure, .deadlock, .connectionLost, .connectionFailed, .unavailable: return true
        default: return false
        }
    }

    /// True when the database is, for now, unreachable or overloaded rather than the request
    /// wrong: the moment for `503 Service Unavailable` with `Retry-After`.
    public var isTransient: Bool {
        switch kind {
        case .connectionFailed, .connectionLost, .commitOutcomeUnknown, .unavailable, .poolTimeout,
            .serializationFailure, .deadlock, .lockTimeout:
            return true
        default:
            return false
        }
    }

    public var description: String {
        "PostgreSQL \(kind.rawValue)\(sqlState.map { " (\($0))" } ?? ""): \(message)"
    }
}
