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
        /// Per-connection memory for the header section and read buffer, in bytes; a header
        /// section that does not fit is answered `431`.
        public var connectionMemory: Int
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
    let watchdog = BodyWatchdog()
    var wakers: WakerRegistry { engine.wakers }
    /// The limits every request's lifecycle works within.
    let limits: RequestLifecycle.Limits

    public init(configuration: Configuration, router: Router, log: Logger) {
        self.configuration = configuration
        self.router = router
        self.log = log
        limits = RequestLifecycle.Limits(maxBodySize: configuration.maxBodySize, maxUploadSize: configuration.maxUploadSize,
                                         maxParts: configuration.maxParts, temporaryDirectory: configuration.temporaryDirectory)
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
        var config = jotter_mhd_config()
        config.listen_fd = fd
        config.threads = UInt32(max(1, configuration.threads))
        config.connection_limit = UInt32(configuration.connectionLimit)
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
            throw ServerStartError(description: configuration.tls == nil
                ? "cannot start the HTTP engine on \(ListeningSocket.display(configuration.host, configuration.port))"
                : "cannot start HTTPS on \(ListeningSocket.display(configuration.host, configuration.port)): is the key the certificate's, both in PEM?")
        }
        boundPort.store(ListeningSocket.port(of: fd), ordering: .relaxed)
        watchdog.start()
        daemon.withLock { $0 = Daemon(pointer: started) }
    }

    /// Stops accepting connections, lets requests in flight finish (up to the grace period),
    /// then stops the engine. Safe to call more than once.
    public func shutdown() {
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
        watchdog.stop()
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
