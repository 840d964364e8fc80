import Foundation
import Glibc
import JotterServerTestSupport
import JotterTestSupport
import Testing

/// Three `jotter serve` processes on one PostgreSQL database and one S3 bucket (the throwaway
/// servers of scripts/test-services, a fresh database and bucket per test), behind nginx running
/// contrib/nginx/jotter.conf — the deployment docs/deployment.md describes, with real processes —
/// and two behind HAProxy running contrib/haproxy/jotter.cfg for resumable uploads.
/// Run alone in the timing pass: it keeps both cores busy.
@Suite(
    "N instances on PostgreSQL and S3 behind nginx or HAProxy", .tags(.timing), .serialized,
    .enabled(if: ScaleOutBackend.unavailable == nil, Comment(rawValue: ScaleOutBackend.unavailable ?? "")))
struct ScaleOutTests {
    func cluster(_ count: Int = 3) throws -> ScaleOutCluster {
        try ScaleOutCluster(instances: count, backend: ScaleOutBackend())
    }

    @Test("a note written through one instance reaches the event streams of every instance, direct and through nginx")
    func eventsReachEveryInstance() throws {
        let cluster = try cluster()
        defer { cluster.stop() }
        let ports = cluster.instances.map(\.port)
        let direct = try ports.map { try EventStreamConnection(port: $0) }
        // nginx hands out requests in turn (one worker, round robin): one stream per instance.
        let proxied = try ports.map { _ in try EventStreamConnection(port: cluster.nginx.port) }
        for port in ports {
            #expect(try cluster.gauge(port, "jotter_event_streams") == 2, "instance \(port): one direct stream, one through nginx")
        }
        let streams = direct + proxied

        let id = try cluster.createNote(ports[0], "written+on+the+first")
        let update = try cluster.request(
            cluster.nginx.port, "PUT", "/notes/\(id)",
            headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("body=changed".utf8))
        #expect(update.status == 200)
        #expect(try cluster.request(ports[2], "DELETE", "/notes/\(id)").status == 200)

        var seen: [[EventStreamConnection.Event]] = []
        for (index, stream) in streams.enumerated() {
            let events = try stream.next(3, within: 15)
            #expect(events.map(\.name) == ["note.created", "note.updated", "note.deleted"], "stream \(index)")
            #expect(events.allSatisfy { $0.noteID == id }, "stream \(index): \(events)")
            seen.append(events)
        }
        // The same ids everywhere, growing.
        #expect(Set(seen.map { $0.map(\.id) }).count == 1, "\(seen)")
        #expect(seen[0].map(\.id) == seen[0].map(\.id).sorted())
    }

    @Test("an upload made through one instance downloads, whole and by Range, through the others and nginx")
    func uploadsAreShared() throws {
        let cluster = try cluster()
        defer { cluster.stop() }
        let ports = cluster.instances.map(\.port)
        // Larger than nginx's buffers and than one S3 part, not a round size.
        var bytes = [UInt8](repeating: 0, count: (9 << 20) + 12_345)
        bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        for uploadPort in [cluster.nginx.port, ports[1]] {
            var parts = MultipartBuilder()
            parts.file("file", filename: "data.bin", body: bytes)
            let created = try cluster.request(
                uploadPort, "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
                body: parts.finished())
            try #require(created.status == 201, "\(created.text)")
            let upload = try #require((try created.json()["uploads"] as? [[String: Any]])?.first)
            let id = try #require(upload["id"] as? String)
            #expect(upload["size"] as? Int == bytes.count)

            var etags = Set<String>()
            for port in ports + [cluster.nginx.port] {
                let whole = try cluster.download(port, "/uploads/\(id)/content")
                #expect(whole.status == 200, "port \(port)")
                #expect(whole.body == bytes, "port \(port): \(whole.body.count) bytes")
                let etag = try #require(whole.headers["etag"])
                etags.insert(etag)

                let start = 5 << 20 + 7, end = start + 100_000
                let range = try cluster.download(port, "/uploads/\(id)/content", headers: [("Range", "bytes=\(start)-\(end)")])
                #expect(range.status == 206, "port \(port)")
                #expect(range.headers["content-range"] == "bytes \(start)-\(end)/\(bytes.count)")
                #expect(range.body == Array(bytes[start...end]))

                let tail = try cluster.download(
                    port, "/uploads/\(id)/content",
                    headers: [("Range", "bytes=-10"), ("If-Range", etag)])
                #expect(tail.status == 206)
                #expect(tail.body == Array(bytes.suffix(10)))
                let stale = try cluster.download(
                    port, "/uploads/\(id)/content",
                    headers: [("Range", "bytes=0-9"), ("If-Range", "\"not-the-etag\"")])
                #expect(stale.status == 200 && stale.body.count == bytes.count)
            }
            #expect(etags.count == 1, "one ETag on every instance: \(etags)")
        }
    }

    /// What "zero errors" means here. Eight clients send, each on one keep-alive connection,
    /// `GET /notes/{id}`, `POST /notes` and `GET /notes?limit=10` in turn, 5 ms apart: four
    /// through nginx, two straight to each of the two instances that stay up.
    /// One instance gets SIGKILL after 1.5 s; the load goes on 3 s more. Then:
    /// - a client of a surviving instance (straight to it) has every request answered 2xx, and
    ///   no connection fails;
    /// - a client of nginx has every GET answered 2xx (a GET in flight on the killed instance is
    ///   resent by nginx to another: `proxy_next_upstream error timeout`), and every POST 2xx
    ///   except those nginx had passed on to the killed instance when it died: nginx never
    ///   resends a POST (it may have been committed), so such a POST is answered 502. Those are
    ///   not counted as errors but checked: each one is a 502 that nginx's access log shows went
    ///   to the killed instance alone, and there are at most as many as nginx clients (one
    ///   request in flight per connection). Any other non-2xx, or a failed connection, fails the
    ///   test;
    /// - nginx logged every request, and met the dead instance: a request resent from it, or a
    ///   POST answered 502 (else the kill was not tested).
    /// The instance is then started again on its port: a stream on it with the `Last-Event-ID`
    /// of the last event it had delivered before the kill replays every note acknowledged
    /// since, and nginx sends it requests again.
    @Test("killing one instance during a load through nginx leaves the others' clients with zero errors; restarted, it catches up")
    func killDuringLoad() throws {
        let cluster = try cluster()
        defer { cluster.stop() }
        let ports = cluster.instances.map(\.port)
        let victim = 2, victimAddress = "127.0.0.1:\(ports[2])"
        let readID = try cluster.createNote(ports[0], "read+by+the+load")
        let victimStream = try EventStreamConnection(port: ports[victim])
        _ = try cluster.createNote(ports[1], "before+the+kill")
        let beforeKill = try #require(try victimStream.next(1, within: 15).first)

        let nginxClients = 4
        let clients = Array(repeating: cluster.nginx.port, count: nginxClients) + [ports[0], ports[0], ports[1], ports[1]]
        let load = MixedLoad(clients: clients, readID: readID)
        usleep(1_500_000)
        let beforeCount = load.count
        cluster.kill(victim)
        usleep(3_000_000)
        let outcomes = load.stop()
        #expect(beforeCount > 30, "the load was running before the kill (\(beforeCount) requests)")
        #expect(outcomes.count - beforeCount > 60, "and after it (\(outcomes.count - beforeCount) requests)")

        let failedDirect = outcomes.filter { $0.port != cluster.nginx.port && !(200..<300).contains($0.status ?? 0) }
        #expect(failedDirect.isEmpty, "clients of the surviving instances: \(failedDirect.prefix(5))")
        let proxied = outcomes.filter { $0.port == cluster.nginx.port }
        let failedGets = proxied.filter { $0.method == "GET" && !(200..<300).contains($0.status ?? 0) }
        #expect(failedGets.isEmpty, "GETs through nginx: \(failedGets.prefix(5))")
        let failedPosts = proxied.filter { $0.method == "POST" && !(200..<300).contains($0.status ?? 0) }
        #expect(failedPosts.allSatisfy { $0.status == 502 }, "POSTs through nginx: \(failedPosts.prefix(5))")
        #expect(failedPosts.count <= nginxClients)
        let log = cluster.nginx.accessLog(atLeast: proxied.count)
        #expect(log.count == proxied.count, "nginx logged every request of its clients")
        let logged502 = log.filter { $0.status == 502 }
        #expect(logged502.count == failedPosts.count, "\(logged502)")
        #expect(logged502.allSatisfy { $0.method == "POST" && $0.upstreams == [victimAddress] }, "\(logged502)")
        // nginx met the dead instance (or the test proved nothing): a request resent from it to
        // another, or a POST it had passed on answered 502 (after either, nginx leaves it out).
        #expect(
            log.contains { $0.upstreams.first == victimAddress && ($0.upstreams.count > 1 || $0.status == 502) },
            "no request went to the killed instance after the kill")

        // Restarted: catches up from the last event it delivered.
        let acknowledged = Set(outcomes.compactMap(\.noteID))
        try cluster.restart(victim)
        let replay = try EventStreamConnection(port: ports[victim], lastEventID: beforeKill.id)
        // At least those events (POSTs answered 502 may have been committed too), then any late ones.
        let replayed = try replay.next(acknowledged.count, within: 30) + replay.drain(for: 2)
        let created = Set(replayed.filter { $0.name == "note.created" }.compactMap(\.noteID))
        let missing = acknowledged.subtracting(created)
        #expect(missing.isEmpty, "acknowledged notes missing from the replay on the restarted instance: \(missing.prefix(10))")
        let live = try cluster.createNote(ports[0], "after+the+restart")
        #expect(replay.drain(for: 3).contains { $0.noteID == live && $0.name == "note.created" })

        // nginx tries it again once fail_timeout (5 s) has passed since its failure.
        usleep(5_500_000)
        for _ in 0..<6 { #expect(try cluster.request(cluster.nginx.port, "GET", "/notes/\(readID)").status == 200) }
        #expect(
            cluster.nginx.accessLog(atLeast: log.count + 6).suffix(6).contains { $0.upstreams == [victimAddress] }, "nginx sends it requests again")
    }

    /// HAProxy (contrib/haproxy/jotter.cfg) passes the 104, which nginx 1.22 does not: a
    /// URLSession-style upload through it on PostgreSQL + S3, cut, resumed (HEAD, PATCH) on the
    /// other instance and completed there; the stored file, read from both instances, is the file.
    ///
    /// Round robin over two instances sends requests in turn; the access log says where each
    /// went, and the test checks it rather than assuming it. The partial upload is in the
    /// bucket and PostgreSQL (docs/API.md, "Resumable uploads"): the other instance answers its
    /// offset — what the first had received, the tail after its last part included — and
    /// takes it over.
    @Test(
        "a resumable upload through HAProxy on PostgreSQL + S3, cut mid-body, resumes and completes on the other instance, and reads the same from both"
    )
    func resumableUploadThroughHAProxy() throws {
        let cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend(), balancer: .haproxy)
        defer { cluster.stop() }
        let haproxy = cluster.haproxy!
        // Two S3 parts and a tail before the cut, a part and a tail after; not round sizes.
        var file = [UInt8](repeating: 0, count: (27 << 20) + 4_321)
        file.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        let cut = (19 << 20) + 777, version = 8
        let interop = ("Upload-Draft-Interop-Version", String(version))

        let connection = try RawHTTP(port: haproxy.port, timeout: 10)
        try connection.send(ResumableUploadTests.creation(version: version, complete: true, length: file.count))
        let interim = try connection.readResponse()
        try #require(interim.status == 104, "\(interim.raw)")
        let location = try #require(interim.header("Location"))
        let path = ResumableUploadTests.path(of: location)
        try connection.send(Array(file[..<cut]))
        usleep(1_000_000)
        shutdown(connection.fd, Int32(SHUT_RDWR))
        let post = try #require(haproxy.accessLog(atLeast: 1).first)
        #expect(post.method == "POST" && post.target == "/uploads", "\(post)")
        let first = try #require(post.upstreams.first)

        // The other instance's turn: it takes the upload over and answers its offset.
        let head = try cluster.request(haproxy.port, "HEAD", path, headers: [interop])
        #expect(head.status == 204, "\(head.raw)")
        #expect(head.header("Upload-Complete") == "?0")
        let offset = try #require(head.header("Upload-Offset").flatMap(Int.init), "\(head.raw)")
        // Both parts at least: what the first instance had not read of the body when the
        // offset was asked is not kept (the takeover test checks that all it read is).
        #expect(offset >= 16 << 20 && offset <= cut, "offset \(offset) of \(cut) sent")
        #expect(try cluster.request(haproxy.port, "GET", "/healthz").status == 200)

        let done = try cluster.request(
            haproxy.port, "PATCH", path,
            headers: [
                interop, ("Upload-Offset", String(offset)), ("Upload-Complete", "?1"), ("Content-Type", "application/partial-upload"),
            ], body: Array(file[offset...]))
        #expect(done.status == 201, "\(done.text)")
        let log = haproxy.accessLog(atLeast: 4)
        #expect(log.map(\.method) == ["POST", "HEAD", "GET", "PATCH"], "\(log)")
        #expect(
            log.count == 4 && [log[1], log[3]].allSatisfy { $0.upstreams.first != Optional(first) },
            "the offset and the resume on the instance the POST did not reach: \(log)")
        let upload = try #require((try done.json()["uploads"] as? [[String: Any]])?.first)
        #expect(upload["sha256"] as? String == SHA256Hex.of(file))
        #expect(upload["size"] as? Int == file.count)
        let id = try #require(upload["id"] as? String)
        for port in cluster.instances.map(\.port) {
            let stored = try cluster.download(port, "/uploads/\(id)/content")
            #expect(stored.status == 200 && SHA256Hex.of(stored.body) == SHA256Hex.of(file), "port \(port)")
        }
    }

    /// The draft's concurrency rule across instances: a HEAD on one instance ends the append
    /// still open on the other — which records what it received first (asked through
    /// PostgreSQL's NOTIFY) — and the appending request's later bytes are refused: never two
    /// writers.
    @Test("a HEAD on one instance ends the append still open on the other: its bytes so far are kept, its later ones refused")
    func takeOverAcrossInstances() throws {
        let cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend(), balancer: .haproxy)
        defer { cluster.stop() }
        let ports = cluster.instances.map(\.port)
        var file = [UInt8](repeating: 0, count: (12 << 20) + 99)
        file.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        let sent = (9 << 20) + 5
        let interop = ("Upload-Draft-Interop-Version", "6")
        let appending = try RawHTTP(port: ports[0], timeout: 10)
        try appending.send(ResumableUploadTests.creation(version: 6, complete: true, length: file.count))
        let path = ResumableUploadTests.path(of: try #require(try appending.readResponse().header("Location")))
        try appending.send(Array(file[..<sent]))
        // The first instance has the bytes (a part in the bucket, the rest in its memory); its
        // request is still open when the second instance is asked.
        usleep(1_500_000)
        let head = try cluster.request(ports[1], "HEAD", path, headers: [interop])
        #expect(head.status == 204, "\(head.raw)")
        #expect(head.header("Upload-Offset") == String(sent), "\(head.raw)")
        // The first request is over: what it sends now is refused, its connection closed.
        try? appending.send(Array(file[sent..<sent + 100_000]))
        let refused = try? appending.readFinalResponse()
        #expect(refused?.status == 409, "\(refused?.raw ?? "no answer")")
        #expect(appending.isClosedByServer())
        #expect(try cluster.request(ports[0], "HEAD", path, headers: [interop]).header("Upload-Offset") == String(sent))
        let done = try cluster.request(
            ports[1], "PATCH", path,
            headers: [
                interop, ("Upload-Offset", String(sent)), ("Upload-Complete", "?1"), ("Content-Type", "application/partial-upload"),
            ], body: Array(file[sent...]))
        #expect(done.status == 201, "\(done.text)")
        #expect((try done.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file))
    }

    /// An instance that dies (kill -9) mid-append loses only what it had not recorded yet: the
    /// other instance resumes from its last part — after waiting for it a moment (its lease
    /// is still running) — and the SHA-256 is the file's.
    @Test("kill -9 of the instance receiving an upload: the other resumes from the last part it recorded, same SHA-256")
    func instanceKilledMidUpload() throws {
        let cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend(), balancer: .haproxy)
        defer { cluster.stop() }
        let ports = cluster.instances.map(\.port)
        var file = [UInt8](repeating: 0, count: (15 << 20) + 1_234)
        file.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        let sent = 13 << 20
        let interop = ("Upload-Draft-Interop-Version", "8")
        let appending = try RawHTTP(port: ports[0], timeout: 10)
        try appending.send(ResumableUploadTests.creation(version: 8, complete: true, length: file.count))
        let path = ResumableUploadTests.path(of: try #require(try appending.readResponse().header("Location")))
        try appending.send(Array(file[..<sent]))
        // Once its first part (8 MiB) is recorded, the instance dies with 5 MiB more in memory.
        let id = String(path.dropFirst("/uploads/".count))
        let deadline = Date().addingTimeInterval(20)
        while try cluster.recordedOffset(id) < 8 << 20, Date() < deadline { usleep(50_000) }
        cluster.kill(0)
        let started = Date()
        let head = try cluster.request(ports[1], "HEAD", path, headers: [interop])
        let waited = Date().timeIntervalSince(started)
        #expect(head.status == 204, "\(head.raw)")
        #expect(head.header("Upload-Offset") == String(8 << 20), "\(head.raw)")
        #expect(waited > 2.5 && waited < 10, "the take-over waited \(waited) s for the dead instance")
        let done = try cluster.request(
            ports[1], "PATCH", path,
            headers: [
                interop, ("Upload-Offset", String(8 << 20)), ("Upload-Complete", "?1"), ("Content-Type", "application/partial-upload"),
            ], body: Array(file[(8 << 20)...]))
        #expect(done.status == 201, "\(done.text)")
        #expect((try done.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file))
    }

    /// Cuts at random points, resumed through HAProxy on whichever instance its turn gives
    /// (a health check in between, at random, moves the append to the other).
    @Test("cut at 20 random points across two instances behind HAProxy: the stored SHA-256 is the file's every time")
    func randomCutsAcrossInstances() throws {
        let cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend(), balancer: .haproxy)
        defer { cluster.stop() }
        let port = cluster.haproxy.port
        var generator = SystemRandomNumberGenerator()
        var elsewhere = 0
        for round in 0..<20 {
            let size = round % 2 == 0 ? Int.random(in: 1...(20 << 20), using: &generator) : Int.random(in: 1...1_000_000, using: &generator)
            let file = ResumableUploadTests.bytes(size, seed: UInt32(round) &+ 1000)
            let cut = Int.random(in: 0...size, using: &generator)
            let interop = ("Upload-Draft-Interop-Version", "6")
            let connection = try RawHTTP(port: port, timeout: 10)
            try connection.send(ResumableUploadTests.creation(version: 6, complete: true, length: size))
            let path = ResumableUploadTests.path(of: try #require(try connection.readResponse().header("Location")))
            try connection.send(Array(file[..<cut]))
            shutdown(connection.fd, Int32(SHUT_RDWR))
            let before = cluster.haproxy.accessLog().count
            if Bool.random(using: &generator) { _ = try cluster.request(port, "GET", "/healthz") }
            let head = try cluster.request(port, "HEAD", path, headers: [interop])
            let offset = try #require(head.header("Upload-Offset").flatMap(Int.init), "round \(round): \(head.raw)")
            #expect(offset <= cut, "round \(round)")
            let done = try cluster.request(
                port, "PATCH", path,
                headers: [
                    interop, ("Upload-Offset", String(offset)), ("Upload-Complete", "?1"), ("Content-Type", "application/partial-upload"),
                ], body: Array(file[offset...]))
            #expect(done.status == 201, "round \(round), size \(size), cut \(cut), offset \(offset): \(done.text)")
            #expect(
                (try done.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file),
                "round \(round), size \(size), cut \(cut), offset \(offset)")
            let log = cluster.haproxy.accessLog(atLeast: before + 2)
            let created = log.last { $0.method == "POST" && $0.target == "/uploads" },
                resumed = log.last { $0.method == "PATCH" && $0.target == path }
            if let created, let resumed, created.upstreams != resumed.upstreams { elsewhere += 1 }
        }
        #expect(elsewhere > 0, "no upload was resumed on the instance that did not create it")
    }
}

/// The load balancer configuration itself, without PostgreSQL: nginx accepts it, holds a
/// resumable upload's 104 back (docs/deployment.md), and the deployment guide shows it as it is.
@Suite("contrib/nginx/jotter.conf")
struct NginxConfigurationTests {
    @Test("nginx starts with it and passes requests to the instance")
    func nginxAcceptsIt() throws {
        let server = try ServerProcess(["--quiet"])
        defer { server.signal(SIGTERM); server.finish() }
        let nginx = try NginxProcess(instances: [server.port])
        defer { nginx.stop() }
        let response = try RawHTTP(port: nginx.port).request("GET", "/healthz", close: true)
        #expect(response.status == 200, "\(response.text)")
        #expect(nginx.accessLog(atLeast: 1).map(\.upstreams) == [["127.0.0.1:\(server.port)"]])
    }

    /// What docs/deployment.md says of nginx 1.22 and resumable uploads, kept true: the 104
    /// that HAProxy passes on (HAProxyConfigurationTests) never reaches the client before the body.
    @Test("it does not pass a resumable upload's 104 on: nothing reaches the client before the body")
    func interimResponseHeld() throws {
        let server = try ServerProcess(["--quiet"])
        defer { server.signal(SIGKILL); server.finish() }
        let nginx = try NginxProcess(instances: [server.port])
        defer { nginx.stop() }
        let connection = try RawHTTP(port: nginx.port, timeout: 2)
        try connection.send(ResumableUploadTests.creation(version: 6, complete: true, length: 300_000))
        #expect(throws: (any Error).self, "nginx passed an answer on before the body") { try connection.readResponse() }
    }

    @Test("docs/deployment.md quotes it whole")
    func documentationQuotesIt() throws {
        let configuration = try String(contentsOf: NginxProcess.template, encoding: .utf8)
        let guide = try String(
            contentsOf: NginxProcess.template.deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/deployment.md"), encoding: .utf8)
        #expect(guide.contains("```nginx\n" + configuration + "```\n"))
    }
}

/// The HAProxy configuration, without PostgreSQL: HAProxy accepts it, passes the resumable
/// upload's 104 on to the client at every interop version (nginx 1.22 does not:
/// docs/deployment.md), and the deployment guide shows it as it is.
@Suite("contrib/haproxy/jotter.cfg")
struct HAProxyConfigurationTests {
    @Test("HAProxy starts with it and passes requests to the instance")
    func haproxyAcceptsIt() throws {
        let server = try ServerProcess(["--quiet"])
        defer { server.signal(SIGKILL); server.finish() }
        let haproxy = try HAProxyProcess(instances: [server.port])
        defer { haproxy.stop() }
        let response = try RawHTTP(port: haproxy.port).request("GET", "/healthz", close: true)
        #expect(response.status == 200, "\(response.text)")
        #expect(haproxy.accessLog(atLeast: 1).map(\.upstreams) == [["127.0.0.1:\(server.port)"]])
        #expect(!haproxy.errorLog.contains("ALERT"), "\(haproxy.errorLog)")
    }

    @Test("the 104 with Location reaches the client through it before the body is sent, then the 201", arguments: 3...8)
    func interimResponsePasses(_ version: Int) throws {
        let server = try ServerProcess(["--quiet"])
        defer { server.signal(SIGKILL); server.finish() }
        let haproxy = try HAProxyProcess(instances: [server.port])
        defer { haproxy.stop() }
        let file = ResumableUploadTests.bytes(300_000, seed: UInt32(version))
        let connection = try RawHTTP(port: haproxy.port, timeout: 5)
        // Only the head: the 104 must come before any byte of the body.
        try connection.send(ResumableUploadTests.creation(version: version, complete: true, length: file.count))
        let interim = try connection.readResponse()
        #expect(interim.status == 104, "\(interim.raw)")
        #expect(interim.header("Upload-Draft-Interop-Version") == String(version))
        let location = try #require(interim.header("Location"), "\(interim.raw)")
        #expect(location.hasPrefix("http://127.0.0.1/uploads/"))
        try connection.send(file)
        let final = try connection.readResponse()
        #expect(final.status == 201, "\(final.raw)")
        #expect(final.header("Location") == location)
        let upload = try #require((try final.json()["uploads"] as? [[String: Any]])?.first)
        #expect(upload["sha256"] as? String == SHA256Hex.of(file))
        #expect(ResumableUploadTests.path(of: location) == "/uploads/\(try #require(upload["id"] as? String))")
    }

    @Test(
        "it holds a client address to 256 open connections (the instance leaves the trusted proxy out of its own limit); another address still connects"
    )
    func connectionsPerClient() throws {
        let server = try ServerProcess(["--quiet", "--trusted-proxy", "127.0.0.1"])
        defer { server.signal(SIGKILL); server.finish() }
        let haproxy = try HAProxyProcess(instances: [server.port])
        defer { haproxy.stop() }
        var open: [RawHTTP] = []
        for index in 0..<256 {
            let connection = try RawHTTP(port: haproxy.port, sourceAddress: "127.0.0.2", timeout: 10)
            let response = try connection.request("GET", "/healthz")
            try #require(response.status == 200, "connection \(index + 1): \(response.raw)")
            open.append(connection)
        }
        let beyond = try RawHTTP(port: haproxy.port, sourceAddress: "127.0.0.2", timeout: 5)
        #expect(beyond.isClosedByServer(), "the 257th connection of 127.0.0.2")
        #expect(try RawHTTP(port: haproxy.port, sourceAddress: "127.0.0.3").request("GET", "/healthz", close: true).status == 200)
        open.removeAll()
    }

    @Test("docs/deployment.md quotes it whole")
    func documentationQuotesIt() throws {
        let configuration = try String(contentsOf: HAProxyProcess.template, encoding: .utf8)
        let guide = try String(
            contentsOf: HAProxyProcess.template.deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/deployment.md"), encoding: .utf8)
        #expect(guide.contains("```haproxy\n" + configuration + "```\n"))
    }
}
