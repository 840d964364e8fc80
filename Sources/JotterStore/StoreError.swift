/// An error from a store: SQLite or PostgreSQL failures, a database that cannot be reached, a database newer than this binary, a closed store.
///
/// A struct over a private code so cases can grow without breaking callers. Two errors are equal
/// when their codes are equal (the message is not compared), so tests and callers can match:
///
/// ```swift
/// do { _ = try SQLiteStore(dataDirectory: "/var/lib/jotter") }
/// catch let error as StoreError where error == .newerSchema { print(error.message) }
/// ```
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case sqlite(Int32)
        case newerSchema
        case notJotterDatabase
        case closed
        case invalidArgument
        case system
        case notEmpty
        case inUse
        case corrupt
        case unavailable
        case database
        case noteInTrash
    }

    private let code: Code
    /// What went wrong, in words; for SQLite failures this includes SQLite's own message.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The database was written by a newer jotter (its schema version is above what this binary knows).
    public static let newerSchema = StoreError(.newerSchema, "the database has a newer schema version")
    /// The file exists and is SQLite, but has tables and no jotter schema version.
    public static let notJotterDatabase = StoreError(.notJotterDatabase, "not a jotter database")
    /// The store was closed; no further reads or writes are accepted.
    public static let closed = StoreError(.closed, "the note store is closed")
    /// An argument the store cannot use (such as a negative limit or backlog).
    public static let invalidArgument = StoreError(.invalidArgument, "invalid argument")

    /// A backup or restore target has files in it (restore: pass `replacing` to replace them).
    public static let notEmpty = StoreError(.notEmpty, "the folder is not empty")
    /// The data folder is in use: a restore while a server runs on it, or the reverse.
    public static let inUse = StoreError(.inUse, "the data folder is in use")
    /// A backup failed its check: SQLite's `integrity_check`, or an upload file missing or of
    /// the wrong size.
    public static let corrupt = StoreError(.corrupt, "the backup is damaged")

    /// The database cannot be reached now (connection refused or lost, the server shutting
    /// down): the request may be tried again later, and the HTTP layer answers `503` with
    /// `Retry-After`. Nothing of the failed write was kept — unless its commit outcome is
    /// unknown, which the message says.
    public static let unavailable = StoreError(.unavailable, "the database is unavailable")

    /// The upload a change names is attached to a note in the trash, which keeps its
    /// attachments as they are until it is restored or removed for good: nothing changed.
    public static let noteInTrash = StoreError(.noteInTrash, "the upload's note is in the trash")

    /// `noteInTrash`, naming the note.
    static func noteInTrash(_ noteID: Int64) -> StoreError {
        StoreError(.noteInTrash, "it is attached to note \(noteID), which is in the trash: restore the note first, or delete it for good")
    }

    /// True when trying again later may succeed (`unavailable`).
    public var isTransient: Bool { code == .unavailable }

    /// The SQLite (extended) result code, when the error came from SQLite.
    public var sqliteCode: Int32? {
        if case .sqlite(let code) = code { return code }
        return nil
    }

    /// True when the disk (or quota) is full: SQLite's `SQLITE_FULL`, or the system's `ENOSPC`/`EDQUOT`.
    public var isOutOfSpace: Bool {
        switch code {
        case .sqlite(let code): code & 0xFF == 13  // SQLITE_FULL
        case .system: message.contains("No space left on device") || message.contains("Disk quota exceeded")
        default: false
        }
    }

    public var description: String { message }

    public static func == (lhs: StoreError, rhs: StoreError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    // MARK: - Constructors with details (internal)

    static func sqlite(code: Int32, message: String, context: String? = nil) -> StoreError {
        let prefix = context.map { "\($0): " } ?? ""
        return StoreError(.sqlite(code), "\(prefix)SQLite error \(code): \(message)")
    }

    public static func newerSchema(file: String, found: Int64, supported: Int64) -> StoreError {
        StoreError(
            .newerSchema,
            "\(file) has schema version \(found) but this jotter understands up to "
                + "\(supported); upgrade jotter (the database was left untouched)")
    }

    static func notJotterDatabase(file: String) -> StoreError {
        StoreError(.notJotterDatabase, "\(file) has tables but no jotter schema_version; refusing to use it")
    }

    public static func invalidArgument(_ message: String) -> StoreError {
        StoreError(.invalidArgument, message)
    }

    /// The database cannot be reached; `message` says why.
    public static func unavailable(_ message: String) -> StoreError { StoreError(.unavailable, message) }

    /// A database (not SQLite) refused a statement; `message` has its own message.
    public static func database(_ message: String) -> StoreError { StoreError(.database, message) }

    static func notEmpty(_ message: String) -> StoreError { StoreError(.notEmpty, message) }
    static func inUse(_ message: String) -> StoreError { StoreError(.inUse, message) }
    static func corrupt(_ message: String) -> StoreError { StoreError(.corrupt, message) }

    /// The operating system refused something the store needs (such as starting its writer thread).
    public static func system(_ message: String) -> StoreError {
        StoreError(.system, message)
    }
}
