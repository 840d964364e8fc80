#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import JotterHTTP
import JotterServer
import JotterStore

/// `jotter serve`: runs the server until SIGINT or SIGTERM, then shuts down gracefully.
package struct ServeCommand: BlockingCommand {
    package static let name = "serve"
    package static let summary = "Serve the API and the web app."
    package static let about = """
        Serves the Jotter API and web app until SIGINT or SIGTERM, then stops accepting,
        finishes the requests in flight and exits 0. SIGHUP reads --tls-cert and --tls-key
        again: new connections get the new certificate, open ones keep theirs.

        Each option is also read from the environment variable shown.
        """
    static let host = Option.text("--host", value: "HOST", environment: "JOTTER_HOST", default: "127.0.0.1", help: "Address to listen on.")
    static let port = Option.integer(
        "--port", value: "PORT", environment: "JOTTER_PORT", default: "8080", in: 0...65535,
        noun: "port number", help: "Port, 0 for any free one.")
    static let data = Option.text("--data", value: "DIR", environment: "JOTTER_DATA", default: "./jotter-data", help: "Data folder.")
    static let threads = Option.integer(
        "--threads", environment: "JOTTER_THREADS", default: "number of cores", in: 1...256,
        help: "Engine threads.")
    static let maxBodySize = Option.size(
        "--max-body-size", environment: "JOTTER_MAX_BODY_SIZE", default: "1MiB", minimum: 1,
        help: "Largest non-upload body, e.g. 1MiB.")
    static let maxUploadSize = Option.size(
        "--max-upload-size", environment: "JOTTER_MAX_UPLOAD_SIZE", default: "1GiB", minimum: 1,
        help: "Largest sum of files in one upload, e.g. 1GiB.")
    static let maxConnections = Option.integer(
        "--max-connections", environment: "JOTTER_MAX_CONNECTIONS", default: "10000",
        help: "Open connections in all.")
    static let maxConnectionsPerAddress = Option.integer(
        "--max-connections-per-address", environment: "JOTTER_MAX_CONNECTIONS_PER_ADDRESS", default: "256",
        help: "Open connections from one client address (a --trusted-proxy is not held to it).")
    static let idleTimeout = Option.integer(
        "--idle-timeout", value: "SECONDS", environment: "JOTTER_IDLE_TIMEOUT", default: "30",
        unit: "seconds",
        help:
            "Close a connection on which no byte moves this long within a request or its answer (between requests, "
            + "the 10 s header deadline closes it first).")
    static let database = Option.text(
        "--database", value: "sqlite|URL", environment: "JOTTER_DATABASE_URL", default: "sqlite",
        help: "sqlite: jotter.sqlite in the data folder (one machine); a postgres:// URL: PostgreSQL, which any number of "
            + "instances may share.")
    static let databasePool = Option.integer(
        "--database-pool", environment: "JOTTER_DATABASE_POOL", in: 1...1000,
        help: "PostgreSQL connections this instance opens at most."
    ).defaulting(to: 8)
    static let blobStore = Option.text(
        "--blob-store", value: "URL", environment: "JOTTER_BLOB_STORE", default: "the data folder's uploads/",
        help: "With PostgreSQL: where upload bytes go, s3://BUCKET?endpoint=URL&region=R (credentials from AWS_ACCESS_KEY_ID "
            + "and AWS_SECRET_ACCESS_KEY).")
    static let synchronous = Option.choice(
        "--synchronous", choices: [("full", SQLiteStore.Synchronous.full), ("normal", .normal)], environment: "JOTTER_SYNCHRONOUS",
        default: "full",
        help: "SQLite durability: full syncs every commit before it is acknowledged; normal may lose the last commits on "
            + "power loss (not on a crash of jotter).")
    static let minFreeSpace = Option.size(
        "--min-free-space", environment: "JOTTER_MIN_FREE_SPACE", default: "64MiB",
        help: "/healthz answers 503 when less is free for the data folder.")
    static let quiet = Option.flag("--quiet", environment: "JOTTER_QUIET", help: "No access log.")
    static let auth = Option.choice(
        "--auth", choices: [("required", AuthMode.required), ("off", .off)], environment: "JOTTER_AUTH",
        default: "off on a loopback host, required elsewhere",
        help: "Whether notes, uploads, their events and /metrics need a token or a session; off on another host logs a warning.")
    static let corsOrigin = Option.list(
        "--cors-origin", value: "ORIGIN", environment: "JOTTER_CORS_ORIGIN",
        help: "Let pages of this origin (https://app.example.com) call the API; repeatable (the variable: separated by spaces); none by default.")
    static let allowedHost = Option.list(
        "--allowed-host", value: "NAME", environment: "JOTTER_ALLOWED_HOST",
        help: "On a loopback --host: a Host name served besides localhost, 127.0.0.1 and [::1] (a reverse proxy's public "
            + "name); repeatable (the variable: separated by spaces). Any other Host is 421, against DNS rebinding.")
    static let trustedProxy = Option.list(
        "--trusted-proxy", value: "CIDR", environment: "JOTTER_TRUSTED_PROXY",
        help: "A reverse proxy (10.0.0.0/8, 127.0.0.1, ::1) whose Forwarded or X-Forwarded-For/-Proto headers give the client's "
            + "address and scheme (logs, sign-in limits, Secure cookies, HSTS); repeatable (the variable: separated by spaces). "
            + "From any other peer those headers are ignored; none by default.")
    static let rateLimit = Option.integer(
        "--rate-limit", environment: "JOTTER_RATE_LIMIT", default: "6000", in: 0...Int.max,
        unit: "requests a minute",
        help: "Requests a minute one token or session may make (429 beyond); 0 for no limit.")
    static let userRateLimit = Option.integer(
        "--user-rate-limit", environment: "JOTTER_USER_RATE_LIMIT", default: "as --rate-limit", unit: "requests a minute",
        help: "Requests a minute one user may make with all their tokens and sessions together (429 beyond).")
    static let maxTokensPerUser = Option.integer(
        "--max-tokens-per-user", environment: "JOTTER_MAX_TOKENS_PER_USER", default: "100", in: 0...Int.max, unit: "tokens",
        help: "API tokens one user may hold (revoked and expired ones not counted; 409 beyond); 0 for no limit.")
    /// Retention in days: up to a hundred years (seconds past that would overflow).
    static let retentionDays = 1...36_500
    static let revisionDays = Option.integer(
        "--revision-days", environment: "JOTTER_REVISION_DAYS", default: "30", in: retentionDays, unit: "days",
        help: "Days every revision of a note is kept; then the newest of each day until three times as long, then of each "
            + "week (a note's newest always).")
    static let trashDays = Option.integer(
        "--trash-days", environment: "JOTTER_TRASH_DAYS", default: "30", in: retentionDays, unit: "days",
        help: "Days a deleted note stays in the trash, restorable; then it is removed for good with its revisions and "
            + "attachments.")
    static let feedDays = Option.integer(
        "--feed-days", environment: "JOTTER_FEED_DAYS", default: "90", in: retentionDays, unit: "days",
        help: "Days GET /notes/changes remembers a deleted note; a client whose cursor is older gets a walk of "
            + "every note (reset) instead of the changes.")
    static let tlsCert = Option.text(
        "--tls-cert", value: "FILE", environment: "JOTTER_TLS_CERT",
        help: "Serve HTTPS with this PEM certificate (chain).")
    static let tlsKey = Option.text("--tls-key", value: "FILE", environment: "JOTTER_TLS_KEY", help: "The PEM private key of --tls-cert.")

    package static let options = [
        host.option, port.option, data.option, threads.option, maxBodySize.option, maxUploadSize.option, maxConnections.option,
        maxConnectionsPerAddress.option, idleTimeout.option, database.option, databasePool.option, blobStore.option,
        synchronous.option, minFreeSpace.option, quiet.option, auth.option, corsOrigin.option, allowedHost.option,
        trustedProxy.option, rateLimit.option, userRateLimit.option, maxTokensPerUser.option, revisionDays.option,
        trashDays.option, feedDays.option, tlsCert.option, tlsKey.option,
    ]

    package var configuration = ServerConfiguration()

    package init(parsing arguments: Arguments) throws {
        if let host = try arguments[Self.host] { configuration.host = host }
        if let port = try arguments[Self.port] { configuration.port = port }
        if let data = try arguments[Self.data] { configuration.dataDirectory = data }
        if let threads = try arguments[Self.threads] { configuration.threads = threads }
        if let size = try arguments[Self.maxBodySize] { configuration.maxBodySize = size }
        if let size = try arguments[Self.maxUploadSize] { configuration.maxUploadSize = Int64(size) }
        if let limit = try arguments[Self.maxConnections] { configuration.connectionLimit = limit }
        if let limit = try arguments[Self.maxConnectionsPerAddress] { configuration.connectionsPerAddress = limit }
        if let timeout = try arguments[Self.idleTimeout] { configuration.idleTimeout = timeout }
        let pool = try arguments[Self.databasePool]
        if let database = try arguments[Self.database] {
            do { configuration.database = try StoreConfiguration.Database.parse(database, poolSize: pool) } catch {
                throw arguments.invalid(Self.database.option, database, expected: "sqlite or a postgres:// URL")
            }
        }
        if let mode = try arguments[Self.synchronous] {
            guard case .sqlite(var options) = configuration.database else {
                throw UsageError("--synchronous is SQLite's durability; PostgreSQL commits durably (synchronous_commit)")
            }
            options.synchronous = mode
            configuration.database = .sqlite(options)
        }
        configuration.blobStore = try arguments[Self.blobStore]
        if configuration.blobStore != nil, case .sqlite = configuration.database {
            throw UsageError("--blob-store needs --database postgres://…: with SQLite, uploads stay in the data folder")
        }
        if let mode = try arguments[Self.auth] { configuration.auth = mode }
        configuration.corsOrigins = try arguments[Self.corsOrigin]
        configuration.allowedHosts = try arguments[Self.allowedHost]
        configuration.trustedProxies = try arguments[Self.trustedProxy]
        for proxy in configuration.trustedProxies where TrustedProxies.Block(proxy) == nil {
            throw arguments.invalid(Self.trustedProxy.option, proxy, expected: "an IP address or CIDR block (10.0.0.0/8, ::1)")
        }
        if let limit = try arguments[Self.rateLimit] { configuration.requestsPerMinute = limit }
        if let limit = try arguments[Self.userRateLimit] { configuration.requestsPerUserMinute = limit }
        if let limit = try arguments[Self.maxTokensPerUser] { configuration.tokensPerUser = limit }
        if let days = try arguments[Self.revisionDays] { configuration.revisionDays = days }
        if let days = try arguments[Self.trashDays] { configuration.trashDays = days }
        if let days = try arguments[Self.feedDays] { configuration.feedDays = days }
        configuration.tlsCertificatePath = try arguments[Self.tlsCert]
        configuration.tlsKeyPath = try arguments[Self.tlsKey]
        if let size = try arguments[Self.minFreeSpace] { configuration.minimumFreeSpace = Int64(size) }
        configuration.accessLog = !(try arguments[Self.quiet])
        try arguments.finish()
    }

    package func run(console: Console) throws -> Int32 {
        try Self.prepareDataFolder(configuration.dataDirectory)
        // Block the signals before any engine thread exists, so every thread inherits the mask
        // and only `sigwait` below sees them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        raiseOpenFileLimit()

        let app = try buildApplication(configuration)
        try app.start()
        var received: Int32 = 0
        // SIGHUP: the certificate and key are read again (renewed by certbot, say); the server
        // goes on with the previous ones when the new files are not usable.
        while sigwait(&signals, &received) == 0, received == SIGHUP {
            do {
                try app.reloadTLS()
            } catch {
                app.log.error("SIGHUP: \(error.description)")
            }
        }
        app.log.info("\(received == SIGINT ? "SIGINT" : "SIGTERM") received: finishing requests in flight, then stopping")
        app.shutdown()
        app.log.info("stopped")
        return ExitCode.success
    }

    /// Creates the data folder and the folders above it when missing; a file in the way, or a
    /// folder that can't be made, is said in words (not as a Foundation error dump).
    static func prepareDataFolder(_ path: String) throws(ServeFailure) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            var info = stat()
            if stat(prefix, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw ServeFailure(
                        prefix == path
                            ? "--data \(path) is a file, not a folder: give a folder (it is made if missing)"
                            : "cannot make the data folder \(path): \(prefix) is a file, not a folder")
                }
            } else if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw ServeFailure("cannot make the data folder \(path): \(String(cString: strerror(errno))) (at \(prefix))")
            }
        }
    }

    /// Lifts the soft open-files limit to the hard limit: every connection is a descriptor.
    private func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// Why `serve` could not start, in one line.
package struct ServeFailure: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
