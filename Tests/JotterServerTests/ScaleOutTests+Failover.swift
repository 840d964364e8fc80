import Foundation
import Glibc
import JotterServerTestSupport
import JotterTestSupport
import Synchronization
import Testing

/// Issue 31 item 3 and issue 35 item 27: one of two instances on PostgreSQL + S3 behind
/// contrib/haproxy/jotter.cfg is killed (`kill -9`) or stopped (SIGTERM) under a load of clients
/// that retry as the Swift SDK does (`RetryPolicy`: the same `Idempotency-Key` on connection
/// loss, `408`, `429`, `502`, `503`, `504`, and `409` with `Retry-After`). Before: the survivor
/// held requests 10 s and closed them without a status, a key claimed by the dead instance
/// answered `409` for five minutes, and HAProxy closed client connections without an answer at
/// a SIGTERM.
extension ScaleOutTests {
    enum Outage: String, CaseIterable, Sendable { case kill, terminate }

    @Test(
        "an instance killed or stopped under keyed load through HAProxy: 0 client-visible errors, 0 duplicate notes, every acknowledged write kept",
        arguments: Outage.allCases)
    func failoverThroughHAProxy(outage: Outage) throws {
        let cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend(), balancer: .haproxy)
        defer { cluster.stop() }
        let database = try #require(cluster.backend?.databaseURL)
        let load = KeyedLoad(port: cluster.haproxy.port, clients: 6)
        usleep(1_500_000)
        let before = load.acknowledgedCount
        switch outage {
        case .kill: cluster.kill(0)
        case .terminate:
            cluster.instances[0].signal(SIGTERM)
            cluster.instances[0].waitUntilExit()
        }
        usleep(3_000_000)
        let result = load.stop()
        #expect(before > 20, "the load was running before the outage (\(before) writes acknowledged)")
        #expect(result.acknowledged.count - before > 20, "and after it")
        #expect(result.errors.isEmpty, "client-visible errors: \(result.errors.prefix(10))")

        let run = try runProgram(["psql", "-qtAX", database, "-c", "SELECT id || ' ' || body FROM notes"])
        try #require(run.status == 0, "psql: \(run.output)")
        var bodies: [String: [String]] = [:]
        for line in run.output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { continue }
            bodies[String(parts[1]), default: []].append(String(parts[0]))
        }
        let duplicates = bodies.filter { $0.value.count > 1 && $0.key.hasPrefix("create-") }
        #expect(duplicates.isEmpty, "notes created twice: \(duplicates.prefix(5))")
        let stored = Dictionary(bodies.flatMap { body, ids in ids.map { ($0, body) } }, uniquingKeysWith: { first, _ in first })
        let missing = result.acknowledged.filter { stored[$0.id] != $0.body }
        #expect(missing.isEmpty, "acknowledged writes not in the database as acknowledged: \(missing.prefix(10))")
        print(
            "ScaleOutTests failover (\(outage)): \(result.acknowledged.count) writes acknowledged, \(result.retries) retries,"
                + " \(result.errors.count) errors, \(duplicates.count) duplicates, \(missing.count) missing")
    }
}

extension ScaleOutTests {
    /// Requests an instance took and never answered, because it died (stopped, then killed:
    /// every connection HAProxy had sent a request on is reset) — what a SIGTERM's close of an
    /// idle keep-alive connection does to a request crossing it. HAProxy resends each to the
    /// other instance itself, a keyed POST and a PUT as well as a GET, so a client that does
    /// not retry sees no `502`. Before contrib/haproxy/jotter.cfg held note bodies whole
    /// (`wait-for-body`), HAProxy resent only requests without a body: the POSTs and PUTs were
    /// `502` (operator trial, REPORT F2: 7 in 6 rolling restarts).
    @Test("requests an instance never answered before it died are resent by HAProxy: keyed POST, PUT and GET, no 502")
    func haproxyResendsUnansweredRequests() throws {
        let cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend(), balancer: .haproxy)
        defer { cluster.stop() }
        let port = cluster.haproxy.port
        let id = try cluster.createNote(port, "before")
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        let requests: [(method: String, target: String, headers: [(String, String)], body: String)] = (0..<3).flatMap { round in
            [
                ("POST", "/notes", form + [("Idempotency-Key", UUID().uuidString)], "body=resent-\(round)"),
                ("PUT", "/notes/\(id)", form, "body=edit-\(round)"),
                ("GET", "/notes/\(id)", [], ""),
            ]
        }
        #expect(cluster.instances[0].signal(SIGSTOP))
        let answers = Mutex<[String]>([])
        let finished = DispatchGroup()
        for request in requests {
            finished.enter()
            Thread {
                defer { finished.leave() }
                let answer: String
                do {
                    // The head, then the body a moment later, as curl, browsers and Python send
                    // them: HAProxy passes the head on before the body arrives.
                    let connection = try RawHTTP(port: port, timeout: 30)
                    let fields = (request.headers + [("Content-Length", "\(request.body.utf8.count)")])
                        .map { "\($0.0): \($0.1)\r\n" }.joined()
                    try connection.send("\(request.method) \(request.target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\(fields)\r\n")
                    usleep(50_000)
                    if !request.body.isEmpty { try connection.send(request.body) }
                    answer = "\(try connection.readResponse().status)"
                } catch {
                    answer = "\(error)"
                }
                answers.withLock { $0.append("\(request.method) \(request.target) \(request.body): \(answer)") }
            }.start()
            // One at a time, each on a connection of its own: round robin sends every other one to
            // the stopped instance, whose kernel still accepts the connection.
            usleep(100_000)
        }
        usleep(1_000_000)
        let early = answers.withLock { $0.count }
        cluster.kill(0)
        #expect(finished.wait(timeout: .now() + 30) == .success, "answered: \(answers.withLock { $0 })")
        let all = answers.withLock { $0 }
        #expect(early < requests.count, "some requests went to the stopped instance (\(early) of \(requests.count) answered before the kill)")
        let failed = all.filter { !($0.hasSuffix(": 200") || $0.hasSuffix(": 201")) }
        #expect(failed.isEmpty, "not resent: \(failed)")
        let notes = try cluster.request(port, "GET", "/notes?limit=100")
        let bodies = ((try notes.json()["notes"] as? [[String: Any]]) ?? []).compactMap { $0["body"] as? String }
        #expect(Set(bodies.filter { $0.hasPrefix("resent-") }).count == 3 && bodies.filter { $0.hasPrefix("resent-") }.count == 3, "\(bodies)")
    }
}

/// Keep-alive clients through a proxy, each on a thread of its own: keyed creates (a unique
/// body each) and updates of their own notes, retried as the SDK's `RetryPolicy` does. What
/// each acknowledged, last write per note; the requests that failed for good.
final class KeyedLoad: @unchecked Sendable {
    struct Written: Sendable {
        var id: String
        var body: String
    }

    private let running = Atomic<Bool>(true)
    private let state = Mutex<(written: [String: String], errors: [String], retries: Int)>(([:], [], 0))
    private let finished = DispatchGroup()

    init(port: Int, clients: Int) {
        for index in 0..<clients {
            finished.enter()
            let thread = Thread { [self] in
                defer { finished.leave() }
                var connection: RawHTTP?
                var mine: [String] = []
                var step = 0
                while running.load(ordering: .relaxed) {
                    step += 1
                    let form = [("Content-Type", "application/x-www-form-urlencoded")]
                    if mine.isEmpty || step % 3 != 0 {
                        let body = "create-\(index)-\(step)"
                        let key = UUID().uuidString
                        guard let response = send(&connection, port, "POST", "/notes", form + [("Idempotency-Key", key)], body) else { continue }
                        var id: String?
                        if response.status == 201 { id = ((try? response.json())?["note"] as? [String: Any])?["id"] as? String }
                        if response.status == 303 { id = response.header("Location")?.split(separator: "/").last.map(String.init) }
                        guard let id else {
                            state.withLock { $0.errors.append("POST \(body): \(response.status) \(response.text.prefix(200))") }
                            continue
                        }
                        mine.append(id)
                        state.withLock { $0.written[id] = body }
                    } else {
                        let id = mine[step % mine.count], body = "update-\(index)-\(step)"
                        guard let response = send(&connection, port, "PUT", "/notes/\(id)", form, body) else { continue }
                        guard response.status == 200 else {
                            state.withLock { $0.errors.append("PUT /notes/\(id): \(response.status) \(response.text.prefix(200))") }
                            continue
                        }
                        state.withLock { $0.written[id] = body }
                    }
                }
            }
            thread.name = "keyed load \(index)"
            thread.start()
        }
    }

    /// One request with the SDK's retries (same key, same body); nil once it failed for good
    /// (recorded as an error), or the final answer.
    private func send(
        _ connection: inout RawHTTP?, _ port: Int, _ method: String, _ target: String,
        _ headers: [(String, String)], _ body: String
    ) -> WireResponse? {
        var attempt = 0
        while true {
            attempt += 1
            var retryAfter: Double?
            do {
                if connection == nil { connection = try RawHTTP(port: port, timeout: 20) }
                let response = try connection!.request(method, target, headers: headers, body: Array("body=\(body)".utf8))
                if response.header("Connection")?.lowercased() == "close" { connection = nil }
                let running = response.status == 409 && response.header("Retry-After") != nil
                guard [408, 429, 502, 503, 504].contains(response.status) || running else { return response }
                retryAfter = response.header("Retry-After").flatMap(Double.init)
                if attempt >= 8 {
                    state.withLock { $0.errors.append("\(method) \(target) \(body): \(response.status) after \(attempt) attempts") }
                    return nil
                }
            } catch {
                connection = nil
                if attempt >= 8 {
                    state.withLock { $0.errors.append("\(method) \(target) \(body): \(error) after \(attempt) attempts") }
                    return nil
                }
            }
            state.withLock { $0.retries += 1 }
            usleep(useconds_t(min(retryAfter ?? 0.1 * Double(attempt), 5) * 1_000_000))
        }
    }

    var acknowledgedCount: Int { state.withLock { $0.written.count } }

    func stop() -> (acknowledged: [Written], errors: [String], retries: Int) {
        running.store(false, ordering: .relaxed)
        finished.wait()
        return state.withLock { state in
            (state.written.map { Written(id: $0.key, body: $0.value) }, state.errors, state.retries)
        }
    }
}
