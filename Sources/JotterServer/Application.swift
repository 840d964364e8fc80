#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import JotterHTTP
import JotterStore
import JotterStoreHTTP
import Synchronization
import JotterSystem

/// The running Jotter server: the HTTP engine with every route registered.
///
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.port = 0
/// let app = try buildApplication(configuration)
/// try app.start()
/// print("listening on \(app.url)")
/// app.shutdown()
/// ```
public final class Application: Sendable {
    public let configuration: ServerConfiguration
    let server: HTTPServer
    /// Where the server's lines go (standard error): every one `2026-11-30T14:35:40Z info …`,
    /// or an access-log line.
    public let log: Logger
    let notes: any DataStore
    let events: EventBroadcaster
    /// Users, tokens and sessions, with the cache of verified credentials.
    public let accounts: Accounts
    let resumable: ResumableUploads
    private let sweeper: PeriodicTask
    /// The retention sweep, on the store's clock: revisions thinned (`RevisionRetention`), the
    /// notes deleted `trashDays` or more ago removed from the trash for good, and the change
    /// feed's tombstones pruned (`FeedRetention`).
    private let retention: PeriodicTask

    init(
        configuration: ServerConfiguration, server: HTTPServer, log: Logger, notes: any DataStore, events: EventBroadcaster,
        accounts: Accounts, resumable: ResumableUploads
    ) {
        self.resumable = resumable
        sweeper = PeriodicTask(every: configuration.resumableSweepInterval) { resumable.sweep(now: WallClock.seconds()) }
        let revisions = RevisionRetention(days: configuration.revisionDays)
        let trash = Int64(configuration.trashDays) * 86_400
        let feed = FeedRetention(days: configuration.feedDays)
        retention = PeriodicTask(every: configuration.retentionSweepInterval) { [log] in
            do {
                _ = try notes.thinRevisions(revisions)
                _ = try notes.emptyTrash(keep: trash)
                _ = try notes.pruneFeed(feed)
            } catch {
                log.info("the retention sweep failed (it runs again in \(Int(configuration.retentionSweepInterval)) s): \(error)")
            }
        }
        self.configuration = configuration
        self.server = server
        self.log = log
        self.notes = notes
        self.events = events
        self.accounts = accounts
    }

    /// Starts serving; the port is known once this returns.
    public func start() throws {
        try server.start()
        accounts.startRechecking()
        sweeper.start()
        retention.start()
        log.info(
            "jotter listening on \(url) with \(configuration.threads) engine thread(s), data in \(configuration.dataDirectory)"
                + (configuration.store.usesPostgres
                    ? ", database \(configuration.store.databaseDescription), uploads in \(configuration.store.blobStoreDescription)" : ""))
        if let migration = notes.migration { log.info(migration.description) }
        if let newHistory = notes.newHistory { log.warning(newHistory) }
        if configuration.effectiveAuth == .off && !AuthMode.isLoopback(configuration.host) {
            log.warning("--auth off on \(configuration.host): anyone who can reach this address can read and change every note")
        }
    }

    /// Stops accepting, finishes requests in flight (writes are committed), ends event
    /// streams, closes the database. A request the drain ends without its whole body (the
    /// client's end, or the grace period's) keeps what it received — a resumable upload's
    /// offset — on the store's threads, which the store's `close()` runs to the end first.
    public func shutdown() {
        server.shutdown()
        sweeper.stop()
        retention.stop()
        accounts.stopRechecking()
        events.stop()
        notes.close()
    }

    /// Reads `--tls-cert` and `--tls-key` again and serves new connections with them (SIGHUP);
    /// open connections keep the certificate they began with. On an error the server keeps
    /// the current certificate and the error says why.
    public func reloadTLS() throws(ServerStartError) {
        guard configuration.tlsCertificatePath != nil else {
            throw ServerStartError(description: "this server serves plain HTTP (no --tls-cert): nothing to reload")
        }
        do {
            guard let files = try TLSFiles.read(configuration) else { return }
            try server.reloadTLS(certificate: files.certificate, key: files.key)
        } catch {
            throw ServerStartError(description: "the new certificate was not loaded, the previous one stays: \(error.description)")
        }
        log.info("TLS certificate reloaded from \(configuration.tlsCertificatePath ?? "")")
    }

    /// Every registered route: method and path pattern (`/notes/:id`).
    public var routes: [(method: String, path: String)] { server.router.table.map { ($0.method.rawValue, $0.path) } }

    /// The port in use (the real one when configured with 0).
    public var port: Int { server.port }

    /// Connections open now (every protocol).
    public var openConnections: Int { server.openConnections }

    /// Requests received and not yet completed (every protocol, every stream).
    public var requestsInFlight: Int { server.requestsInFlight }

    /// `http://host:port` of the running server.
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(configuration.tlsCertificatePath == nil ? "http" : "https")://\(host):\(port)"
    }
}

/// Builds the application for `configuration`: creates the data folder and registers every
/// route behind the shared middleware.
public func buildApplication(_ configuration: ServerConfiguration) throws -> Application {
    let log = Logger(accessLog: configuration.accessLog)
    do {
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
    } catch {
        throw ServerStartError(description: "cannot create the data folder '\(configuration.dataDirectory)': \(error)")
    }
    let notes: any DataStore
    do {
        notes = try openDataStore(configuration.store)
    } catch {
        throw ServerStartError(description: "cannot open the database \(configuration.store.databaseDescription): \(error)")
    }
    let tls = try TLSFiles.read(configuration)
    let events = EventBroadcaster(heartbeat: configuration.eventHeartbeat)
    // Every committed event — with PostgreSQL, those of every instance — reaches the streams
    // of its owner from here, in id order.
    notes.observeEvents { [notes] event, owner in
        events.publish(audience: owner.id) { try NoteRendering.event(event, owner: owner, store: notes) }
    }
    let metrics = Metrics()
    let resumable: ResumableUploads
    do {
        resumable = try ResumableUploads(
            store: notes, dataDirectory: configuration.dataDirectory,
            limits: .init(
                maxSize: configuration.maxUploadSize, lifetime: configuration.resumableUploadLifetime,
                perUser: configuration.resumableUploadsPerUser,
                bytesPerUser: configuration.resumableBytesPerUser),
            secure: tls != nil)
    } catch {
        throw ServerStartError(description: "cannot prepare resumable uploads in '\(configuration.dataDirectory)': \(error)")
    }
    var routes = RouterBuilder()
    do {
        routes.trustedProxies = try TrustedProxies(configuration.trustedProxies)
    } catch {
        throw ServerStartError(description: "--trusted-proxy: \(error)")
    }
    // Outermost first: every answer — refusals before routing included — gets its id, its log
    // line and its count; the configured middleware see every answer with errors rendered.
    routes.add(middleware: RequestIDMiddleware())
    routes.add(middleware: AccessLogMiddleware(log: log))
    routes.add(middleware: metrics)
    if tls != nil || !routes.trustedProxies.isEmpty { routes.add(middleware: StrictTransportSecurity(always: tls != nil)) }
    routes.add(
        middleware: BrowserProtection(
            listenHost: configuration.host, corsOrigins: configuration.corsOrigins,
            allowedHosts: configuration.allowedHosts))
    if !configuration.corsOrigins.isEmpty { routes.add(middleware: CORSMiddleware(origins: configuration.corsOrigins)) }
    for middleware in configuration.middleware { routes.add(middleware: middleware) }
    routes.add(middleware: ErrorMiddleware(log: log, translate: StoreErrors.http))
    HelloController().register(in: &routes)
    let gauges = ServerGauges(store: notes, dataDirectory: configuration.dataDirectory, events: events)
    metrics.addCollector { gauges.render() }
    let health = HealthController(
        metrics: metrics,
        check: HealthCheck(
            store: notes, dataDirectory: configuration.dataDirectory,
            minimumFreeBytes: configuration.minimumFreeSpace), log: log)
    health.register(in: &routes)
    // Limits: in memory with SQLite (one process), in a table every instance shares with PostgreSQL.
    let counters = notes.limitCounters
    let accounts = Accounts(
        store: notes, mode: configuration.effectiveAuth, events: events,
        refreshInterval: configuration.credentialRefreshInterval,
        hashing: PasswordHashing(
            width: configuration.passwordHashingWidth,
            queueLimit: configuration.passwordHashingQueue),
        failedChecksBurst: configuration.failedCredentialBurst,
        failedChecksRefillSeconds: configuration.failedCredentialRefillSeconds,
        tokensPerUser: configuration.tokensPerUser, counters: counters)
    let auth = AuthController(
        accounts: accounts, secureCookie: tls != nil,
        limiter: SignInLimiter(
            burst: configuration.signInBurst, interval: configuration.signInRefillSeconds,
            counters: counters))
    auth.registerSignIn(in: &routes, runs: notes.readPlace)
    // Everything that reads or changes someone's data: authenticated in the head phase, which
    // reads credentials and limits from the store — so these routes run where its reads do.
    routes.group { authenticated in
        authenticated.runs = notes.readPlace
        authenticated.add(
            middleware: AuthenticationMiddleware(
                accounts: accounts, requestsPerMinute: configuration.requestsPerMinute,
                requestsPerUserMinute: configuration.requestsPerUserMinute,
                counters: counters))
        // Keys on every POST and on a note's edit (PUT/PATCH: a merge sent again after a lost
        // answer is not merged twice). A new note, a note's edit and the rows of a multipart
        // upload claim the key in their own transaction, so no crash comes between the write and
        // the key (a resumable upload's creation claims it first).
        let isNoteEdit: @Sendable (Request) -> Bool = { ($0.method == .put || $0.method == .patch) && $0.path.hasPrefix("/notes/") }
        authenticated.add(
            middleware: IdempotencyMiddleware(
                store: notes,
                keyed: { request in
                    request.method == .post || isNoteEdit(request)
                },
                transactional: { request in
                    request.path == "/notes" || isNoteEdit(request) || (request.path == "/uploads" && !request.files.isEmpty)
                }))
        NotesController(
            store: notes, events: events, replayLimit: configuration.eventBacklog,
            streamsPerToken: configuration.eventStreamsPerToken, streamsPerUser: configuration.eventStreamsPerUser,
            mergeBudget: configuration.mergeWorkBurst > 0 && configuration.mergeWorkPerSecond > 0
                ? MergeBudget(
                    capacity: configuration.mergeWorkBurst, perSecond: configuration.mergeWorkPerSecond,
                    counters: MemoryLimitCounters(clock: configuration.mergeBudgetClock)) : nil
        ).register(in: &authenticated)
        UploadsController(store: notes, events: events, resumable: resumable).register(in: &authenticated)
        auth.register(in: &authenticated)
        authenticated.group { admin in
            admin.add(middleware: RequireAdmin(mode: accounts.mode))
            // Every route's counts and the store's sizes: an administrator's (anyone's under --auth off).
            health.registerMetrics(in: &admin)
            BackupController(store: notes, dataDirectory: configuration.dataDirectory).register(in: &admin)
            UsersController(accounts: accounts).register(in: &admin)
        }
    }
    EchoController().register(in: &routes)
    FormPageController().register(in: &routes)
    let openAPI = OpenAPIController()
    openAPI.register(in: &routes)
    WebController(auth: accounts.mode, canSignIn: { () throws(HTTPError) in try accounts.hasUsers() }, runs: notes.readPlace).register(in: &routes)
    var http = configuration.http
    http.temporaryDirectory = notes.temporaryDirectory
    http.tls = tls
    let router = routes.build()
    openAPI.publish(router)
    let server = HTTPServer(configuration: http, router: router, log: log)
    metrics.addCollector { [unowned server] in
        let open = server.openConnectionsByProtocol
        return "# HELP jotter_http_connections Connections open now, by protocol.\n# TYPE jotter_http_connections gauge\n"
            + "jotter_http_connections{protocol=\"HTTP/1\"} \(open.http1)\njotter_http_connections{protocol=\"HTTP/2\"} \(open.http2)\n"
    }
    return Application(
        configuration: configuration, server: server, log: log, notes: notes, events: events, accounts: accounts,
        resumable: resumable)
}
