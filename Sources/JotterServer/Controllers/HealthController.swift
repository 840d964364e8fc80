#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import JotterAPI
import JotterBlobs
import JotterHTTP
import JotterStore
import JotterSystem
import Synchronization

/// `GET /healthz`: ready or not, with each check; `GET /metrics`: Prometheus text.
///
/// Ready (`200 {"status":"ok","checks":{…},"free_bytes":N}`) when the store's checks pass (the
/// database answers a read; with PostgreSQL, also the blob store),
/// a file can be created in the data folder and at least `minimumFreeBytes` are free there;
/// otherwise `503` problem+json whose `detail` names what failed, with the same `checks` and
/// `free_bytes` members.
///
/// `/healthz` needs no credentials, so its answer says which check failed but not the
/// database's or the bucket's error text (it names hosts) nor the data folder's path: the log
/// has those, one line when the checks start failing or fail otherwise, one when they pass again.
struct HealthController {
    let metrics: Metrics
    let check: HealthCheck
    let log: Logger

    func register(in routes: inout RouterBuilder) {
        let check = self.check
        let changes = HealthChanges(log: log)
        // The checks ask the database: on a store thread when that is a round trip.
        routes.get("/healthz", runs: check.store.readPlace, operation: HealthOperations.health) { request, context -> Reply in
            let report = check.run()
            changes.note(report)
            guard report.failures.isEmpty else {
                return .now(HealthProblem(report: report, requestID: context.requestID).response())
            }
            return try JSON(HealthStatus(status: "ok", checks: report.checks, freeBytes: report.freeBytes)).reply(for: request)
        }
    }

    /// `/metrics`, registered apart: it needs credentials when they are required.
    func registerMetrics(in routes: inout RouterBuilder) {
        let metrics = self.metrics
        // The gauges count what is stored: on a store thread when that is a round trip.
        routes.get("/metrics", runs: check.store.readPlace, operation: HealthOperations.metrics) { request, _ in
            Response(status: .ok, contentType: Metrics.contentType, body: Array(metrics.render().utf8))
        }
    }
}

/// Logs the health checks' failures when the checks that fail change, so that a load
/// balancer asking every few seconds gives one line per outage, not one per question (nor one
/// per byte while free space runs low).
final class HealthChanges: Sendable {
    private let log: Logger
    private let failing = Mutex<[String]>([])

    init(log: Logger) { self.log = log }

    func note(_ report: HealthCheck.Report) {
        let now = report.checks.filter { $0.value != "ok" }.keys.sorted()
        let before = failing.withLock { failing in
            defer { failing = now }
            return failing
        }
        guard now != before else { return }
        if now.isEmpty {
            log.info("/healthz: ready again")
        } else {
            log.warning("/healthz: not ready: " + report.reasons.joined(separator: "; "))
        }
    }
}

/// What `/healthz` checks, against the store and its data folder.
struct HealthCheck: Sendable {
    struct Report {
        /// Each check's state as the answer shows it: `ok`, or what failed without a host,
        /// a path or a driver's message.
        var checks: [String: String] = [:]
        /// Each failed check's whole reason, for the log.
        var detailed: [String: String] = [:]
        var freeBytes: Int64?
        var failures: [String] { Self.failures(checks) }
        var reasons: [String] { Self.failures(detailed) }

        /// `name: reason` of each check that is not `ok`, sorted.
        static func failures(_ checks: [String: String]) -> [String] {
            checks.filter { $0.value != "ok" }.map { "\($0.key): \($0.value)" }.sorted()
        }

        /// Records one check: `reason` is `ok` or the whole reason; `shown` what the answer says
        /// of a failure.
        mutating func record(_ name: String, _ reason: String, shown: @autoclosure () -> String) {
            detailed[name] = reason
            checks[name] = reason == "ok" ? "ok" : shown()
        }
    }

    let store: any DataStore
    let dataDirectory: String
    let minimumFreeBytes: Int64

    func run() -> Report {
        var report = Report()
        for (name, reason) in store.health() {
            report.record(name, reason, shown: "unavailable (the server's log says why)")
        }
        // A blob store across the network (a bucket) says whether it can be reached.
        if let reachable = store.blobs.reachability() {
            report.record("blob_store", reachable, shown: "unreachable (the server's log says why)")
        }
        let writable = Self.writable(store.temporaryDirectory)
        report.record(
            "data_folder", writable.map { "cannot create a file in \(store.temporaryDirectory): \($0)" } ?? "ok",
            shown: "cannot create a file in the data folder: \(writable ?? "")")
        report.freeBytes = Self.freeBytes(dataDirectory)
        if let free = report.freeBytes {
            let reason = free >= minimumFreeBytes ? "ok" : "only \(free) bytes free in the data folder (at least \(minimumFreeBytes) wanted)"
            report.record("free_space", reason, shown: reason)
        } else {
            let reason = "cannot tell the free space of the data folder: \(String(cString: strerror(errno)))"
            report.record("free_space", reason, shown: reason)
        }
        return report
    }

    /// Nil when a file can be created (and removed) in `folder`, else the system's reason.
    static func writable(_ folder: String) -> String? {
        let path = folder + "/healthz-" + SystemRandom.hex(bytes: 6)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        close(fd)
        unlink(path)
        return nil
    }

    /// Bytes available to unprivileged writers on the file system of `folder`.
    static func freeBytes(_ folder: String) -> Int64? {
        var info = statvfs()
        guard statvfs(folder, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}

/// The `503` answer: a problem document (RFC 9457) with the checks as extension members.
private struct HealthProblem: Encodable {
    var type = "about:blank"
    var title = HTTPStatus.serviceUnavailable.reasonPhrase
    var status = 503
    var detail: String
    var checks: [String: String]
    var freeBytes: Int64?
    var requestID: String

    enum CodingKeys: String, CodingKey {
        case type, title, status, detail, checks
        case freeBytes = "free_bytes"
        case requestID = "request_id"
    }

    init(report: HealthCheck.Report, requestID: String) {
        detail = "not ready: " + report.failures.joined(separator: "; ")
        checks = report.checks
        freeBytes = report.freeBytes
        self.requestID = requestID
    }

    func response() -> Response {
        let body = (try? JSONCoding.encoder.encode(self)).map { [UInt8]($0) } ?? []
        var response = Response(status: .serviceUnavailable, contentType: "application/problem+json", body: body)
        response.headers.set("Retry-After", "5")
        return response
    }
}
