import Foundation
import Glibc

/// Debian's HAProxy running `contrib/haproxy/jotter.cfg` — the load balancer configuration that
/// passes a resumable upload's `104` on to the client (docs/deployment.md) — in front of jotter
/// instances, as a separate process in a temporary folder of its own (configuration and logs;
/// removed by `stop()`).
///
/// ```swift
/// let haproxy = try HAProxyProcess(instances: [first.port, second.port])
/// let response = try RawHTTP(port: haproxy.port).request("GET", "/healthz", close: true)
/// haproxy.stop()
/// ```
///
/// Only two things differ from the file as shipped: the `bind` line (a free loopback port) and
/// the `server` lines (one per instance, named by its address). A `global` section of its own,
/// read first, stands for the one of Debian's /etc/haproxy/haproxy.cfg: it sends the log to
/// standard output, a file here, whose lines say which instance answered (`accessLog()`). One
/// still running when released is stopped.
public final class HAProxyProcess: @unchecked Sendable {
    /// contrib/haproxy/jotter.cfg in this repository.
    public static let template = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("contrib/haproxy/jotter.cfg")

    /// The line of the template that the test replaces.
    public static let bindLine = "    bind :8080\n"
    /// How the template's instance lines start: the test drops them and writes its own at the
    /// end, in the `backend` section the template ends with.
    public static let serverPrefix = "    server "

    public let folder: URL
    public private(set) var port = 0
    private var process: ChildProgram?
    /// HAProxy's name of each instance (`instance1`, …) → its address, as in the access log.
    private let addresses: [String: String]

    /// Writes the configuration for `instances` (ports on 127.0.0.1) and starts HAProxy on a free
    /// port; returns once it accepts connections.
    /// - Throws: when HAProxy is missing, the template lacks its `bind` line or does not end with
    ///   its `backend` section, or HAProxy does not start (the error carries its output).
    public init(instances: [Int], startTimeout: Double = 10) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-haproxy-\(UUID().uuidString)")
        let haproxy = ["/usr/sbin/haproxy", "/usr/bin/haproxy"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let haproxy else { throw RawHTTP.Failure(message: "haproxy is not installed (scripts/install-deps --test installs it)") }
        let template = try String(contentsOf: Self.template, encoding: .utf8)
        guard template.contains(Self.bindLine) else {
            throw RawHTTP.Failure(message: "\(Self.template.path) has no line '\(Self.bindLine.dropLast())' to point at a test port")
        }
        let sections = template.split(separator: "\n").filter { !$0.hasPrefix(" ") && !$0.hasPrefix("#") && !$0.isEmpty }
        guard sections.last == "backend jotter" else {
            throw RawHTTP.Failure(message: "\(Self.template.path) does not end with its 'backend jotter' section, where the instances go")
        }
        addresses = Dictionary(uniqueKeysWithValues: instances.enumerated().map { ("instance\($0.offset + 1)", "127.0.0.1:\($0.element)") })
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try "global\n    log stdout format raw local0\n"
            .write(to: folder.appendingPathComponent("global.cfg"), atomically: true, encoding: .utf8)
        let kept = template.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix(Self.serverPrefix) }.joined(separator: "\n")
        let servers = instances.enumerated().map { "\(Self.serverPrefix)instance\($0.offset + 1) 127.0.0.1:\($0.element)\n" }.joined()

        // A port chosen free may be taken before HAProxy binds it: then it exits, and is tried on another.
        var lastOutput = ""
        for _ in 0..<3 {
            let port = try NginxProcess.freePort()
            let site = kept.replacingOccurrences(of: Self.bindLine, with: "    bind 127.0.0.1:\(port)\n")
            let configuration = (site.hasSuffix("\n") ? site : site + "\n") + servers
            try configuration.write(to: folder.appendingPathComponent("jotter.cfg"), atomically: true, encoding: .utf8)
            guard FileManager.default.createFile(atPath: logFile.path, contents: nil),
                FileManager.default.createFile(atPath: errorFile.path, contents: nil)
            else {
                throw RawHTTP.Failure(message: "cannot create HAProxy's log files in \(folder.path)")
            }
            // -db: in the foreground, one process; the files in order, global first.
            let process = try ChildProgram(
                [
                    haproxy, "-db", "-f", folder.appendingPathComponent("global.cfg").path,
                    "-f", folder.appendingPathComponent("jotter.cfg").path,
                ], output: .file(logFile), errors: .file(errorFile))
            self.process = process
            if ProxyProcess.accepts(port, while: process, timeout: startTimeout) {
                self.port = port
                return
            }
            lastOutput = errorLog
            stopProcess()
            guard lastOutput.contains("cannot bind socket") || lastOutput.contains("Address already in use") else { break }
        }
        try? FileManager.default.removeItem(at: folder)
        throw RawHTTP.Failure(message: "haproxy did not start; its output: \(lastOutput)")
    }

    deinit { stop() }

    private var logFile: URL { folder.appendingPathComponent("access.log") }
    private var errorFile: URL { folder.appendingPathComponent("error.log") }

    /// The process id (0 once stopped).
    public var pid: Int32 { process?.pid ?? 0 }

    /// Every request HAProxy has logged, once there are at least `count` lines (or `within`
    /// seconds have passed): a request is logged when it ends.
    public func accessLog(atLeast count: Int, within seconds: Double = 5) -> [NginxProcess.LogLine] {
        ProxyProcess.lines(atLeast: count, within: seconds, accessLog)
    }

    /// Every request HAProxy has logged so far, in `option httplog`'s format; the instance that
    /// answered (or was sent the request) as its address. Server state changes are left out.
    public func accessLog() -> [NginxProcess.LogLine] {
        let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            // 127.0.0.1:41242 [02/Dec/2026:06:02:45.098] jotter jotter/instance1 0/0/0/-1/312 -1 197 - - CD-- 1/1/0/0/0 0/0 "POST /uploads HTTP/1.1"
            let fields = line.split(separator: " ")
            let request = line.split(separator: "\"", omittingEmptySubsequences: false)
            guard fields.count > 6, request.count >= 2, let status = Int(fields[5]) else { return nil }
            let words = request[1].split(separator: " ")
            guard words.count >= 2 else { return nil }
            let server = fields[3].split(separator: "/").last.map(String.init) ?? ""
            let upstreams = addresses[server].map { [$0] } ?? []
            return NginxProcess.LogLine(status: status, method: String(words[0]), target: String(words[1]), upstreams: upstreams)
        }
    }

    /// HAProxy's warnings and alerts so far (its standard error).
    public var errorLog: String {
        (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
    }

    /// Stops HAProxy (SIGKILL: it keeps no state) and removes its folder. Idempotent.
    public func stop() {
        stopProcess()
        try? FileManager.default.removeItem(at: folder)
    }

    private func stopProcess() {
        guard let process else { return }
        self.process = nil
        ProxyProcess.stop(process, signal: SIGKILL, grace: 0)
    }
}
