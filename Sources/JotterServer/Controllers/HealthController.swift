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

/// `GET /healthz`: ready or not, with each check; `GET /metrics`: Prometheus text.
///
/// Ready (`200 {"status":"ok","checks":{…},"free_bytes":N}`) when the store's checks pass (the
/// database answers a read; with PostgreSQL, also the blob store),
/// a file can be created in the data folder and at least `minimumFreeBytes` are free there;
/// otherwise `503` problem+json whose `detail` names what failed, with the same `checks` and
/// `free_bytes` members.
struct HealthController {
    let metrics: Metrics
    let check: HealthCheck

    func register(in routes: inout RouterBuilder) {
        let check = self.check
        // The checks ask the database: on a store thread when that is a round trip.
        routes.get("/healthz", runs: check.store.readPlace, operation: HealthOperations.health) { request, context -> Reply in
            let report = check.run()
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

/// What `/healthz` checks, against the store and its data folder.
struct HealthCheck: Sendable {
    struct Report {
        var checks: [String: String] = [:]
        var freeBytes: Int64?
        var failures: [String] { checks.filter { $0.value != "ok" }.map { "\($0.key): \($0.value)" }.sorted() }
    }

    let store: any DataStore
    let dataDirectory: String
    let minimumFreeBytes: Int64

    func run() -> Report {
        var report = Report()
        report.checks = store.health()
        // A blob store across the network (a bucket) says whether it can be reached.
        if let reachable = store.blobs.reachability() { report.checks["blob_store"] = reachable }
        report.checks["data_folder"] = Self.writable(store.temporaryDirectory)
        report.freeBytes = Self.freeBytes(dataDirectory)
        if let free = report.freeBytes {
            report.checks["free_space"] =
                free >= minimumFreeBytes
                ? "ok"
                : "only \(free) bytes free in the data folder (at least \(minimumFreeBytes) wanted)"
        } else {
            report.checks["free_space"] = "cannot tell the free space of the data folder: \(String(cString: strerror(errno)))"
        }
        return report
    }

    /// "ok" when a file can be created (and removed) in `folder`, else why not.
    static func writable(_ folder: String) -> String {
        let path = folder + "/healthz-" + SystemRandom.hex(bytes: 6)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "cannot create a file in \(folder): \(String(cString: strerror(errno)))" }
        close(fd)
        unlink(path)
        return "ok"
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
