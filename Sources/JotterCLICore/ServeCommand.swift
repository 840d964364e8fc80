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
package struct ServeCommand: BlockingCommand, ParsableArguments {
    package static let name = "serve"
    package static let summary = "Serve the API and the web app."
    package static let about = """
        Serves the Jotter API and web app until SIGINT or SIGTERM, then stops accepting,
        finishes the requests in flight and exits 0. SIGHUP reads --tls-cert and --tls-key
        again: new connections get the new certificate, open ones keep theirs.

        Each option is also read from the environment variable shown.
        """

    @Value(Option.text("--host", value: "HOST", environment: "JOTTER_HOST", default: "127.0.0.1", help: "Address to listen on."))
    var host: String?
    @Value(
        Option.integer(
            "--port", value: "PORT", environment: "JOTTER_PORT", default: "8080", in: 0...65535, noun: "port number",
            help: "Port, 0 for any free one."))
    var port: Int?
    @Value(Option.text("--data", value: "DIR", environment: "JOTTER_DATA", default: "./jotter-data", help: "Data folder."))
    var data: String?
    @Value(Option.integer("--threads", environment: "JOTTER_THREADS", default: "number of cores", in: 1...256, help: "Engine threads."))
    var threads: Int?
    @Value(
        Option.size(
            "--max-body-size", environment: "JOTTER_MAX_BODY_SIZE", default: "1MiB", minimum: 1, help: "Largest non-upload body, e.g. 1MiB."))
    var maxBodySize: Int?
    @Value(
        Option.size(
            "--max-upload-size", environment: "JOTTER_MAX_UPLOAD_SIZE", default: "1GiB", minimum: 1,
            help: "Largest sum of files in one upload, e.g. 1GiB."))
    var maxUploadSize: Int?
    @Value(Option.integer("--max-connections", environment: "JOTTER_MAX_CONNECTIONS", default: "10000", help: "Open connections in all."))
    var maxConnections: Int?
    @Value(
        Option.integer(
            "--max-connections-per-address", environment: "JOTTER_MAX_CONNECTIONS_PER_ADDRESS", default: "256",
            help: "Open connections from one client address (a --trusted-proxy is not held to it)."))
    var maxConnectionsPerAddress: Int?
    @Value(
        Option.integer(
            "--idle-timeout", value: "SECONDS", environment: "JOTTER_IDLE_TIMEOUT", default: "30", unit: "seconds",
            help:
                "Close a connection on which no byte moves this long within a request or its answer (between requests, "
                + "the 10 s header deadline closes it first)."))
    var idleTimeout: Int?
    @Value(
        Option.value(
            "--database", value: "sqlite|URL", environment: "JOTTER_DATABASE_URL", default: "sqlite",
            expected: "sqlite or a postgres:// URL",
            help: "sqlite: jotter.sqlite in the data folder (one machine); a postgres:// URL: PostgreSQL, which any number of "
                + "instances may share."
        ) { try? StoreConfiguration.Database.parse($0) },
        Option.integer(
            "--database-pool", environment: "JOTTER_DATABASE_POOL", in: 1...1000,
            help: "PostgreSQL connections this instance opens at most."
        ).defaulting(to: 8),
        ServeCommand.pooled)
    var database: StoreConfiguration.Database?
    @Value(
        Option.text(
            "--blob-store", value: "URL", environment: "JOTTER_BLOB_STORE", default: "the data folder's uploads/",
            help: "With PostgreSQL: where upload bytes go, s3://BUCKET?endpoint=URL&region=R (credentials from AWS_ACCESS_KEY_ID "
                + "and AWS_SECRET_ACCESS_KEY)."))
    var blobStore: String?
    @Value(
        Option.choice(
            "--synchronous", choices: [("full", SQLiteStore.Synchronous.full), ("normal", .normal)], environment: "JOTTER_SYNCHRONOUS",
            default: "full",
            help: "SQLite durability: full syncs every commit before it is acknowledged; normal may lose the last commits on "
                + "power loss (not on a crash of jotter)."))
    var synchronous: SQLiteStore.Synchronous?
    @Value(
        Option.size(
            "--min-free-space", environment: "JOTTER_MIN_FREE_SPACE", default: "64MiB",
            help: "/healthz answers 503 when less is free for the data folder."))
    var minFreeSpace: Int?
    @Value(Option.flag("--quiet", environment: "JOTTER_QUIET", help: "No access log.")) var quiet: Bool
    @Value(
        Option.choice(
            "--auth", choices: [("required", AuthMode.required), ("off", .off)], environment: "JOTTER_AUTH",
            default: "off on a loopback host, required elsewhere",
            help: "Whether notes, uploads, their events and /metrics need a token or a session; off on another host logs a warning."))
    var auth: AuthMode?
    @Value(
        Option.list(
            "--cors-origin", value: "ORIGIN", environment: "JOTTER_CORS_ORIGIN",
            help: "Let pages of this origin (https://app.example.com) call the API; repeatable (the variable: separated by spaces); "
                + "none by default."))
    var corsOrigins: [String]
    @Value(
        Option.list(
            "--allowed-host", value: "NAME", environment: "JOTTER_ALLOWED_HOST",
            help: "On a loopback --host: a Host name served besides localhost, 127.0.0.1 and [::1] (a reverse proxy's public "
                + "name); repeatable (the variable: separated by spaces). Any other Host is 421, against DNS rebinding."))
    var allowedHosts: [String]
    @Value(
        Option.list(
            "--trusted-proxy", value: "CIDR", environment: "JOTTER_TRUSTED_PROXY",
            help: "A reverse proxy (10.0.0.0/8, 127.0.0.1, ::1) whose Forwarded or X-Forwarded-For/-Proto headers give the client's "
                + "address and scheme (logs, sign-in limits, Secure cookies, HSTS); repeatable (the variable: separated by spaces). "
                + "From any other peer those headers are ignored; none by default."
        ).each(expected: "an IP address or CIDR block (10.0.0.0/8, ::1)") { TrustedProxies.Block($0) != nil })
    var trustedProxies: [String]
    @Value(
        Option.integer(
            "--rate-limit", environment: "JOTTER_RATE_LIMIT", default: "6000", in: 0...Int.max, unit: "requests a minute",
            help: "Requests a minute one token or session may make (429 beyond); 0 for no limit."))
    var rateLimit: Int?
    @Value(
        Option.integer(
            "--user-rate-limit", environment: "JOTTER_USER_RATE_LIMIT", default: "as --rate-limit", unit: "requests a minute",
            help: "Requests a minute one user may make with all their tokens and sessions together (429 beyond)."))
    var userRateLimit: Int?
    @Value(
        Option.integer(
            "--max-tokens-per-user", environment: "JOTTER_MAX_TOKENS_PER_USER", default: "100", in: 0...Int.max, unit: "tokens",
            help: "API tokens one user may hold (revoked and expired ones not counted; 409 beyond); 0 for no limit."))
    var maxTokensPerUser: Int?
    @Value(
        Option.integer(
            "--revision-days", environment: "JOTTER_REVISION_DAYS", default: "30", in: retentionDays, unit: "days",
            help: "Days every revision of a note is kept; then the newest of each day until three times as long, then of each "
                + "week (a note's newest always)."))
    var revisionDays: Int?
    @Value(
        Option.integer(
            "--trash-days", environment: "JOTTER_TRASH_DAYS", default: "30", in: retentionDays, unit: "days",
            help: "Days a deleted note stays in the trash, restorable; then it is removed for good with its revisions and "
                + "attachments."))
    var trashDays: Int?
    @Value(
        Option.integer(
            "--feed-days", environment: "JOTTER_FEED_DAYS", default: "90", in: retentionDays, unit: "days",
            help: "Days GET /notes/changes remembers a deleted note; a client whose cursor is older gets a walk of "
                + "every note (reset) instead of the changes."))
    var feedDays: Int?
    @Value(Option.text("--tls-cert", value: "FILE", environment: "JOTTER_TLS_CERT", help: "Serve HTTPS with this PEM certificate (chain)."))
    var tlsCert: String?
    @Value(Option.text("--tls-key", value: "FILE", environment: "JOTTER_TLS_KEY", help: "The PEM private key of --tls-cert."))
    var tlsKey: String?

    /// Retention in days: up to a hundred years (seconds past that would overflow).
    static let retentionDays = 1...36_500

    /// What the server runs with: made of the options once they are read.
    package private(set) var configuration = ServerConfiguration()

    package init() {}

    /// The configuration made of the options, and the rules between them.
    package mutating func validate(_ arguments: Arguments) throws {
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if let data { configuration.dataDirectory = data }
        if let threads { configuration.threads = threads }
        if let maxBodySize { configuration.maxBodySize = maxBodySize }
        if let maxUploadSize { configuration.maxUploadSize = Int64(maxUploadSize) }
        if let maxConnections { configuration.connectionLimit = maxConnections }
        if let maxConnectionsPerAddress { configuration.connectionsPerAddress = maxConnectionsPerAddress }
        if let idleTimeout { configuration.idleTimeout = idleTimeout }
        if let database { configuration.database = database }
        if let synchronous {
            guard case .sqlite(var options) = configuration.database else {
                throw UsageError("--synchronous is SQLite's durability; PostgreSQL commits durably (synchronous_commit)")
            }
            options.synchronous = synchronous
            configuration.database = .sqlite(options)
        }
        configuration.blobStore = blobStore
        if blobStore != nil, case .sqlite = configuration.database {
            throw UsageError("--blob-store needs --database postgres://…: with SQLite, uploads stay in the data folder")
        }
        if let minFreeSpace { configuration.minimumFreeSpace = Int64(minFreeSpace) }
        configuration.accessLog = !quiet
        if let auth { configuration.auth = auth }
        configuration.corsOrigins = corsOrigins
        configuration.allowedHosts = allowedHosts
        configuration.trustedProxies = trustedProxies
        if let rateLimit { configuration.requestsPerMinute = rateLimit }
        if let userRateLimit { configuration.requestsPerUserMinute = userRateLimit }
        if let maxTokensPerUser { configuration.tokensPerUser = maxTokensPerUser }
        if let revisionDays { configuration.revisionDays = revisionDays }
        if let trashDays { configuration.trashDays = trashDays }
        if let feedDays { configuration.feedDays = feedDays }
        configuration.tlsCertificatePath = tlsCert
        configuration.tlsKeyPath = tlsKey
    }

    /// `--database` with `--database-pool`'s size, when it is PostgreSQL.
    @Sendable static func pooled(_ database: StoreConfiguration.Database?, poolSize: Int) -> StoreConfiguration.Database? {
        guard case .postgres(let url, _)? = database else { return database }
        return .postgres(url: url, poolSize: poolSize)
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
