import CMicroHTTPD
import Glibc
import Synchronization

/// The HTTP server: owns a libmicrohttpd daemon (internal epoll thread or pool) and runs each
/// request's `RequestLifecycle` on its threads.
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
        /// Engine threads: 1 is one epoll thread, more is a pool.
        public var threads: Int
        /// Open connections in all.
        public var connectionLimit: Int
        /// Open connections from one client address, so one address can't starve the rest.
        public var connectionsPerAddress: Int
        /// Seconds a connection may stay idle (keep-alive included) before it is closed.
        public var idleTimeout: Int
        /// Largest request body read into memory, in bytes.
        public var maxBodySize: Int
        /// Per-connection memory for the header section and read buffer, in bytes. Jotter refuses
        /// a head over 6,500 bytes (`431`; a target over 6,000 bytes `414`) while there is still
        /// room here to build the answer, so keep it at 8 KiB or more. libmicrohttpd zeroes the
        /// part it used after every request: at 12 KiB `GET /hello` cost 6.1k more instructions.
        public var connectionMemory: Int
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
        /// HTTPS (libmicrohttpd's GnuTLS): the PEM certificate chain and its private key; nil
        /// for plain HTTP.
        public var tls: (certificate: String, key: String)?
        /// Which HTTP engine serves plain HTTP: Jotter's own event loops (the default), or
        /// libmicrohttpd (being retired; still the one for HTTPS) when `JOTTER_HTTP_ENGINE` is
        /// `microhttpd`.
        public var engine: Engine = Engine.fromEnvironment

        public enum Engine: String, Sendable {
            case jotter, microhttpd

            static var fromEnvironment: Engine {
                getenv("JOTTER_HTTP_ENGINE").flatMap { Engine(rawValue: String(cString: $0)) } ?? .jotter
            }
        }

        public init(host: String = "127.0.0.1", port: Int = 8080, threads: Int = Configuration.cores,
                    connectionLimit: Int = 10_000, connectionsPerAddress: Int = 256, idleTimeout: Int = 30,
                    maxBodySize: Int = 1 << 20, connectionMemory: Int = 8 << 10, shutdownGracePeriod: Double = 10) {
            self.host = host
            self.port = port
            self.threads = threads
            self.connectionLimit = connectionLimit
            self.connectionsPerAddress = connectionsPerAddress
            self.idleTimeout = idleTimeout
            self.maxBodySize = maxBodySize
            self.connectionMemory = connectionMemory
            self.shutdownGracePeriod = shutdownGracePeriod
        }

        /// The number of online cores.
        public static var cores: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
    }

    /// The daemon pointer. libmicrohttpd's daemon functions are safe to call from any thread,
    /// and the pointer is only read while the `Mutex` is held.
    struct Daemon: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    public let configuration: Configuration
    public let router: Router
    let log: Logger
    private let daemon = Mutex<Daemon?>(nil)
    private let boundPort = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    let engine = EngineState()
    let watchdog: BodyWatchdog
    /// Keeps slow header sections from holding connections (see `jotter_guard_create`).
    private let guardian = Mutex<Guard?>(nil)
    struct Guard: @unchecked Sendable { let pointer: OpaquePointer }
    var wakers: WakerRegistry { engine.wakers }
    /// The limits every request's lifecycle works within.
    let limits: RequestLifecycle.Limits
    /// Jotter's own engine: its loops, counters and connection table.
    private let loops = Mutex<[EventLoop]>([])
    let counters = EngineCounters()
    let connections: ConnectionTable

    public init(configuration: Configuration, router: Router, log: Logger) {
        self.configuration = configuration
        self.router = router
        self.log = log
        watchdog = BodyWatchdog(minimumRate: configuration.minimumBodyRate, grace: configuration.headerTimeout)
        var limits = RequestLifecycle.Limits(maxBodySize: configuration.maxBodySize, maxUploadSize: configuration.maxUploadSize,
                                         maxParts: configuration.maxParts, temporaryDirectory: configuration.temporaryDirectory)
        limits.answersMidBody = configuration.engine == .jotter && configuration.tls == nil
        self.limits = limits
        connections = ConnectionTable(limit: configuration.connectionLimit, perAddress: configuration.connectionsPerAddress)
    }

    /// The port the server listens on (the real one when configured with 0).
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// Requests received and not yet completed.
    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// True once `shutdown()` has begun: streaming bodies end, later replies get the grace period.
    public var isStopping: Bool { engine.isStopping }

    /// Binds the socket and starts serving on the engine threads.
    public func start() throws(ServerStartError) {
        let fd = try ListeningSocket.open(host: configuration.host, port: configuration.port)
        if configuration.engine == .jotter, configuration.tls == nil {
            try startLoops(listener: fd)
            return
        }
        var config = jotter_mhd_config()
        config.listen_fd = fd
        config.threads = UInt32(max(1, configuration.threads))
        // Past the configured limit, each new connection pushes out the one that has waited
        // longest for its header section; the engine's own limit leaves room for that.
        let limit = max(1, configuration.connectionLimit)
        config.connection_limit = UInt32(limit + max(16, limit / 10))
        guard let guardPointer = jotter_guard_create(UInt32(max(0.001, configuration.headerTimeout) * 1000), UInt32(limit)) else {
            close(fd)
            throw ServerStartError(description: "cannot start the HTTP engine's connection guard")
        }
        config.guard = guardPointer
        config.per_ip_limit = UInt32(configuration.connectionsPerAddress)
        config.idle_timeout = UInt32(configuration.idleTimeout)
        config.connection_memory_limit = configuration.connectionMemory
        config.turbo = 1
        let cls = Unmanaged.passUnretained(self).toOpaque()
        config.handler = engineAccessHandler
        config.handler_cls = cls
        config.uri_log = engineURILog
        config.uri_log_cls = cls
        config.completed = engineRequestCompleted
        config.completed_cls = cls
        if configuration.tls != nil && jotter_mhd_supports_tls() == 0 {
            close(fd)
            jotter_guard_destroy(guardPointer)
            throw ServerStartError(description: "this libmicrohttpd was built without TLS: serve plain HTTP behind a TLS proxy instead")
        }
        let started: OpaquePointer?
        if let tls = configuration.tls {
            started = tls.certificate.withCString { certificate -> OpaquePointer? in
                tls.key.withCString { key -> OpaquePointer? in
                    config.tls_cert = certificate
                    config.tls_key = key
                    return jotter_mhd_start(&config)  // GnuTLS copies what it keeps
                }
            }
        } else {
            started = jotter_mhd_start(&config)
        }
        guard let started else {
            close(fd)
            jotter_guard_destroy(guardPointer)
            throw ServerStartError(description: configuration.tls == nil
                ? "cannot start the HTTP engine on \(ListeningSocket.display(configuration.host, configuration.port))"
                : "cannot start HTTPS on \(ListeningSocket.display(configuration.host, configuration.port)): is the key the certificate's, both in PEM?")
        }
        boundPort.store(ListeningSocket.port(of: fd), ordering: .relaxed)
        watchdog.start()
        guardian.withLock { $0 = Guard(pointer: guardPointer) }
        daemon.withLock { $0 = Daemon(pointer: started) }
    }

    /// Connections closed for taking longer than `headerTimeout` over a header section, pushed
    /// out to make room past `connectionLimit`, cut for a body below `minimumBodyRate`, and
    /// refused at the limit because no open connection could be pushed out.
    public var slowConnectionsClosed: (timedOut: Int, evicted: Int, slowBodies: Int, refused: Int) {
        if configuration.engine == .jotter, configuration.tls == nil {
            return (counters.timedOut.load(ordering: .relaxed), counters.evicted.load(ordering: .relaxed),
                    counters.slowBodies.load(ordering: .relaxed), counters.refused.load(ordering: .relaxed))
        }
        let counts = guardian.withLock { current in current.map { (Int(jotter_guard_timed_out($0.pointer)), Int(jotter_guard_evicted($0.pointer))) } }
        return (counts?.0 ?? 0, counts?.1 ?? 0, watchdog.slowBodies.load(ordering: .relaxed), 0)
    }

    /// Stops accepting connections, lets requests in flight finish (up to the grace period),
    /// then stops the engine. Safe to call more than once.
    public func shutdown() {
        if stopLoops() { return }
        guard let current = daemon.withLock({ $0 }) else { return }
        engine.stopping.store(true, ordering: .relaxed)
        let listener = MHD_quiesce_daemon(current.pointer)
        if listener >= 0 { close(listener) }
        // Streams end now; later replies (writes being committed) get the grace period.
        wakers.wakeAll(.stream)
        let deadline = Clock.microseconds() + UInt64(configuration.shutdownGracePeriod * 1_000_000)
        waitForRequests(until: deadline)
        let pending = inFlight.load(ordering: .acquiring)
        if pending > 0 {
            log.warning("stopping with \(pending) request(s) still in flight after the grace period")
            wakers.wakeAll(.later)
            waitForRequests(until: Clock.microseconds() + 1_000_000)
        }
        daemon.withLock { $0 = nil }
        MHD_stop_daemon(current.pointer)
        if let stopped = guardian.withLock({ current in defer { current = nil }; return current }) {
            jotter_guard_destroy(stopped.pointer)
        }
        watchdog.stop()
    }

    private func startLoops(listener fd: Int32) throws(ServerStartError) {
        var started: [EventLoop] = []
        for _ in 0..<max(1, configuration.threads) {
            started.append(try EventLoop(server: self, listener: fd))
        }
        listener.store(fd, ordering: .relaxed)
        boundPort.store(ListeningSocket.port(of: fd), ordering: .relaxed)
        loops.withLock { $0 = started }
        for loop in started { loop.start() }
    }

    private let listener = Atomic<Int32>(-1)

    /// Shuts Jotter's own engine down; false when it is not running.
    private func stopLoops() -> Bool {
        let running = loops.withLock { loops in defer { loops = [] }; return loops }
        guard !running.isEmpty else { return loops.withLock { _ in listener.load(ordering: .relaxed) == -2 } }
        engine.stopping.store(true, ordering: .relaxed)
        for loop in running { loop.post(.quiesce) }
        let deadline = Clock.microseconds() + UInt64(configuration.shutdownGracePeriod * 1_000_000)
        while inFlight.load(ordering: .acquiring) > 0, Clock.microseconds() < deadline {
            for loop in running { loop.post(.quiesce) }
            usleep(5_000)
        }
        let pending = inFlight.load(ordering: .acquiring)
        if pending > 0 { log.warning("stopping with \(pending) request(s) still in flight after the grace period") }
        for loop in running { loop.post(.stop) }
        for loop in running { loop.join() }
        let fd = listener.exchange(-2, ordering: .relaxed)
        if fd >= 0 { close(fd) }
        return true
    }

    private func waitForRequests(until deadline: UInt64) {
        while inFlight.load(ordering: .acquiring) > 0, Clock.microseconds() < deadline {
            wakers.wakeAll(.stream)
            usleep(5_000)
        }
    }

    deinit {
        shutdown()
    }
}
