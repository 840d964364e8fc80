import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

/// The Jotter API from Swift: notes, uploads, hello and echo, on `URLSession`.
///
/// One client per server; share it (it is `Sendable`), its connections are reused. Every
/// error is a `JotterClientError`; idempotent requests are retried as `RetryPolicy` says.
///
/// ```swift
/// let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:8080")!)
/// let greeting = try await client.hello(name: "Bob")           // "Hello Bob!"
/// let note = try await client.notes.create("Buy milk")
/// for try await note in client.notes.all() { print(note.id, note.body) }
/// ```
public final class JotterClient: Sendable {
    /// How the client talks to the server.
    public struct Configuration: Sendable {
        /// Connections kept open to the server at once. URLSession's default of 6 queues
        /// concurrent calls (64 at once: 5.9 s instead of 0.6 s measured on Linux).
        public var maximumConnectionsPerHost = 16
        /// Seconds without a byte from the server before a request fails (an idle timeout, not a
        /// deadline: long uploads and event streams are fine while data flows).
        public var requestTimeout: Double = 60
        /// Retries of idempotent requests.
        public var retry = RetryPolicy()
        /// Sent as `User-Agent` (instead of URLSession's, which names the libcurl version on Linux).
        public var userAgent = "JotterClient/\(JotterClient.version)"
        /// Extra headers on every request.
        public var headers: [String: String] = [:]
        /// An API token (`jot_…`) for the client to start with (`JotterClient.token`), sent as
        /// `Authorization: Bearer` on every request.
        public var token: String?
        /// Called with every request before it is sent (retries included), to change it: a
        /// token that is refreshed, a signature. Runs after `token` and `headers` are applied.
        ///
        /// ```swift
        /// configuration.adaptRequest = { request in
        ///     var request = request
        ///     request.setValue("Bearer \(await tokens.current())", forHTTPHeaderField: "Authorization")
        ///     return request
        /// }
        /// ```
        public var adaptRequest: (@Sendable (URLRequest) async throws -> URLRequest)?
        /// Which certificates an `https://` server may present: the system's store (the
        /// default), the authorities in a PEM file (a private CA), or any (`.insecure`).
        ///
        /// ```swift
        /// configuration.trust = .certificateAuthorities(URL(fileURLWithPath: "/etc/jotter/ca.pem"))
        /// ```
        public var trust: ServerTrust = .system

        /// The defaults above.
        public init() {}
    }

    /// What an `https://` server's certificate is checked against.
    ///
    /// On Linux, with anything but `.system` the SDK speaks TLS itself (OpenSSL over its own
    /// socket, one connection per request), since URLSession there verifies only against the
    /// system's store. On Apple platforms only `.system` is supported.
    public enum ServerTrust: Sendable, Equatable {
        /// The system's certificate authorities.
        case system
        /// Only the certificate authorities in this PEM file (as `curl --cacert`).
        case certificateAuthorities(URL)
        /// No verification at all: anyone on the way can read and change the traffic. For
        /// a test server only (as `curl --insecure`).
        case insecure
    }

    /// The SDK's version, in `User-Agent`.
    public static let version = JotterBuild.version

    /// The server, e.g. `http://127.0.0.1:8080`; a path prefix is kept (`https://host/jotter`).
    public let baseURL: URL
    /// How it talks to the server (as it was created: the token it sends now is `token`).
    public let configuration: Configuration
    /// The API token sent as `Authorization: Bearer` on every request from now on, nil for
    /// none: `configuration.token` at first, set by `signIn`, cleared by `signOut`, or set here.
    ///
    /// ```swift
    /// client.token = ProcessInfo.processInfo.environment["JOTTER_TOKEN"]
    /// ```
    public var token: String? {
        get { currentToken.withLock { $0 } }
        set { currentToken.withLock { $0 = newValue } }
    }
    private let currentToken: Mutex<String?>
    let session: URLSession
    let tasks: TaskRouter
    #if canImport(FoundationNetworking)
    /// Exchanges over a plain socket still running (`SocketExchange`).
    let sockets = SocketExchange.Counter()
    #endif

    /// A client for the server at `baseURL`.
    ///
    /// ```swift
    /// var configuration = JotterClient.Configuration()
    /// configuration.retry = .never
    /// let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:8080")!, configuration: configuration)
    /// ```
    public init(baseURL: URL, configuration: Configuration = Configuration()) {
        self.baseURL = baseURL
        self.configuration = configuration
        currentToken = Mutex(configuration.token)
        let settings = URLSessionConfiguration.ephemeral
        settings.httpMaximumConnectionsPerHost = configuration.maximumConnectionsPerHost
        settings.timeoutIntervalForRequest = configuration.requestTimeout
        settings.requestCachePolicy = .reloadIgnoringLocalCacheData
        settings.urlCache = nil
        settings.httpShouldSetCookies = false
        settings.httpAdditionalHeaders = Self.sessionHeaders(configuration)
        tasks = TaskRouter()
        session = URLSession(configuration: settings, delegate: tasks, delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// `GET /hello?name=…`: the server's greeting.
    ///
    /// ```swift
    /// try await client.hello(name: "Bob Smith")     // "Hello Bob Smith!"
    /// ```
    public func hello(name: String) async throws(JotterClientError) -> String {
        let request = makeRequest("GET", "/hello", query: ["name": name])
        return try await send(request, decoding: HelloMessage.self).value.message
    }

    /// `GET /healthz`: true when the server is ready (its database answers, its data folder is
    /// writable and has space), false when it answers that it is not (`503`, asked once, not
    /// retried). `health()` tells what was checked.
    public func isHealthy() async throws(JotterClientError) -> Bool {
        do throws(JotterClientError) {
            return try await health().status == "ok"
        } catch let error where error.status == 503 {
            return false
        }
    }

    /// `GET /healthz`, asked once: the status with each check and the free space; a server
    /// that is not ready throws its `503` (the failed checks are in the error's `detail`).
    public func health() async throws(JotterClientError) -> HealthStatus {
        let (data, _) = try await exchange(makeRequest("GET", "/healthz"))
        return try Self.decode(HealthStatus.self, from: data)
    }
}
