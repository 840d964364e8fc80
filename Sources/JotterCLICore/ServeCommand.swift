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
    package static let usage = "jotter serve [options]"
    package static let about = """
    Serves the Jotter API and web app until SIGINT or SIGTERM, then stops accepting,
    finishes the requests in flight and exits 0. SIGHUP reads --tls-cert and --tls-key
    again: new connections get the new certificate, open ones keep theirs.

    Each option is also read from the environment variable shown.
    """
    package static let options = [
        Option("--host", value: "HOST", environment: "JOTTER_HOST", default: "127.0.0.1", help: "Address to listen on."),
        Option("--port", value: "PORT", environment: "JOTTER_PORT", default: "8080", help: "Port, 0 for any free one."),
        Option("--data", value: "DIR", environment: "JOTTER_DATA", default: "./jotter-data", help: "Data folder."),
        Option("--threads", value: "N", environment: "JOTTER_THREADS", default: "number of cores", help: "Engine threads."),
        Option("--max-body-size", value: "SIZE", environment: "JOTTER_MAX_BODY_SIZE", default: "1MiB",
               help: "Largest non-upload body, e.g. 1MiB."),
        Option("--max-upload-size", value: "SIZE", environment: "JOTTER_MAX_UPLOAD_SIZE", default: "1GiB",
               help: "Largest sum of files in one upload, e.g. 1GiB."),
        Option("--max-connections", value: "N", environment: "JOTTER_MAX_CONNECTIONS", default: "10000", help: "Open connections in all."),
        Option("--max-connections-per-address", value: "N", environment: "JOTTER_MAX_CONNECTIONS_PER_ADDRESS", default: "256",
               help: "Open connections from one client address (a --trusted-proxy is not held to it)."),
        Option("--idle-timeout", value: "SECONDS", environment: "JOTTER_IDLE_TIMEOUT", default: "30", help: "Close connections idle this long."),
        Option("--database", value: "sqlite|URL", environment: "JOTTER_DATABASE_URL", default: "sqlite",
               help: "sqlite: jotter.sqlite in the data folder (one machine); a postgres:// URL: PostgreSQL, which any number of "
                   + "instances may share."),
        Option("--database-pool", value: "N", environment: "JOTTER_DATABASE_POOL", default: "8",
               help: "PostgreSQL connections this instance opens at most."),
        Option("--blob-store", value: "URL", environment: "JOTTER_BLOB_STORE", default: "the data folder's uploads/",
               help: "With PostgreSQL: where upload bytes go, s3://BUCKET?endpoint=URL&region=R (credentials from AWS_ACCESS_KEY_ID "
                   + "and AWS_SECRET_ACCESS_KEY)."),
        Option("--synchronous", value: "full|normal", environment: "JOTTER_SYNCHRONOUS", default: "full",
               help: "SQLite durability: full syncs every commit before it is acknowledged; normal may lose the last commits on "
                   + "power loss (not on a crash of jotter)."),
        Option("--min-free-space", value: "SIZE", environment: "JOTTER_MIN_FREE_SPACE", default: "64MiB",
               help: "/healthz answers 503 when less is free for the data folder."),
        Option("--quiet", environment: "JOTTER_QUIET", help: "No access log."),
        Option("--auth", value: "required|off", environment: "JOTTER_AUTH", default: "off on a loopback host, required elsewhere",
               help: "Whether notes, uploads, their events and /metrics need a token or a session; off on another host logs a warning."),
        Option("--cors-origin", value: "ORIGIN", environment: "JOTTER_CORS_ORIGIN", repeats: true,
               help: "Let pages of this origin (https://app.example.com) call the API; repeatable (the variable: separated by spaces); none by default."),
        Option("--allowed-host", value: "NAME", environment: "JOTTER_ALLOWED_HOST", repeats: true,
               help: "On a loopback --host: a Host name served besides localhost, 127.0.0.1 and [::1] (a reverse proxy's public "
                   + "name); repeatable (the variable: separated by spaces). Any other Host is 421, against DNS rebinding."),
        Option("--trusted-proxy", value: "CIDR", environment: "JOTTER_TRUSTED_PROXY", repeats: true,
               help: "A reverse proxy (10.0.0.0/8, 127.0.0.1, ::1) whose Forwarded or X-Forwarded-For/-Proto headers give the client's "
                   + "address and scheme (logs, sign-in limits, Secure cookies, HSTS); repeatable (the variable: separated by spaces). "
                   + "From any other peer those headers are ignored; none by default."),
        Option("--rate-limit", value: "N", environment: "JOTTER_RATE_LIMIT", default: "6000",
               help: "Requests a minute one token or session may make (429 beyond); 0 for no limit."),
        Option("--user-rate-limit", value: "N", environment: "JOTTER_USER_RATE_LIMIT", default: "as --rate-limit",
               help: "Requests a minute one user may make with all their tokens and sessions together (429 beyond)."),
        Option("--max-tokens-per-user", value: "N", environment: "JOTTER_MAX_TOKENS_PER_USER", default: "100",
               help: "API tokens one user may hold (revoked and expired ones not counted; 409 beyond); 0 for no limit."),
        Option("--revision-days", value: "N", environment: "JOTTER_REVISION_DAYS", default: "30",
               help: "Days every revision of a note is kept; then the newest of each day until three times as long, then of each "
                   + "week (a note's newest always)."),
        Option("--trash-days", value: "N", environment: "JOTTER_TRASH_DAYS", default: "30",
               help: "Days a deleted note stays in the trash, restorable; then it is removed for good with its revisions and "
                   + "attachments."),
        Option("--feed-days", value: "N", environment: "JOTTER_FEED_DAYS", default: "90",
               help: "Days GET /notes/changes remembers a deleted note; a client whose cursor is older gets a walk of "
                   + "every note (reset) instead of the changes."),
        Option("--tls-cert", value: "FILE", environment: "JOTTER_TLS_CERT", help: "Serve HTTPS with this PEM certificate (chain)."),
        Option("--tls-key", value: "FILE", environment: "JOTTER_TLS_KEY", help: "The PEM private key of --tls-cert."),
    ]

    package var configuration = ServerConfiguration()

    package init(parsing arguments: Arguments) throws {
        let positive = { (text: String) -> Int? in Int(text).flatMap { $0 > 0 ? $0 : nil } }
        if let host = arguments.option("--host") { configuration.host = host }
        if let port = try arguments.option("--port", as: "a port number from 0 to 65535", {
            Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } }) { configuration.port = port }
        if let data = arguments.option("--data") { configuration.dataDirectory = data }
        if let threads = try arguments.option("--threads", as: "a whole number from 1 to 256", {
            Int($0).flatMap { (1...256).contains($0) ? $0 : nil } }) { configuration.threads = threads }
        if let size = try arguments.option("--max-body-size", as: "a size such as 1048576 or 1MiB",
                                           { parseSize($0).flatMap { $0 > 0 ? $0 : nil } }) { configuration.maxBodySize = size }
        if let size = try arguments.option("--max-upload-size", as: "a size such as 1GiB",
                                           { parseSize($0).flatMap { $0 > 0 ? $0 : nil } }) { configuration.maxUploadSize = Int64(size) }
        if let limit = try arguments.option("--max-connections", as: "a positive whole number", positive) {
            configuration.connectionLimit = limit
        }
        if let limit = try arguments.option("--max-connections-per-address",
                                            as: "a positive whole number", positive) {
            configuration.connectionsPerAddress = limit
        }
        if let timeout = try arguments.option("--idle-timeout", as: "a positive number of seconds", positive) {
            configuration.idleTimeout = timeout
        }
        let pool = try arguments.option("--database-pool", as: "a whole number from 1 to 1000", {
            Int($0).flatMap { (1...1000).contains($0) ? $0 : nil } }) ?? 8
        if let database = try arguments.option("--database", as: "sqlite or a postgres:// URL", {
            try? StoreConfiguration.Database.parse($0, poolSize: pool) }) { configuration.database = database }
        if let mode = try arguments.option("--synchronous", as: "full or normal", { SQLiteStore.Synchronous(rawValue: $0.uppercased()) }) {
            guard case .sqlite(var options) = configuration.database else {
                throw UsageError("--synchronous is SQLite's durability; PostgreSQL commits durably (synchronous_commit)")
            }
            options.synchronous = mode
            configuration.database = .sqlite(options)
        }
        configuration.blobStore = arguments.option("--blob-store")
        if configuration.blobStore != nil, case .sqlite = configuration.database {
            throw UsageError("--blob-store needs --database postgres://…: with SQLite, uploads stay in the data folder")
        }
        if let mode = try arguments.option("--auth", as: "required or off", { AuthMode(rawValue: $0.lowercased()) }) {
            configuration.auth = mode
        }
        let origins = arguments.values("--cors-origin")
        configuration.corsOrigins = !origins.isEmpty ? origins
            : (arguments.environment["JOTTER_CORS_ORIGIN"] ?? "").split(separator: " ").map(String.init)
        let hosts = arguments.values("--allowed-host")
        configuration.allowedHosts = !hosts.isEmpty ? hosts
            : (arguments.environment["JOTTER_ALLOWED_HOST"] ?? "").split(separator: " ").map(String.init)
        let proxies = arguments.values("--trusted-proxy")
        configuration.trustedProxies = !proxies.isEmpty ? proxies
            : (arguments.environment["JOTTER_TRUSTED_PROXY"] ?? "").split(separator: " ").map(String.init)
        for proxy in configuration.trustedProxies where TrustedProxies.Block(proxy) == nil {
            throw UsageError("--trusted-proxy must be an IP address or CIDR block (10.0.0.0/8, ::1), not '\(proxy)'")
        }
        if let limit = try arguments.option("--rate-limit", as: "a whole number of requests a minute", { Int($0).flatMap { $0 >= 0 ? $0 : nil } }) {
            configuration.requestsPerMinute = limit
        }
        if let limit = try arguments.option("--user-rate-limit", as: "a positive whole number of requests a minute", positive) {
            configuration.requestsPerUserMinute = limit
        }
        if let limit = try arguments.option("--max-tokens-per-user", as: "a whole number of tokens", { Int($0).flatMap { $0 >= 0 ? $0 : nil } }) {
            configuration.tokensPerUser = limit
        }
        if let days = try arguments.option("--revision-days", as: "a positive whole number of days", positive) {
            configuration.revisionDays = days
        }
        if let days = try arguments.option("--trash-days", as: "a positive whole number of days", positive) {
            configuration.trashDays = days
        }
        if let days = try arguments.option("--feed-days", as: "a positive whole number of days", positive) {
            configuration.feedDays = days
        }
        configuration.tlsCertificatePath = arguments.option("--tls-cert")
        configuration.tlsKeyPath = arguments.option("--tls-key")
        if let size = try arguments.option("--min-free-space", as: "a size such as 64MiB", parseSize) {
            configuration.minimumFreeSpace = Int64(size)
        }
        configuration.accessLog = !arguments.flag("--quiet")
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
                    throw ServeFailure(prefix == path ? "--data \(path) is a file, not a folder: give a folder (it is made if missing)"
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
