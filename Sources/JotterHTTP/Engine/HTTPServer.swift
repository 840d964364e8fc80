import Glibc
import Synchronization
import JotterSystem

/// The HTTP server: the listening socket and one `EventLoop` per engine thread, which accept
/// connections and run each request's `RequestLifecycle` (docs/http-engine.md).
///
/// ```swift
/// let server = HTTPServer(configuration: .init(port: 0), router: routes.build(), log: Logger())
/// try server.start()
/// print(server.port)
/// server.shutdown()
/// ```
public final class HTTPServer: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        /// 0 picks a free port; read it from `HTTPServer.port` after `start()`.
        public var port: Int
        /// Event loops, one thread each (default: one per core).
        public var threads: Int
        /// Open connections in all.
        public var connectionLimit: Int
        /// Open connections from one client address, so one address can't starve the rest. A
        /// trusted proxy (`Router.trustedProxies`) is not limited: its connections are many
        /// clients' (the proxy limits those; contrib/nginx/jotter.conf's `limit_conn`).
        public var connectionsPerAddress: Int
        /// Seconds a connection may stay idle (keep-alive included) before it is closed.
        public var idleTimeout: Int
        /// Largest request body read into memory, in bytes.
        public var maxBodySize: Int
        /// Seconds a connection may take to send a request's header section, counted from its
        /// opening or from its previous request's end (as nginx's `client_header_timeout`).
        public var headerTimeout: Double = 10
        /// Bytes per second a request body must average once `headerTimeout` has passed since
        /// its header section; a slower body is cut (0: no minimum).
        public var minimumBodyRate = 512
        /// Seconds `shutdown()` waits for requests in flight.
        public var shutdownGracePeriod: Double
        /// Bytes of all file parts of one multipart request together.
        public var maxUploadSize: Int64 = 1 << 30
        /// Parts of one multipart request.
        public var maxParts = 1000
        /// Where multipart file parts are written while their request runs.
        public var temporaryDirectory = "/tmp"
        /// HTTPS (OpenSSL): the PEM certificate chain and its private key; nil for plain HTTP.
        public var tls: (certificate: String, key: String)?
        /// Bytes of HTTP/2 answers all connections together may hold (made, not yet written)
        /// before a connection that holds some begins no more streams until its client reads
        /// (docs/http-engine.md, "HTTP/2"). A connection that holds none always begins one.
        public var maxHeldAnswerBytes = 64 << 20
        /// Files HTTP/2 answers (downloads) may hold open at once, all connections together,
        /// before a connection that holds some begins no more streams; nil: the process's
        /// descriptor limit (`RLIMIT_NOFILE`) less one per connection of `connectionLimit` and
        /// `HeldAnswers.reservedDescriptors`, so that accepting a connection and answering it
        /// (`/healthz`) never finds the descriptors gone.
        public var maxHeldFiles: Int?

        public init(
            host: String = "127.0.0.1", port: Int = 8080, threads: Int = Configuration.cores,
            connectionLimit: Int = 10_000, connectionsPerAddress: Int = 256, idleTimeout: Int = 30,
            maxBodySize: Int = 1 << 20, shutdownGracePeriod: Double = 10
        ) {
            self.host = host
            self.port = port
            self.threads = threads
            self.connectionLimit = connectionLimit
            self.connectionsPerAddress = connectionsPerAddress
            self.idleTimeout = idleTimeout
            self.maxBodySize = maxBodySize
            self.shutdownGracePeriod = shutdownGracePeriod
        }

        /// The number of online cores.
        public static var cores: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
    }

    public let configuration: Configuration
    public let router: Router
    let log: Logger
    private let boundPort = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    /// Connections taken from the listener's queue at the stop (`stopLoops`) that their loop
    /// has not read yet: waited for as requests in flight are.
    let adopting = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// The limits every request's lifecycle works within.
    let limits: RequestLifecycle.Limits
    /// The event loops, their counters and the connection table they share.
    private let loops = Mutex<[EventLoop]>([])
    let counters = EngineCounters()
    /// The one clock of the server's engine (`CLOCK_MONOTONIC`): every loop's polls and sweeps,
    /// every connection's machine and every request read it, so any two of their times compare
    /// (the loops compare each other's oldest head waits).
    let clock = MachineClock.system
    let connections: ConnectionTable
    /// What HTTP/2 answers hold, all connections together, against the server's bounds.
    let held: HeldAnswers
    /// The TLS context new connections take (HTTPS only); `reloadTLS` replaces it.
    private let tls = Mutex<TLSContext?>(nil)

    public init(configuration: Configuration, router: Router, log: Logger) {
        self.configuration = configuration
        self.router = router
        self.log = log
        limits = RequestLifecycle.Limits(
            maxBodySize: configuration.maxBodySize, maxUploadSize: configuration.maxUploadSize,
            maxParts: configuration.maxParts, temporaryDirectory: configuration.temporaryDirectory)
        connections = ConnectionTable(
            limit: configuration.connectionLimit, perAddress: configuration.connectionsPerAddress,
            unlimited: router.trustedProxies)
        held = HeldAnswers(
            maxBytes: configuration.maxHeldAnswerBytes,
            maxFiles: configuration.maxHeldFiles ?? HeldAnswers.fileBudget(connectionLimit: configuration.connectionLimit))
    }

    /// Bytes of HTTP/2 answers held in memory now (made, not yet written), and files their
    /// answers hold open.
    public var heldAnswers: (bytes: Int, files: Int) {
        (held.bytes.load(ordering: .relaxed), held.files.load(ordering: .relaxed))
    }

    /// The loop, other than `loop`, whose oldest connection waiting for its head has waited
    /// longest — at least the 100 ms that make it evictable — as of that loop's last sweep.
    func loopToEvict(besides loop: EventLoop) -> EventLoop? {
        let now = clock.now()
        return loops.withLock { loops in
            loops.filter { $0 !== loop }
                .map { ($0, $0.oldestHeadWait.load(ordering: .relaxed)) }
                .filter { $0.1 != 0 && now >= $0.1 + 100_000 }
                .min { $0.1 < $1.1 }?.0
        }
    }

    /// The loop, other than `loop`, whose last sweep saw among its long-lived connections an
    /// address holding more than `count` connections — the heaviest such — or nil.
    func loopWithHeavierLongLived(than count: Int, besides loop: EventLoop) -> EventLoop? {
        loops.withLock { loops in
            loops.filter { $0 !== loop }.map { ($0, $0.heaviestLongLived.load(ordering: .relaxed)) }
                .filter { $0.1 > count }.max { $0.1 < $1.1 }?.0
        }
    }

    /// The ALPN protocols HTTPS offers, in order of preference.
    static let protocols = ["h2", "http/1.1"]

    /// The port the server listens on (the real one when configured with 0).
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// Connections open now, every protocol.
    public var openConnections: Int { connections.total }

    /// Connections open now, by the protocol they speak.
    public var openConnectionsByProtocol: (http1: Int, http2: Int) {
        let http2 = counters.http2Connections.load(ordering: .relaxed)
        return (max(0, connections.total - http2), http2)
    }

    /// Requests received and not yet completed.
    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// True once `shutdown()` has begun: streaming bodies end, later replies get the grace period.
    public var isStopping: Bool { stopping.load(ordering: .relaxed) }

    var tlsContext: TLSContext? { tls.withLock { $0 } }

    /// Binds the socket and starts the event loops.
    ///
    /// SIGPIPE is ignored in the whole process from here on: `sendfile(2)` and OpenSSL's socket
    /// writes take no `MSG_NOSIGNAL`, and a client that has gone would otherwise end the
    /// process hosting the server (a write to it fails with `EPIPE` instead).
    public func start() throws(ServerStartError) {
        signal(SIGPIPE, SIG_IGN)
        if let files = configuration.tls {
            do {
                let context = try TLSContext(certificate: files.certificate, key: files.key, protocols: Self.protocols)
                tls.withLock { $0 = context }
            } catch {
                throw ServerStartError(description: "cannot start HTTPS: \(error.description)")
            }
        }
        let fd = try ListeningSocket.open(host: configuration.host, port: configuration.port)
        try startLoops(listener: fd)
    }

    /// Replaces the certificate and key of an HTTPS server: connections accepted from now on use
    /// the new ones, open connections keep theirs. On an error the current ones stay.
    public func reloadTLS(certificate: String, key: String) throws(ServerStartError) {
        guard configuration.tls != nil else {
            throw ServerStartError(description: "this server serves plain HTTP: there is no certificate to reload")
        }
        let context = try TLSContext(certificate: certificate, key: key, protocols: Self.protocols)
        tls.withLock { $0 = context }
    }

    /// Of the connections pushed out, those that were long-lived: event streams, bodies being
    /// read, HTTP/2 streams waiting on their client.
    public var longLivedEvicted: Int { counters.evictedLongLived.load(ordering: .relaxed) }

    /// Connections closed for taking longer than `headerTimeout` over a header section, pushed
    /// out to make room past `connectionLimit`, cut for a body below `minimumBodyRate`, and
    /// refused at the limit because no open connection could be pushed out.
    public var slowConnectionsClosed: (timedOut: Int, evicted: Int, slowBodies: Int, refused: Int) {
        (
            counters.timedOut.load(ordering: .relaxed), counters.evicted.load(ordering: .relaxed),
            counters.slowBodies.load(ordering: .relaxed), counters.refused.load(ordering: .relaxed)
        )
    }

    /// Stops accepting connections, lets requests in flight finish (up to the grace period),
    /// then stops the loops. Safe to call more than once.
    public func shutdown() {
        stopLoops()
    }

    private func startLoops(listener fd: Int32) throws(ServerStartError) {
        var started: [EventLoop] = []
        for _ in 0..<max(1, configuration.threads) {
            started.append(try EventLoop(server: self, listener: fd))
        }
        listener.store(fd, ordering: .relaxed)
        boundPort.store(ListeningSocket.port(of: fd), ordering: .relaxed)
        loops.withLock { $0 = started }
        for (index, loop) in started.enumerated() {
            do throws(SystemThread.StartError) {
                try loop.start()
            } catch {
                // Those running stop again (and the listener closes): a server starts whole or not at all.
                loops.withLock { $0 = Array(started[..<index]) }
                stopLoops()
                throw ServerStartError(description: "cannot start the engine's threads (\(error))")
            }
        }
    }

    private let listener = Atomic<Int32>(-1)

    private func stopLoops() {
        let running = loops.withLock { loops in
            defer { loops = [] }; return loops
        }
        guard !running.isEmpty else { return }
        // Stop listening now, not after the grace period: a socket the loops no longer accept
        // from still takes connections into its backlog, whose clients send their requests and
        // are reset when it closes — a POST that may or may not have run, as far as they (or a
        // load balancer, which then answers 502) can tell. Refused, they go elsewhere at once.
        // What the kernel queued and no loop accepted yet is taken first, once and without
        // waiting: the shutdown resets those connections, whose clients connected and sent their
        // requests. The loops serve them as their own (`.adopt`), answered with
        // `Connection: close` as every open connection is at a stop.
        let listening = listener.load(ordering: .relaxed)
        var queued: [ListeningSocket.Accepted] = []
        if listening >= 0 {
            queued = ListeningSocket.acceptQueued(listening)
            Glibc.shutdown(listening, Int32(SHUT_RDWR))
        }
        stopping.store(true, ordering: .relaxed)
        adopting.add(queued.count, ordering: .relaxed)
        for (index, accepted) in queued.enumerated() { running[index % running.count].post(.adopt(fd: accepted.fd, address: accepted.address)) }
        for loop in running { loop.post(.quiesce) }
        let deadline = clock.now() + UInt64(configuration.shutdownGracePeriod * 1_000_000)
        while inFlight.load(ordering: .acquiring) > 0 || adopting.load(ordering: .acquiring) > 0, clock.now() < deadline {
            for loop in running { loop.post(.quiesce) }
            usleep(5_000)
        }
        let pending = inFlight.load(ordering: .acquiring)
        if pending > 0 { log.warning("stopping with \(pending) request(s) still in flight after the grace period") }
        for loop in running { loop.post(.stop) }
        for loop in running { loop.join() }
        let fd = listener.exchange(-1, ordering: .relaxed)
        if fd >= 0 { close(fd) }
    }

    deinit {
        shutdown()
    }
}

/// What HTTP/2 answers hold, all connections together: bytes made and not yet written, and
/// files open. Past either bound a connection that holds some begins no new stream until it
/// holds less (`HTTP2StateMachine`'s parked streams); a connection that holds none still does.
final class HeldAnswers: Sendable {
    let bytes = Atomic<Int>(0)
    let files = Atomic<Int>(0)
    let maxBytes: Int
    let maxFiles: Int

    /// Descriptors left for everything but connections and answers' files: the listening
    /// socket, epoll and eventfds, the store, logs, temporary files of uploads.
    static let reservedDescriptors = 256

    init(maxBytes: Int, maxFiles: Int) {
        self.maxBytes = maxBytes
        self.maxFiles = maxFiles
    }

    /// The files answers may hold when the process may open `RLIMIT_NOFILE` descriptors and
    /// `connectionLimit` connections hold one each (at least 64).
    static func fileBudget(connectionLimit: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return 1 << 20 }
        return max(64, Int(limit.rlim_cur) - connectionLimit - reservedDescriptors)
    }

    func add(bytes: Int, files: Int) {
        if bytes != 0 { self.bytes.add(bytes, ordering: .relaxed) }
        if files != 0 { self.files.add(files, ordering: .relaxed) }
    }

    /// Either bound is reached.
    var exhausted: Bool {
        bytes.load(ordering: .relaxed) >= maxBytes || files.load(ordering: .relaxed) >= maxFiles
    }
}
