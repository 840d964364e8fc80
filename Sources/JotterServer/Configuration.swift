#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterHTTP
import JotterStore
import JotterSystem

/// Everything `jotter serve` can be told, with the defaults of the contract.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// The data folder: `jotter.sqlite`, `uploads/`, temp files (with PostgreSQL: temp files,
    /// and uploads unless `blobStore` names a bucket).
    public var dataDirectory = "./jotter-data"
    /// The database: SQLite in the data folder (with its durability), or PostgreSQL.
    public var database = StoreConfiguration.Database.sqlite(SQLiteStore.Options())
    /// Where upload bytes go with PostgreSQL: nil for the data folder's `uploads/`, or an
    /// `s3://BUCKET?endpoint=URL&region=R` URL (credentials from the `AWS_*` variables).
    public var blobStore: String?
    /// Where the blob store's `AWS_*` credentials are read from (the process's environment).
    public var environment: [String: String] = ProcessInfo.processInfo.environment
    public var threads = HTTPServer.Configuration.cores
    /// Bytes of a non-multipart body, and of the plain fields of a multipart body.
    public var maxBodySize = 1 << 20
    /// Bytes of all file parts of one request together.
    public var maxUploadSize: Int64 = 1 << 30
    /// Seconds a resumable upload lives after its last append before the sweep deletes it
    /// (`Upload-Limit: max-age`, tus `Upload-Expires`).
    public var resumableUploadLifetime: Int64 = 24 * 3600
    /// Unfinished resumable uploads one user may have at once.
    public var resumableUploadsPerUser = 100
    /// Bytes one user's unfinished resumable uploads may declare or hold together.
    public var resumableBytesPerUser: Int64 = 16 << 30
    /// Seconds between sweeps of expired resumable uploads.
    public var resumableSweepInterval: Double = 60
    /// Days every revision of a note is kept (`--revision-days`); then thinned (`RevisionRetention`).
    public var revisionDays = 30
    /// Days a deleted note stays in the trash (`--trash-days`), restorable; then the retention
    /// sweep removes it for good, with its revisions and its attachments' bytes.
    public var trashDays = 30
    /// Days the change feed keeps a deleted note's tombstone (`--feed-days`, `FeedRetention`).
    public var feedDays = 90
    /// Seconds between runs of the retention sweep (revisions thinned, the trash emptied of
    /// notes deleted over `trashDays` ago, feed tombstones pruned).
    public var retentionSweepInterval: Double = 3600
    /// Open connections from one client address.
    public var connectionsPerAddress = 256
    /// Open connections in all.
    public var connectionLimit = 10_000
    /// Seconds an idle connection is kept.
    public var idleTimeout = 30
    /// Write one access-log line per request to standard error.
    public var accessLog = true
    /// Seconds between heartbeat comments on event streams.
    public var eventHeartbeat: Double = 15
    /// Events kept for streams that reconnect with `Last-Event-ID`.
    public var eventBacklog = 10_000
    /// Event streams (`GET /notes/events`) one token or session may hold open at once; more
    /// are `429` (docs/API.md). Without authentication no token is counted.
    public var eventStreamsPerToken = 32
    /// Event streams one signed-in user may hold open at once, all their tokens and sessions
    /// together; more are `429`.
    public var eventStreamsPerUser = 64
    /// `/healthz` answers 503 when less than this many bytes are free for the data folder.
    public var minimumFreeSpace: Int64 = 64 << 20

    /// Whether notes, uploads, their events and `/metrics` need credentials; nil: `off` on a
    /// loopback host, `required` elsewhere (`AuthMode.default(for:)`).
    public var auth: AuthMode?
    /// Seconds a verified token or session is trusted before it is read again (changes made
    /// through this server apply at once; this bounds those made by another process).
    public var credentialRefreshInterval: Int64 = 10

    /// HTTPS: PEM files of the certificate (chain) and its private key, read at start-up.
    /// With them, every answer carries `Strict-Transport-Security` and the session cookie is `Secure`.
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?

    /// Origins (`https://app.example.com`) whose pages may call the API (CORS), and whose
    /// unsafe requests pass the cross-origin check; none by default.
    public var corsOrigins: [String] = []
    /// On a loopback `host`: more names than `localhost`, `127.0.0.1` and `[::1]` that a
    /// request's `Host` may carry (a reverse proxy's public name); any other is `421`, against
    /// DNS rebinding. Ignored on any other host.
    public var allowedHosts: [String] = []
    /// Reverse proxies (CIDR blocks or addresses) whose `Forwarded` or `X-Forwarded-For` /
    /// `X-Forwarded-Proto` give the client's address and scheme — for the access log, the
    /// sign-in limiter, the session cookie's `Secure` and HSTS; from any other peer those
    /// headers are ignored. None by default.
    public var trustedProxies: [String] = []
    /// Requests a minute that one token or session may make (`429` beyond, with `RateLimit`
    /// headers on every answer); 0 for no limit.
    public var requestsPerMinute = 6000
    /// Requests a minute that one user may make with all their tokens and sessions together;
    /// nil for as many as `requestsPerMinute`.
    public var requestsPerUserMinute: Int?
    /// Each user's budget of merge work — an edit made from an older version is merged in its
    /// write, on SQLite in the one writer thread — in the merge's own steps (`TextMerge`; its cap,
    /// 60 million, takes 0.5–1 s of one core in a release build), or its CPU time at 60 million
    /// a second if more: a bucket of `mergeWorkBurst` steps (three capped merges) refilled by
    /// `mergeWorkPerSecond` (a capped merge every 5 s: 10–20 % of the writer). An edit sent with
    /// a `Base-Version` takes the cap from it before it is queued and gives back what its merge
    /// did not use; with the bucket spent it is `429` (docs/API.md). Each instance keeps its
    /// own buckets. 0: no budget.
    public var mergeWorkBurst = 180_000_000
    public var mergeWorkPerSecond = 12_000_000
    /// The merge budget's clock (seconds, monotonic): tests pass their own.
    var mergeBudgetClock: @Sendable () -> Double = MonotonicClock.seconds
    /// API tokens (unrevoked, unexpired) one user may hold: creating another is `409`; 0 for no limit.
    public var tokensPerUser = 100
    /// Credentials that are no good (malformed or unknown) one client address may send: a
    /// burst of `failedCredentialBurst`, then one every `failedCredentialRefillSeconds`; beyond,
    /// a request with a credential never verified is `429` before it is looked up. 0: no limit.
    public var failedCredentialBurst = 100
    public var failedCredentialRefillSeconds: Double = 1
    /// Sign-in attempts per client address (all) and per (name, address) (failures): a burst of
    /// `signInBurst`, then one every `signInRefillSeconds`; per name (failures from anywhere)
    /// ten times as many, ten times as fast.
    public var signInBurst = 10
    public var signInRefillSeconds: Double = 6
    /// Argon2id hashes (sign-in checks, new passwords) that run at once, and how many more may
    /// wait; past that a sign-in is `503` with `Retry-After`.
    public var passwordHashingWidth = HTTPServer.Configuration.cores
    public var passwordHashingQueue = 16

    /// The authentication mode in force.
    public var effectiveAuth: AuthMode { auth ?? AuthMode.default(for: host) }

    /// More middleware around every route, inside the server's request ids, access log and
    /// metrics, outside its error rendering (so they see errors as responses): for embedding
    /// applications and tests.
    public var middleware: [any Middleware] = []

    public init() {}

    /// What `openDataStore` is given.
    var store: StoreConfiguration {
        var store = StoreConfiguration(dataDirectory: dataDirectory, environment: environment)
        store.database = database
        store.blobStore = blobStore
        store.eventBacklog = eventBacklog
        return store
    }

    var http: HTTPServer.Configuration {
        var http = HTTPServer.Configuration(
            host: host, port: port, threads: threads, connectionLimit: connectionLimit,
            connectionsPerAddress: connectionsPerAddress, idleTimeout: idleTimeout,
            maxBodySize: maxBodySize)
        http.maxUploadSize = maxUploadSize
        return http
    }
}
