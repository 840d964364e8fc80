import Foundation
import Glibc
import Synchronization

/// The built `jotter` binary running `serve` as a separate process, as a user would run it:
/// signals (`SIGTERM`, `kill -9`) are real, and so is a restart on the same data folder.
///
/// ```swift
/// let server = try ServerProcess(["--quiet"])
/// let response = try RawHTTP(port: server.port).request("GET", "/hello", close: true)
/// server.signal(SIGTERM)
/// let (status, log) = server.finish()
/// ```
///
/// Standard error is drained continuously (so a chatty server never blocks on a full pipe) and
/// handed back by `finish()`. One still running when released is killed with `SIGKILL`.
public final class ServerProcess: @unchecked Sendable {
    /// The `jotter` executable: the test bundle sits in the build products folder next to it
    /// (`swift build --build-tests` builds it).
    public static var binary: URL {
        var url = Bundle.main.bundleURL
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("jotter").path) {
            url.deleteLastPathComponent()
        }
        return url.appendingPathComponent("jotter")
    }

    /// The process.
    public let process: ChildProgram
    /// Its id.
    public var pid: pid_t { process.pid }
    /// The data folder given to `--data`.
    public let dataDirectory: URL
    /// The port it listens on (it was started with `--port 0`).
    public private(set) var port = 0

    private let stderrFD: Int32
    private let log = Mutex("")
    private let drained = DispatchSemaphore(value: 0)
    private let ownsDataDirectory: Bool

    /// Starts `jotter serve --port 0 --data DIR` plus `arguments` and waits for the line that says
    /// where it listens.
    ///
    /// - Parameters:
    ///   - dataDirectory: the data folder; `nil` makes a fresh temporary one that `finish()`
    ///     removes. A given folder is left in place (to restart on it).
    ///   - startTimeout: seconds to wait for the listening line.
    /// - Throws: when the binary is missing, or it exits or stays silent instead of listening
    ///   (the error carries what it wrote to standard error).
    public init(
        _ arguments: [String] = [], dataDirectory: URL? = nil, environment: [String: String]? = nil,
        startTimeout: Double = 15
    ) throws {
        ownsDataDirectory = dataDirectory == nil
        self.dataDirectory =
            dataDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("jotter-process-\(UUID().uuidString)")
        let binary = Self.binary
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw RawHTTP.Failure(message: "no jotter binary next to the tests (\(binary.path)); run `swift build --build-tests` first")
        }
        var ends: [Int32] = [0, 0]
        // (Every program the tests start gets only 0, 1 and 2: see `spawnProgram`.)
        guard pipe(&ends) == 0 else { throw RawHTTP.Failure(message: "pipe: \(String(cString: strerror(errno)))") }
        stderrFD = ends[0]
        do {
            process = try ChildProgram(
                [binary.path, "serve", "--port", "0", "--data", self.dataDirectory.path] + arguments,
                environment: environment ?? ProcessInfo.processInfo.environment,
                output: .discard, errors: .descriptor(ends[1]))
        } catch {
            close(ends[0]); close(ends[1])
            throw error
        }
        close(ends[1])

        // The first log line says where it listens.
        let fd = stderrFD
        let deadline = Date().addingTimeInterval(startTimeout)
        var text = ""
        var ended = false
        while !text.contains("\n") {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { break }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining, 1) * 1000))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { ended = true; break }
            text += String(decoding: chunk[..<count], as: UTF8.self)
        }
        log.withLock { $0 = text }
        if !ended {
            let thread = Thread { [self] in drain(fd) }
            thread.name = "jotter stderr"
            thread.start()
        } else {
            close(fd)
            drained.signal()
        }
        guard let range = text.range(of: #"https?://127\.0\.0\.1:(\d+)"#, options: .regularExpression),
            let port = Int(text[range].split(separator: ":").last!)
        else {
            process.signal(SIGKILL)
            let (_, log) = finish()
            throw RawHTTP.Failure(message: "jotter did not start listening within \(startTimeout) s; it wrote: \(log)")
        }
        self.port = port
    }

    /// A server still running when its last reference goes (a test that threw) is killed, so
    /// no test leaves a process behind.
    deinit {
        process.stop()
    }

    /// Whether it still runs (reaps it once it ended).
    public var isRunning: Bool { process.isRunning }

    /// Waits for it to end and reaps it.
    public func waitUntilExit() { process.waitUntilExit() }

    /// How it ended (after `waitUntilExit()` or `finish()`): by exiting or by a signal.
    public var terminationReason: Process.TerminationReason {
        guard let status = process.waitStatus else { preconditionFailure("the server still runs") }
        return status & 0x7F == 0 ? .exit : .uncaughtSignal
    }

    /// Its exit status, or the signal that ended it (see `terminationReason`).
    public var terminationStatus: Int32 {
        guard let status = process.waitStatus else { preconditionFailure("the server still runs") }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }

    /// Sends `signal` (e.g. `SIGTERM`, `SIGKILL`); true if it was delivered to a live process.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool { process.signal(signal) }

    /// Waits for the process to end; its exit status (or terminating signal, see
    /// `terminationReason`) and everything it wrote to standard error. Removes the data
    /// folder if this made it.
    @discardableResult
    public func finish() -> (status: Int32, log: String) {
        waitUntilExit()
        // EOF follows the exit unless a child kept the pipe open; don't hang on that.
        _ = drained.wait(timeout: .now() + 5)
        drained.signal()
        if ownsDataDirectory { try? FileManager.default.removeItem(at: dataDirectory) }
        return (terminationStatus, log.withLock { $0 })
    }

    /// Everything written to standard error so far.
    public var stderrText: String { log.withLock { $0 } }

    private func drain(_ fd: Int32) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            let text = String(decoding: chunk[..<count], as: UTF8.self)
            log.withLock { $0 += text }
        }
        close(fd)
        drained.signal()
    }
}
