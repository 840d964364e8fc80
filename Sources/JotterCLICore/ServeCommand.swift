#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import JotterServer
import JotterStore

/// `jotter serve`: runs the server until SIGINT or SIGTERM, then shuts down gracefully.
package struct ServeCommand: BlockingCommand {
    package static let name = "serve"
    package static let summary = "Serve the API and the web app."
    package static let help = """
    USAGE: jotter serve [options]

    Serves the Jotter API and web app until SIGINT or SIGTERM, then stops accepting,
    finishes the requests in flight and exits 0.

    OPTIONS (each also read from the environment variable shown):
      --host HOST                   Address to listen on (JOTTER_HOST, default 127.0.0.1).
      --port PORT                   Port, 0 for any free one (JOTTER_PORT, default 8080).
      --data DIR                    Data folder (JOTTER_DATA, default ./jotter-data).
      --threads N                   Engine threads (JOTTER_THREADS, default: number of cores).
      --max-body-size SIZE          Largest non-upload body, e.g. 1MiB (JOTTER_MAX_BODY_SIZE,
                                    default 1MiB).
      --max-upload-size SIZE        Largest sum of files in one upload, e.g. 1GiB
                                    (JOTTER_MAX_UPLOAD_SIZE, default 1GiB).
      --max-connections N           Open connections in all (JOTTER_MAX_CONNECTIONS, default 10000).
      --max-connections-per-address N
                                    Open connections from one client address
                                    (JOTTER_MAX_CONNECTIONS_PER_ADDRESS, default 256).
      --idle-timeout SECONDS        Close connections idle this long (JOTTER_IDLE_TIMEOUT, default 30).
      --synchronous full|normal     SQLite durability (JOTTER_SYNCHRONOUS, default full): full syncs
                                    every commit before it is acknowledged; normal may lose the
                                    last commits on power loss (not on a crash of jotter).
      --min-free-space SIZE         /healthz answers 503 below this much free space for the
                                    data folder (JOTTER_MIN_FREE_SPACE, default 64MiB).
      --quiet                       No access log (JOTTER_QUIET=1).
      -h, --help                    Show this help.

    """

    package var configuration = ServerConfiguration()

    package init(parsing arguments: inout Arguments) throws {
        let positive = { (text: String) -> Int? in Int(text).flatMap { $0 > 0 ? $0 : nil } }
        if let host = try arguments.option("host", environment: "JOTTER_HOST") { configuration.host = host }
        if let port = try arguments.option("port", environment: "JOTTER_PORT", as: "a port number from 0 to 65535", {
            Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } }) { configuration.port = port }
        if let data = try arguments.option("data", environment: "JOTTER_DATA") { configuration.dataDirectory = data }
        if let threads = try arguments.option("threads", environment: "JOTTER_THREADS", as: "a whole number from 1 to 256", {
            Int($0).flatMap { (1...256).contains($0) ? $0 : nil } }) { configuration.threads = threads }
        if let size = try arguments.option("max-body-size", environment: "JOTTER_MAX_BODY_SIZE", as: "a size such as 1048576 or 1MiB",
                                           { parseSize($0).flatMap { $0 > 0 ? $0 : nil } }) { configuration.maxBodySize = size }
        if let size = try arguments.option("max-upload-size", environment: "JOTTER_MAX_UPLOAD_SIZE", as: "a size such as 1GiB",
                                           { parseSize($0).flatMap { $0 > 0 ? $0 : nil } }) { configuration.maxUploadSize = Int64(size) }
        if let limit = try arguments.option("max-connections", environment: "JOTTER_MAX_CONNECTIONS", as: "a positive whole number", positive) {
            configuration.connectionLimit = limit
        }
        if let limit = try arguments.option("max-connections-per-address", environment: "JOTTER_MAX_CONNECTIONS_PER_ADDRESS",
                                            as: "a positive whole number", positive) {
            configuration.connectionsPerAddress = limit
        }
        if let timeout = try arguments.option("idle-timeout", environment: "JOTTER_IDLE_TIMEOUT", as: "a positive number of seconds", positive) {
            configuration.idleTimeout = timeout
        }
        if let mode = try arguments.option("synchronous", environment: "JOTTER_SYNCHRONOUS", as: "full or normal", {
            SQLiteNoteStore.Synchronous(rawValue: $0.uppercased()) }) { configuration.synchronous = mode }
        if let size = try arguments.option("min-free-space", environment: "JOTTER_MIN_FREE_SPACE", as: "a size such as 64MiB",
                                           parseSize) { configuration.minimumFreeSpace = Int64(size) }
        configuration.accessLog = !arguments.flag("quiet", environment: "JOTTER_QUIET")
        try arguments.finish()
    }

    package func run(console: Console) throws -> Int32 {
        // Block the stop signals before any engine thread exists, so every thread inherits the
        // mask and only `sigwait` below sees them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        raiseOpenFileLimit()

        let app = try buildApplication(configuration)
        try app.start()
        var received: Int32 = 0
        sigwait(&signals, &received)
        console.err("\(received == SIGINT ? "SIGINT" : "SIGTERM") received: finishing requests in flight, then stopping\n")
        app.shutdown()
        console.err("stopped\n")
        return ExitCode.success
    }

    /// Lifts the soft open-files limit to the hard limit: every connection is a descriptor.
    private func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
