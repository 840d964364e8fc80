import Foundation
import Glibc
import JotterTestSupport

/// The shared services of a scale-out: a fresh database (`SharedBackend`, dropped when the
/// last reference goes) and a fresh bucket of its own, on the servers scripts/test-services
/// started (make test runs the tests under it).
public struct ScaleOutBackend {
    static let environment = ProcessInfo.processInfo.environment
    /// Why the scale-out can't run here, or nil. In CI (`CI` set) it must run: missing
    /// services fail the tests instead of skipping them.
    public static let unavailable: String? = {
        guard !SharedBackend.available, environment["CI"]?.isEmpty ?? true else { return nil }
        return SharedBackend.skipMessage
    }()

    public let database: SharedBackend
    public var databaseURL: String { database.databaseURL }
    public let blobStoreURL: String
    /// What every instance runs with: the test's environment and the bucket's credentials.
    public var instanceEnvironment: [String: String] { database.processEnvironment }

    /// Creates the database and the bucket.
    public init() throws {
        database = try SharedBackend()
        let env = Self.environment
        func value(_ name: String) throws -> String {
            guard let value = env[name], !value.isEmpty else { throw RawHTTP.Failure(message: "\(name) is not set: run under scripts/test-services") }
            return value
        }
        let endpoint = try value("JOTTER_TEST_S3_ENDPOINT"), region = env["JOTTER_TEST_S3_REGION"] ?? "us-east-1"
        let key = try value("JOTTER_TEST_S3_ACCESS_KEY"), secret = try value("JOTTER_TEST_S3_SECRET_KEY")
        let bucket = "jotter-scale-\(UInt64.random(in: 0...UInt64.max) % 1_000_000_000_000)"
        let made = try runProgram([
            "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT",
            "--aws-sigv4", "aws:amz:\(region):s3", "--user", "\(key):\(secret)", "\(endpoint)/\(bucket)",
        ])
        guard made.status == 0, made.output == "200" else { throw RawHTTP.Failure(message: "creating bucket \(bucket) failed: \(made.output)") }
        blobStoreURL = "s3://\(bucket)?endpoint=\(endpoint)&region=\(region)"
    }
}

/// N `jotter serve` instances and a load balancer in front of them: nginx
/// (`contrib/nginx/jotter.conf`), HAProxy (`contrib/haproxy/jotter.cfg`) or none (one instance
/// served directly, killed and restarted on its port and folder all the same). Each instance has a
/// data folder of its own (its temp files); with a `ScaleOutBackend` they share the database and
/// the blob store. `stop()` ends everything, also when a test failed midway.
public final class ScaleOutCluster: @unchecked Sendable {
    /// The load balancer in front of the instances.
    public enum Balancer { case nginx, haproxy }

    public private(set) var backend: ScaleOutBackend?
    public private(set) var instances: [ServerProcess] = []
    private let folders: [URL]
    /// Set with `.nginx`.
    public private(set) var nginx: NginxProcess!
    /// Set with `.haproxy`.
    public private(set) var haproxy: HAProxyProcess!

    /// Starts `count` instances (on `backend`, or each on SQLite in its own folder) and `balancer` (`nil`: none).
    public init(instances count: Int, backend: ScaleOutBackend?, balancer: Balancer? = .nginx) throws {
        self.backend = backend
        folders = (0..<count).map { _ in
            FileManager.default.temporaryDirectory.appendingPathComponent("jotter-scale-\(UUID().uuidString)")
        }
        do {
            for index in 0..<count { instances.append(try start(index, port: 0)) }
            switch balancer {
            case .nginx: nginx = try NginxProcess(instances: instances.map(\.port))
            case .haproxy: haproxy = try HAProxyProcess(instances: instances.map(\.port))
            case nil: break
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    private func arguments(port: Int) -> [String] {
        var arguments = ["--port", "\(port)", "--quiet", "--threads", "2"]
        if let backend { arguments += ["--database", backend.databaseURL, "--blob-store", backend.blobStoreURL] }
        return arguments
    }

    private func start(_ index: Int, port: Int) throws -> ServerProcess {
        var environment = ProcessInfo.processInfo.environment
        environment.merge(backend?.instanceEnvironment ?? [:]) { $1 }
        return try ServerProcess(arguments(port: port), dataDirectory: folders[index], environment: environment)
    }

    /// Sends SIGKILL to instance `index` and waits for it to be gone.
    public func kill(_ index: Int) {
        instances[index].signal(SIGKILL)
        instances[index].waitUntilExit()
    }

    /// Starts instance `index` again on its port and data folder (after `kill`).
    public func restart(_ index: Int) throws {
        let port = instances[index].port
        instances[index] = try start(index, port: port)
    }

    /// Stops the load balancer and every instance (SIGTERM, then SIGKILL), removes their folders
    /// and drops the database (the bucket goes with SeaweedFS's folder when test-services ends).
    /// Idempotent.
    public func stop() {
        nginx?.stop()
        haproxy?.stop()
        for instance in instances where instance.isRunning {
            instance.signal(SIGTERM)
            let deadline = Date().addingTimeInterval(15)
            while instance.isRunning && Date() < deadline { usleep(10_000) }
            instance.signal(SIGKILL)
        }
        for instance in instances { _ = instance.finish() }
        instances = []
        for folder in folders { try? FileManager.default.removeItem(at: folder) }
        backend = nil
    }

    /// One request on a new connection to `port`: its final answer (interim ones skipped).
    public func request(
        _ port: Int, _ method: String, _ target: String, headers: [(String, String)] = [],
        body: [UInt8] = []
    ) throws -> WireResponse {
        let connection = try RawHTTP(port: port, timeout: 30)
        let first = try connection.request(method, target, headers: headers, body: body, close: true)
        guard (100..<200).contains(first.status) else { return first }
        return try connection.readFinalResponse(head: method == "HEAD")
    }

    /// `GET target` with curl (RawHTTP's debug build takes seconds over a body of megabytes):
    /// the status, the response headers (names lowercased) and the body.
    public func download(_ port: Int, _ target: String, headers: [(String, String)] = []) throws
        -> (status: Int, headers: [String: String], body: [UInt8])
    {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let body = folder.appendingPathComponent("body"), head = folder.appendingPathComponent("head")
        let run = try runProgram(
            ["curl", "-sS", "--max-time", "30", "-o", body.path, "-D", head.path]
                + headers.flatMap { ["-H", "\($0.0): \($0.1)"] } + ["http://127.0.0.1:\(port)\(target)"])
        guard run.status == 0 else { throw RawHTTP.Failure(message: "curl \(target) on \(port) failed: \(run.output)") }
        let lines = try String(contentsOf: head, encoding: .utf8).components(separatedBy: "\r\n")
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, fields, [UInt8](try Data(contentsOf: body)))
    }

    /// `POST /notes` to `port`; the new note's id.
    public func createNote(_ port: Int, _ body: String) throws -> String {
        let response = try request(
            port, "POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("body=\(body)".utf8))
        guard response.status == 201, let note = try response.json()["note"] as? [String: Any], let id = note["id"] as? String else {
            throw RawHTTP.Failure(message: "POST /notes to \(port) -> \(response.status) \(response.text)")
        }
        return id
    }

    /// The offset PostgreSQL records for the partial upload `id` (0 when it has no row).
    public func recordedOffset(_ id: String) throws -> Int {
        guard let backend else { return 0 }
        let run = try runProgram(["psql", "-qtAX", backend.databaseURL, "-c", "SELECT upload_offset FROM partial_uploads WHERE id = '\(id)'"])
        return Int(run.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// The value of gauge `name` in `/metrics` of the instance on `port`.
    public func gauge(_ port: Int, _ name: String) throws -> Double? {
        let text = try request(port, "GET", "/metrics").text
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            .flatMap { Double($0.split(separator: " ")[1]) }
    }
}
