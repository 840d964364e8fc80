import Foundation
import Glibc

/// Debian's nginx running `contrib/nginx/jotter.conf` — the load balancer configuration that
/// docs/deployment.md describes — in front of jotter instances, as a separate process in a
/// temporary folder of its own (configuration, pid file, logs, temp files; removed by `stop()`).
///
/// ```swift
/// let nginx = try NginxProcess(instances: [first.port, second.port])
/// let response = try RawHTTP(port: nginx.port).request("GET", "/healthz", close: true)
/// nginx.stop()
/// ```
///
/// Only two things differ from the file as shipped: the `listen` line (a free loopback port)
/// and the instances file it includes. The wrapping `nginx.conf` adds what a system nginx has
/// in /etc/nginx/nginx.conf (pid, logs, temp folders), plus an access log whose lines say
/// which instance answered (`accessLog()`). One still running when released is stopped.
public final class NginxProcess: @unchecked Sendable {
    /// One line of the access log.
    public struct LogLine: Sendable, CustomStringConvertible {
        public var status: Int
        public var method: String
        public var target: String
        /// The instances tried, in order (`127.0.0.1:PORT`), as nginx's `$upstream_addr`.
        public var upstreams: [String]
        public var description: String { "\(status) \(method) \(target) via \(upstreams.joined(separator: ", "))" }
    }

    /// contrib/nginx/jotter.conf in this repository.
    public static let template = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("contrib/nginx/jotter.conf")

    /// The line of the template that the test replaces.
    public static let listenLine = "    listen 8080;\n"

    public let folder: URL
    public private(set) var port = 0
    private var process: ChildProgram?

    /// Writes the configuration for `instances` (ports on 127.0.0.1) and starts nginx on a free
    /// port; returns once it accepts connections.
    /// - Throws: when nginx is missing, the template lacks its `listen` line, or nginx does not
    ///   start (the error carries its error log).
    public init(instances: [Int], startTimeout: Double = 10) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-nginx-\(UUID().uuidString)")
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let nginx else { throw RawHTTP.Failure(message: "nginx is not installed (scripts/install-deps --test installs it)") }
        let template = try String(contentsOf: Self.template, encoding: .utf8)
        guard template.contains(Self.listenLine) else {
            throw RawHTTP.Failure(message: "\(Self.template.path) has no line '\(Self.listenLine.dropLast())' to point at a test port")
        }
        for directory in ["", "temp/client", "temp/proxy", "temp/fastcgi", "temp/uwsgi", "temp/scgi"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        try instances.map { "server 127.0.0.1:\($0) max_fails=1 fail_timeout=5s;\n" }.joined()
            .write(to: folder.appendingPathComponent("jotter-instances.conf"), atomically: true, encoding: .utf8)

        // A port chosen free may be taken before nginx binds it: then it exits, and is tried on another.
        var lastLog = ""
        for _ in 0..<3 {
            let port = try Self.freePort()
            let site = template.replacingOccurrences(of: Self.listenLine, with: "    listen 127.0.0.1:\(port);\n")
            try site.write(to: folder.appendingPathComponent("jotter.conf"), atomically: true, encoding: .utf8)
            try mainConfiguration().write(to: folder.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            let process = try ChildProgram(
                [
                    nginx, "-p", folder.path + "/", "-c", folder.appendingPathComponent("nginx.conf").path,
                    "-e", folder.appendingPathComponent("error.log").path,
                ], output: .discard)
            self.process = process
            if ProxyProcess.accepts(port, while: process, timeout: startTimeout) {
                self.port = port
                return
            }
            lastLog = (try? String(contentsOf: folder.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
            stopProcess()
            guard lastLog.contains("Address already in use") else { break }
        }
        try? FileManager.default.removeItem(at: folder)
        throw RawHTTP.Failure(message: "nginx did not start; its error log: \(lastLog)")
    }

    deinit { stop() }

    /// What /etc/nginx/nginx.conf gives a system nginx, in this folder; then jotter.conf.
    private func mainConfiguration() -> String {
        let path = folder.path
        // As root the workers would run as `nobody`, who cannot write the temp folders here.
        let user = geteuid() == 0 ? "user root;\n" : ""
        return """
            \(user)daemon off;
            worker_processes 1;
            pid \(path)/nginx.pid;
            error_log \(path)/error.log warn;
            events { worker_connections 4096; }
            http {
                log_format jotter_test '$status $request_method "$request_uri" "$upstream_addr"';
                access_log \(path)/access.log jotter_test;
                client_body_temp_path \(path)/temp/client;
                proxy_temp_path \(path)/temp/proxy;
                fastcgi_temp_path \(path)/temp/fastcgi;
                uwsgi_temp_path \(path)/temp/uwsgi;
                scgi_temp_path \(path)/temp/scgi;
                include jotter.conf;
            }

            """
    }

    /// The master's process id (0 once stopped).
    public var pid: Int32 { process?.pid ?? 0 }

    /// Every request nginx has logged, once there are at least `count` lines (or `within`
    /// seconds have passed): nginx writes a request's line after its last byte has gone, so a
    /// client that has its answer may read the log a moment before the line is there.
    public func accessLog(atLeast count: Int, within seconds: Double = 5) -> [LogLine] {
        ProxyProcess.lines(atLeast: count, within: seconds, accessLog)
    }

    /// Every request nginx has logged so far (a request is logged when it ends).
    public func accessLog() -> [LogLine] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            // 502 POST "/notes" "127.0.0.1:4001, 127.0.0.1:4002"
            let quoted = line.split(separator: "\"", omittingEmptySubsequences: false)
            let head = line.split(separator: " ")
            guard quoted.count >= 4, head.count >= 2, let status = Int(head[0]) else { return nil }
            let upstreams = quoted[3].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { $0 != "-" && !$0.isEmpty }
            return LogLine(status: status, method: String(head[1]), target: String(quoted[1]), upstreams: upstreams)
        }
    }

    /// nginx's error log so far.
    public var errorLog: String {
        (try? String(contentsOf: folder.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// Stops nginx (SIGTERM, its fast shutdown: open event streams are cut; SIGKILL after 5 s) and removes
    /// its folder. Idempotent.
    public func stop() {
        stopProcess()
        try? FileManager.default.removeItem(at: folder)
    }

    private func stopProcess() {
        guard let process else { return }
        self.process = nil
        ProxyProcess.stop(process, signal: SIGTERM, grace: 5)
    }

    /// A loopback port free at this moment.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTP.Failure(message: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw RawHTTP.Failure(message: "bind to a free port failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
