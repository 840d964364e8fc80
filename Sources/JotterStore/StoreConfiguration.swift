#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterBlobs

/// How `jotter serve` keeps its data: which database, where upload bytes go.
///
/// ```swift
/// var configuration = StoreConfiguration(dataDirectory: "/var/lib/jotter")
/// configuration.database = try .parse("postgres://jotter@db/jotter")   // --database, JOTTER_DATABASE_URL
/// configuration.blobStore = "s3://jotter-uploads?endpoint=http://s3:8333&region=us-east-1"
/// let store = try openDataStore(configuration)
/// ```
public struct StoreConfiguration: Sendable {
    /// The database.
    public enum Database: Sendable {
        /// `<dataDirectory>/jotter.sqlite`, uploads in `<dataDirectory>/uploads/`: one machine.
        case sqlite(SQLiteStore.Options)
        /// A PostgreSQL server (a `postgres://` URL or a libpq connection string), with at most
        /// `poolSize` connections from this process: any number of instances may share it.
        case postgres(url: String, poolSize: Int)

        /// The value of `--database`: `sqlite` (the default), or a `postgres://` or
        /// `postgresql://` URL.
        public static func parse(_ text: String, poolSize: Int = 8) throws(StoreError) -> Database {
            if text == "sqlite" { return .sqlite(SQLiteStore.Options()) }
            guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else {
                throw .invalidArgument("--database must be sqlite or a postgres:// URL, not '\(text)'")
            }
            return .postgres(url: text, poolSize: poolSize)
        }
    }

    /// The data folder: with SQLite everything; with PostgreSQL only the files of requests in
    /// flight (`tmp/`), and the uploads when no blob store is given.
    public var dataDirectory: String
    public var database: Database = .sqlite(SQLiteStore.Options())
    /// Where upload bytes go with PostgreSQL: nil for `<dataDirectory>/uploads` (one machine, or
    /// a folder every instance shares), or an `s3://BUCKET?endpoint=URL&region=R` URL (credentials
    /// from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`). SQLite keeps them in the data folder.
    public var blobStore: String?
    /// Events kept for streams that reconnect with `Last-Event-ID`.
    public var eventBacklog = 10_000
    /// Where `AWS_*` credentials are read from.
    public var environment: [String: String]

    public init(dataDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.dataDirectory = dataDirectory
        self.environment = environment
    }
}

extension StoreConfiguration {
    /// The database in words for logs and errors, without a password.
    public var databaseDescription: String {
        switch database {
        case .sqlite: return "in '\(dataDirectory)'"
        case .postgres(let url, _): return Self.withoutPassword(url)
        }
    }

    /// Where upload bytes go, in words for logs: `s3://BUCKET?endpoint=…&region=…` as given
    /// (credentials are never in it), or the data folder's `uploads/`.
    public var blobStoreDescription: String {
        blobStore ?? "'\(dataDirectory)/uploads'"
    }

    /// True for PostgreSQL.
    public var usesPostgres: Bool {
        if case .postgres = database { return true }
        return false
    }

    /// `postgres://user:secret@host/db` as `postgres://user:***@host/db`.
    static func withoutPassword(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
            let colon = url[scheme.upperBound..<at].firstIndex(of: ":")
        else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
    }
}

/// Opens the store `configuration` describes: creates and migrates the database as needed,
/// and refuses one from a newer jotter untouched.
///
/// - Throws: `StoreError` — `.invalidArgument` for a configuration that cannot be used (an
///   unreadable `s3://` URL, a blob store with SQLite), `.newerSchema`, `.unavailable` when
///   the database cannot be reached.
public func openDataStore(_ configuration: StoreConfiguration) throws(StoreError) -> any DataStore {
    switch configuration.database {
    case .sqlite(var options):
        guard configuration.blobStore == nil else {
            throw .invalidArgument("--blob-store needs --database postgres://…: with SQLite, uploads stay in the data folder")
        }
        options.eventBacklog = configuration.eventBacklog
        return try SQLiteStore(dataDirectory: configuration.dataDirectory, options: options)
    case .postgres(let url, let poolSize):
        let blobs = try openBlobStore(
            configuration.blobStore, dataDirectory: configuration.dataDirectory,
            environment: configuration.environment)
        return try PostgresStore(
            url: url, poolSize: poolSize, blobs: blobs, temporaryDirectory: configuration.dataDirectory + "/tmp",
            options: PostgresStore.Options(eventBacklog: configuration.eventBacklog))
    }
}

/// The blob store `url` names: nil for the local folder `<dataDirectory>` (keys `uploads/…`
/// become files under it), or an `s3://` URL with credentials from `environment`.
func openBlobStore(_ url: String?, dataDirectory: String, environment: [String: String]) throws(StoreError) -> any BlobStore {
    do {
        guard let url else { return try LocalBlobStore(root: dataDirectory) }
        return S3BlobStore(try S3BlobStore.Configuration(url: url, environment: environment))
    } catch {
        throw .invalidArgument("cannot use the blob store: \(error)")
    }
}
