import Foundation
import Glibc
import Synchronization
import Testing
import JotterBlobs
import JotterStore
import JotterStoreHTTP
import JotterServerTestSupport
import JotterTestSupport
@testable import JotterServer
import JotterSystem

/// Raw-body and resumable uploads on the wire, byte by byte over raw sockets (a 104 is an
/// interim answer Python's http.client would take for the final one): the IETF draft at each
/// interop version URLSession and others send (3 to 8), and tus 1.0, on SQLite, on PostgreSQL
/// with the data folder, and on PostgreSQL with the bucket (the partial bytes an S3 multipart
/// upload, their state in PostgreSQL).
@Suite("Resumable uploads")
struct ResumableUploadTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres, bucket = "postgres+s3"
        var testDescription: String { rawValue }
    }

    static var backends: [Backend] { SharedBackend.available ? Backend.allCases : [.sqlite] }

    /// A server on `backend` (`.postgres`: uploads in the data folder; `.bucket`: in the S3 bucket).
    func withApp<T>(_ backend: Backend, configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestApp) throws -> T) throws -> T {
        let shared = backend == .sqlite ? nil : try SharedBackend()
        return try TestApp.with(
            configure: { configuration in
                if let shared {
                    if backend == .bucket {
                        shared.configure(&configuration)
                    } else {
                        configuration.database = .postgres(url: shared.databaseURL, poolSize: 4)
                    }
                }
                configure(&configuration)
            }, body)
    }

    /// The test bucket (scripts/test-services), to see what the server left in it.
    static func bucket() throws -> S3BlobStore {
        let shared = try SharedBackend()
        let environment = ProcessInfo.processInfo.environment.merging(shared.credentials) { _, new in new }
        return S3BlobStore(try S3BlobStore.Configuration(url: shared.blobStoreURL, environment: environment))
    }

    /// Multipart uploads open in the bucket for upload `id`.
    static func openMultipartUploads(_ id: String) throws -> [S3BlobStore.MultipartUpload] {
        try bucket().listMultipartUploads(prefix: "uploads/" + id)
    }

    /// Nothing of a partial upload is left: no partial file (data folder), no multipart upload (bucket).
    func expectNoPartialBytes(_ backend: Backend, _ app: TestApp, id: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        if backend == .bucket {
            #expect(try Self.openMultipartUploads(id).isEmpty, sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: app.dataDirectory.appendingPathComponent("partial").path), sourceLocation: sourceLocation)
        } else {
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("partial").path).isEmpty,
                sourceLocation: sourceLocation)
        }
    }

    static func bytes(_ count: Int, seed: UInt32 = 7) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: state >> 16)
        }
    }

    /// The head of a creation request at interop `version` (nil: no version field).
    static func creation(version: Int?, complete: Bool, length: Int, extra: [(String, String)] = []) -> String {
        var text = "POST /uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=\"cat.png\"\r\n"
        if let version { text += "Upload-Draft-Interop-Version: \(version)\r\n" }
        text += version == 3 ? "Upload-Incomplete: \(complete ? "?0" : "?1")\r\n" : "Upload-Complete: \(complete ? "?1" : "?0")\r\n"
        for (name, value) in extra { text += "\(name): \(value)\r\n" }
        return text + "Content-Length: \(length)\r\n\r\n"
    }

    static func completeField(_ version: Int, _ complete: Bool) -> (String, String) {
        version == 3 ? ("Upload-Incomplete", complete ? "?0" : "?1") : ("Upload-Complete", complete ? "?1" : "?0")
    }

    /// Appends `body` at `offset` to `location` (a path), by `version`'s rules: the final answer
    /// (progress 104s skipped).
    static func append(
        _ app: TestApp, _ path: String, version: Int, offset: Int, body: [UInt8], complete: Bool,
        extra: [(String, String)] = []
    ) throws -> WireResponse {
        var headers = [("Upload-Draft-Interop-Version", String(version)), ("Upload-Offset", String(offset)), completeField(version, complete)]
        if version >= 6 { headers.append(("Content-Type", "application/partial-upload")) }
        var text = "PATCH \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        for (name, value) in headers + extra { text += "\(name): \(value)\r\n" }
        let connection = try RawHTTP(port: app.port, timeout: 30)
        try connection.send(Array((text + "\r\n").utf8) + body)
        return try connection.readFinalResponse()
    }

    static func path(of location: String) -> String {
        location.hasPrefix("http") ? String(location[location.range(of: "/uploads/")!.lowerBound...]) : location
    }

    func content(_ app: TestApp, _ id: String) throws -> [UInt8] {
        try RawHTTP(port: app.port).request("GET", "/uploads/\(id)/content", close: true).body
    }

    // MARK: - Raw bodies

    @Test(
        "tus: a HEAD that takes over a PATCH whose bytes all arrived, before that PATCH completed the upload, completes it: listed, its content whole"
    )
    func tusTakeOverAtLengthCompletes() throws {
        try withApp(.sqlite) { app in
            let bytes = Self.bytes(200_000)
            let tus = [("Tus-Resumable", "1.0.0")]
            let created = try RawHTTP(port: app.port).request(
                "POST", "/uploads", headers: tus + [("Upload-Length", String(bytes.count))], close: true)
            try #require(created.status == 201, "\(created.text)")
            let path = Self.path(of: try #require(created.header("Location")))
            let id = String(path.split(separator: "/").last!)
            // A PATCH whose every byte of the upload arrived, its request not ended (one byte
            // more announced): the moment after its last chunk was stored, before it completed.
            let patch = try RawHTTP(port: app.port, timeout: 10)
            try patch.send(
                "PATCH \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n"
                    + "Content-Type: application/offset+octet-stream\r\nContent-Length: \(bytes.count + 1)\r\n\r\n")
            try patch.send(bytes)
            let file = app.dataDirectory.appendingPathComponent("partial/\(id)").path
            for _ in 0..<500 {
                let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
                if size == bytes.count { break }
                usleep(10_000)
            }
            let head = try RawHTTP(port: app.port).request("HEAD", path, headers: tus, close: true)
            #expect(head.status == 200)
            #expect(head.header("Upload-Offset") == String(bytes.count))
            #expect(try content(app, id) == bytes, "the upload is complete")
            let listed = try RawHTTP(port: app.port).request("GET", "/uploads", close: true)
            #expect(listed.text.contains(id))
            // The PATCH that was taken over: its next byte is refused (past the length, or taken over).
            try? patch.send([0x61])
            let refused = try patch.readFinalResponse().status
            #expect(refused == 413 || refused == 409, "\(refused)")
            try expectNoPartialBytes(.sqlite, app, id: id)
        }
    }

    @Test("a raw body with Content-Disposition is an ordinary upload", arguments: backends)
    func rawBody(_ backend: Backend) throws {
        try withApp(backend) { app in
            let file = Self.bytes(100_000)
            let response = try RawHTTP(port: app.port).request(
                "POST", "/uploads",
                headers: [
                    ("Content-Type", "image/png"), ("Content-Disposition", "attachment; filename=\"cat.png\"; filename*=UTF-8''k%C3%A4tzchen.png"),
                ], body: file, close: true)
            #expect(response.status == 201, "\(response.text)")
            let upload = try #require((try response.json()["uploads"] as? [[String: Any]])?.first)
            #expect(upload["filename"] as? String == "kätzchen.png")
            #expect(upload["content_type"] as? String == "image/png")
            #expect(upload["size"] as? Int == file.count)
            #expect(upload["sha256"] as? String == SHA256Hex.of(file))
            #expect(try content(app, try #require(upload["id"] as? String)) == file)
            // Without a file name it is still refused as before, and leaves nothing.
            let refused = try RawHTTP(port: app.port).request("POST", "/uploads", headers: [("Content-Type", "image/png")], body: file, close: true)
            #expect(refused.status == 415)
            #expect(try app.request("GET", "/uploads").json()["uploads"].map { ($0 as? [Any])?.count } == 1)
        }
    }

    // MARK: - The draft, version by version

    @Test("each interop version: 104 with Location before the body, cut, HEAD, PATCH the rest, same bytes", arguments: 3...8)
    func interopVersion(_ version: Int) throws {
        try withApp(.sqlite) { app in
            let file = Self.bytes(300_000, seed: UInt32(version))
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: version, complete: true, length: file.count))
            let interim = try connection.readResponse()
            #expect(interim.status == 104)
            #expect(interim.header("Upload-Draft-Interop-Version") == String(version))
            let location = try #require(interim.header("Location"))
            #expect(location.hasPrefix("http://127.0.0.1/uploads/"))
            switch version {
            case 3...5: #expect(interim.header("Upload-Limit") == nil)
            case 6: #expect(interim.header("Upload-Limit")?.contains("expires=") == true)
            default: #expect(interim.header("Upload-Limit")?.contains("max-age=86400") == true)
            }
            // The connection drops after part of the body.
            try connection.send(Array(file[..<120_000]))
            shutdown(connection.fd, Int32(SHUT_RDWR))

            let path = Self.path(of: location)
            let head = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", String(version))], close: true)
            #expect(head.status == 204)
            #expect(head.header("Cache-Control") == "no-store")
            let (field, incomplete) = Self.completeField(version, false)
            #expect(head.header(field) == incomplete)
            #expect(head.header("Upload-Length") == String(file.count))
            let offset = try #require(head.header("Upload-Offset").flatMap(Int.init))
            #expect(offset <= 120_000)

            let done = try Self.append(app, path, version: version, offset: offset, body: Array(file[offset...]), complete: true)
            #expect(done.status == 201, "\(done.text)")
            #expect(done.header(Self.completeField(version, true).0) == Self.completeField(version, true).1)
            let upload = try #require((try done.json()["uploads"] as? [[String: Any]])?.first)
            #expect(upload["sha256"] as? String == SHA256Hex.of(file))
            #expect(upload["filename"] as? String == "cat.png")
            let id = try #require(upload["id"] as? String)
            #expect(path == "/uploads/\(id)")
            #expect(try content(app, id) == file)
            // Complete now: HEAD says so, and another append is refused.
            let after = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", String(version))], close: true)
            #expect(after.header(Self.completeField(version, true).0) == Self.completeField(version, true).1)
            #expect(after.header("Upload-Offset") == String(file.count))
            let again = try Self.append(app, path, version: version, offset: file.count, body: [1], complete: true)
            #expect(again.status == 400)
            if version >= 6 { #expect(try again.json()["type"] as? String == "https://iana.org/assignments/http-problem-types#completed-upload") }
        }
    }

    /// How curl reaches the server: HTTP/1.1, HTTP/2 with prior knowledge, or HTTP/2 chosen by
    /// TLS's ALPN.
    enum CurlTransport: String, CaseIterable, CustomTestStringConvertible {
        case http1 = "--http1.1", h2c = "--http2-prior-knowledge", h2 = "--http2 over TLS"
        var testDescription: String { rawValue }
    }

    @Test(
        "curl: 104 with Location before the final answer, an incomplete creation, HEAD's offset, PATCH the rest, same bytes",
        arguments: CurlTransport.allCases, [3, 6, 8])
    func curl(_ transport: CurlTransport, _ version: Int) throws {
        try curlUpload(transport, version, backend: .sqlite)
    }

    /// With PostgreSQL the upload's row is made on a store thread while the engine holds the
    /// body back: the 104 comes from there, over HTTP/1.1 and HTTP/2 alike.
    @Test(
        "curl on PostgreSQL and on PostgreSQL + S3: the 104 before the body, the upload resumed, same bytes",
        .enabled(if: SharedBackend.available), arguments: CurlTransport.allCases, [Backend.postgres, .bucket])
    func curlOnPostgres(_ transport: CurlTransport, _ backend: Backend) throws {
        try curlUpload(transport, 8, backend: backend)
    }

    func curlUpload(_ transport: CurlTransport, _ version: Int, backend: Backend) throws {
        // A certificate for TLS (made for every transport).
        let folder = try TLSTests.certificate()
        defer { try? FileManager.default.removeItem(at: folder) }
        try withApp(
            backend,
            configure: { configuration in
                if transport == .h2 {
                    configuration.tlsCertificatePath = folder.path + "/cert.pem"
                    configuration.tlsKeyPath = folder.path + "/key.pem"
                }
            }
        ) { app in
            let base = "\(transport == .h2 ? "https" : "http")://127.0.0.1:\(app.port)"
            let options =
                switch transport {
                case .http1: ["--http1.1"]
                case .h2c: ["--http2-prior-knowledge"]
                case .h2: ["--http2", "--cacert", folder.path + "/cert.pem"]
                }
            let protocolName = transport == .http1 ? "HTTP/1.1" : "HTTP/2"
            func fields(_ pairs: (String, String)...) -> [String] { pairs.flatMap { ["-H", "\($0.0): \($0.1)"] } }
            /// curl's answers, interim ones first, each its status line and header fields (`-i`).
            func answers(_ arguments: [String]) throws -> [String] {
                try HTTP2Tests.curl(options + arguments).components(separatedBy: "\r\n\r\n")
            }
            func field(_ name: String, in answer: String) -> String? {
                answer.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ": ") }
                    .map { String($0.dropFirst(name.count + 2)) }
            }
            let interop = ("Upload-Draft-Interop-Version", String(version))
            let file = Self.bytes(200_000, seed: UInt32(version))
            let first = folder.appendingPathComponent("first.bin"), rest = folder.appendingPathComponent("rest.bin")
            try Data(file[..<80_000]).write(to: first)
            try Data(file[80_000...]).write(to: rest)

            let created = try answers(
                fields(
                    interop, Self.completeField(version, false), ("Content-Type", "image/png"),
                    ("Content-Disposition", "attachment; filename=\"cat.png\""))
                    + ["--data-binary", "@\(first.path)", base + "/uploads"])
            try #require(created.count >= 2, "\(created)")
            #expect(created[0].hasPrefix("\(protocolName) 104"), "\(created[0])")
            let location = try #require(field("Location", in: created[0]), "\(created[0])")
            #expect(field("Upload-Draft-Interop-Version", in: created[0]) == String(version))
            #expect(created[1].hasPrefix("\(protocolName) 201"), "\(created[1])")
            #expect(field("Upload-Offset", in: created[1]) == "80000")
            #expect(field("Location", in: created[1]) == location)

            let path = Self.path(of: location)
            let head = try answers(fields(interop) + ["-I", base + path])
            #expect(head[0].hasPrefix("\(protocolName) 204"), "\(head[0])")
            #expect(field(Self.completeField(version, false).0, in: head[0]) == Self.completeField(version, false).1)
            let offset = try #require(field("Upload-Offset", in: head[0]), "\(head[0])")
            #expect(offset == "80000")

            var append = [interop, ("Upload-Offset", offset), Self.completeField(version, true)]
            if version >= 6 { append.append(("Content-Type", "application/partial-upload")) }
            let done = try answers(append.flatMap { ["-H", "\($0.0): \($0.1)"] } + ["-X", "PATCH", "--data-binary", "@\(rest.path)", base + path])
            let final = try #require(done.first { !$0.hasPrefix("\(protocolName) 1") }, "\(done)")
            #expect(final.hasPrefix("\(protocolName) 201"), "\(final)")
            #expect(field(Self.completeField(version, true).0, in: final) == Self.completeField(version, true).1)
            // The stored upload, asked over the same transport (the TLS port takes no plain request).
            let shown = try answers([base + path])
            #expect(shown.first?.hasPrefix("\(protocolName) 200") == true, "\(shown)")
            #expect(shown.last?.contains("\"sha256\":\"\(SHA256Hex.of(file))\"") == true, "\(shown)")
        }
    }

    @Test("no 104 when the interop version is missing or unknown; the upload is still stored", arguments: [nil, 2, 99] as [Int?])
    func noInterimForUnknownVersion(_ version: Int?) throws {
        try withApp(.sqlite) { app in
            let file = Self.bytes(5000)
            let connection = try RawHTTP(port: app.port, timeout: 5)
            var head = Self.creation(version: version, complete: true, length: file.count, extra: [("Connection", "close")])
            if version == 2 { head = head.replacingOccurrences(of: "Upload-Incomplete: ?0", with: "Upload-Complete: ?1") }
            try connection.send(Array(head.utf8) + file)
            let text = String(decoding: connection.readToEnd(), as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 201 Created\r\n"), "\(text.prefix(300))")
            #expect(!text.contains(" 104 "))
            #expect(text.contains(SHA256Hex.of(file)))
        }
    }

    @Test("incomplete creation and appends in parts (Upload-Complete: ?0), then the last part", arguments: [3, 5, 6, 8])
    func inParts(_ version: Int) throws {
        try withApp(.sqlite) { app in
            let file = Self.bytes(90_000)
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Array(Self.creation(version: version, complete: false, length: 30_000).utf8) + Array(file[..<30_000]))
            #expect(try connection.readResponse().status == 104)
            let created = try connection.readResponse()
            #expect(created.status == 201)
            #expect(created.header("Upload-Offset") == "30000")
            let path = Self.path(of: try #require(created.header("Location")))
            let middle = try Self.append(app, path, version: version, offset: 30_000, body: Array(file[30_000..<60_000]), complete: false)
            #expect(middle.status == (version <= 5 ? 201 : 204))
            #expect(middle.header(Self.completeField(version, false).0) == Self.completeField(version, false).1)
            let last = try Self.append(app, path, version: version, offset: 60_000, body: Array(file[60_000...]), complete: true)
            #expect(last.status == 201)
            #expect((try last.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file))
        }
    }

    @Test("an append at the wrong offset: 409 with the right Upload-Offset and the problem type", arguments: [3, 6, 8])
    func mismatchingOffset(_ version: Int) throws {
        try withApp(.sqlite) { app in
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: version, complete: false, length: 10) + "0123456789")
            #expect(try connection.readResponse().status == 104)
            let created = try connection.readResponse()
            #expect(created.status == 201)
            #expect(created.header("Upload-Offset") == "10")
            #expect(created.header(Self.completeField(version, false).0) == Self.completeField(version, false).1)
            let path = Self.path(of: try #require(created.header("Location")))
            let wrong = try Self.append(app, path, version: version, offset: 4, body: Array("abc".utf8), complete: false)
            #expect(wrong.status == 409)
            #expect(wrong.header("Upload-Offset") == "10")
            #expect(wrong.header(Self.completeField(version, false).0) == Self.completeField(version, false).1)
            let problem = try wrong.json()
            if version >= 6 {
                #expect(problem["type"] as? String == "https://iana.org/assignments/http-problem-types#mismatching-upload-offset")
                #expect(problem["expected-offset"] as? Int == 10)
                #expect(problem["provided-offset"] as? Int == 4)
            }
            let more = try Self.append(app, path, version: version, offset: 10, body: Array("abc".utf8), complete: false)
            #expect(more.status == (version <= 5 ? 201 : 204))
            #expect(more.header("Upload-Offset") == "13")
            let last = try Self.append(app, path, version: version, offset: 13, body: Array("!".utf8), complete: true)
            #expect(last.status == 201)
            let upload = try #require((try last.json()["uploads"] as? [[String: Any]])?.first)
            #expect(try content(app, try #require(upload["id"] as? String)) == Array("0123456789abc!".utf8))
        }
    }

    @Test("v6+: an append that is not application/partial-upload is 415; lengths that disagree are refused")
    func appendRules() throws {
        try withApp(.sqlite) { app in
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: 8, complete: false, length: 3, extra: [("Upload-Length", "10")]) + "abc")
            #expect(try connection.readResponse().status == 104)
            let created = try connection.readResponse()
            let path = Self.path(of: try #require(created.header("Location")))
            let plain = try RawHTTP(port: app.port).request(
                "PATCH", path,
                headers: [
                    ("Upload-Draft-Interop-Version", "8"), ("Upload-Offset", "3"), ("Upload-Complete", "?0"),
                    ("Content-Type", "application/octet-stream"),
                ], body: [1, 2], close: true)
            #expect(plain.status == 415)
            // Upload-Length 10 was recorded: completing at 5 bytes disagrees.
            let short = try Self.append(app, path, version: 8, offset: 3, body: [1, 2], complete: true)
            #expect(short.status == 400)
            #expect(try short.json()["type"] as? String == "https://iana.org/assignments/http-problem-types#inconsistent-upload-length")
            // Past the declared length: refused, nothing kept.
            let long = try Self.append(app, path, version: 8, offset: 3, body: Array(repeating: 9, count: 20), complete: false)
            #expect(long.status == 413)
            let head = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true)
            #expect(head.header("Upload-Offset") == "3")
            #expect(head.header("Upload-Limit")?.hasPrefix("max-size=") == true)
        }
    }

    @Test("Repr-Digest: a wrong sha-256 discards the upload; the right one is accepted")
    func reprDigest() throws {
        try withApp(.sqlite) { app in
            let file = Self.bytes(2000)
            let right = ":" + Data(try ToolDigest.bytes("sha256sum", file)).base64EncodedString() + ":"
            let wrong = ":" + Data(repeating: 0, count: 32).base64EncodedString() + ":"
            let refusedConnection = try RawHTTP(port: app.port, timeout: 5)
            try refusedConnection.send(
                Array(Self.creation(version: 8, complete: true, length: file.count, extra: [("Repr-Digest", "sha-256=\(wrong)")]).utf8) + file)
            #expect(try refusedConnection.readResponse().status == 104)
            let refused = try refusedConnection.readResponse()
            #expect(refused.status == 400)
            #expect(refused.header("Upload-Complete") == "?1")
            #expect(try app.request("GET", "/uploads").json()["uploads"].map { ($0 as? [Any])?.count } == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("partial").path).isEmpty)
            let acceptedConnection = try RawHTTP(port: app.port, timeout: 5)
            try acceptedConnection.send(
                Array(
                    Self.creation(
                        version: 8, complete: true, length: file.count,
                        extra: [("Repr-Digest", "sha-512=:AAAA:, sha-256=\(right)")]
                    ).utf8) + file)
            #expect(try acceptedConnection.readResponse().status == 104)
            #expect(try acceptedConnection.readResponse().status == 201)
        }
    }

    @Test("Repr-Digest on the append that completes an upload created without one: a wrong sha-256 is 400 and nothing is kept")
    func reprDigestOnAppend() throws {
        try withApp(.sqlite) { app in
            let file = Self.bytes(3000)
            let right = ":" + Data(try ToolDigest.bytes("sha256sum", file)).base64EncodedString() + ":"
            let wrong = ":" + Data(repeating: 0, count: 32).base64EncodedString() + ":"
            for (digest, status) in [(wrong, 400), (right, 201)] {
                let connection = try RawHTTP(port: app.port, timeout: 5)
                try connection.send(Array(Self.creation(version: 8, complete: false, length: 1000).utf8) + file[..<1000])
                #expect(try connection.readResponse().status == 104)
                let created = try connection.readResponse()
                #expect(created.status == 201, "\(created.text)")
                let path = Self.path(of: try #require(created.header("Location")))
                let last = try Self.append(
                    app, path, version: 8, offset: 1000, body: Array(file[1000...]), complete: true, extra: [("Repr-Digest", "sha-256=\(digest)")])
                #expect(last.status == status, "\(last.text)")
                if status == 400 {
                    #expect(last.header("Upload-Complete") == "?1")
                    #expect(try app.request("GET", "/uploads").json()["uploads"].map { ($0 as? [Any])?.count } == 0)
                    #expect(
                        try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true).status == 404
                    )
                    try expectNoPartialBytes(.sqlite, app, id: String(path.split(separator: "/").last!))
                } else {
                    let upload = try #require((try last.json()["uploads"] as? [[String: Any]])?.first)
                    #expect(upload["sha256"] as? String == SHA256Hex.of(file))
                }
            }
        }
    }

    @Test("HEAD without tus's or the draft's fields is GET's head: an unfinished upload is 404 there, and stays resumable")
    func plainHeadOfUnfinished() throws {
        try withApp(.sqlite) { app in
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: 8, complete: false, length: 4) + "abcd")
            #expect(try connection.readResponse().status == 104)
            let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
            let get = try RawHTTP(port: app.port).request("GET", path, close: true)
            #expect(get.status == 404)
            let head = try RawHTTP(port: app.port).request("HEAD", path, close: true)
            #expect(head.status == get.status)
            #expect(head.header("Upload-Offset") == nil)
            #expect(head.header("Tus-Resumable") == nil)
            #expect(head.header("Upload-Complete") == nil)
            // The protocols' own HEADs still tell the offset.
            let draft = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true)
            #expect(draft.status == 204)
            #expect(draft.header("Upload-Offset") == "4")
            let tus = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Tus-Resumable", "1.0.0")], close: true)
            #expect(tus.status == 200)
            #expect(tus.header("Upload-Offset") == "4")
            // Finished, it is an ordinary upload: the plain HEAD is GET's head again.
            #expect(try Self.append(app, path, version: 8, offset: 4, body: Array("ef".utf8), complete: true).status == 201)
            #expect(try RawHTTP(port: app.port).request("HEAD", path, close: true).status == 200)
        }
    }

    @Test(
        "at the per-user limit of unfinished uploads: a complete one-shot upload is stored, and cancelled if cut; another unfinished one is 429 with Retry-After"
    )
    func limitSparesCompleteUploads() throws {
        try withApp(.sqlite, configure: { $0.resumableUploadsPerUser = 1 }) { app in
            let first = try RawHTTP(port: app.port, timeout: 5)
            try first.send(Self.creation(version: 8, complete: false, length: 4) + "abcd")
            #expect(try first.readResponse().status == 104)
            #expect(try first.readResponse().status == 201)
            // A one-shot upload leaves nothing unfinished.
            let whole = try RawHTTP(port: app.port, timeout: 5)
            try whole.send(Self.creation(version: 8, complete: true, length: 4) + "wxyz")
            #expect(try whole.readResponse().status == 104)
            let stored = try whole.readResponse()
            #expect(stored.status == 201, "\(stored.text)")
            // Another unfinished one is refused, and told when a place frees up.
            let second = try RawHTTP(port: app.port, timeout: 5)
            try second.send(Self.creation(version: 8, complete: false, length: 4) + "abcd")
            let refused = try second.readFinalResponse()
            #expect(refused.status == 429)
            let retry = try #require(refused.header("Retry-After").flatMap(Int.init), "\(refused.text)")
            #expect(retry >= 1 && retry <= 24 * 3600)
            let detail = try #require(try refused.json()["detail"] as? String)
            #expect(detail.contains("finish or cancel"), "\(detail)")
            // A one-shot upload let past the limit and cut is cancelled, not kept to resume:
            // the limit can't be walked around by cutting one-shot uploads.
            let cut = try RawHTTP(port: app.port, timeout: 5)
            try cut.send(Self.creation(version: 8, complete: true, length: 8) + "wx")
            let interim = try cut.readResponse()
            #expect(interim.status == 104)
            let location = try #require(interim.header("Location"))
            cut.closeNow()
            let deadline = Date().addingTimeInterval(10)
            var status = 0
            repeat {
                // A HEAD may find the upload still held by the cut request: it waits (up to 5 s).
                status = try RawHTTP(port: app.port, timeout: 10).request(
                    "HEAD", Self.path(of: location), headers: [("Upload-Draft-Interop-Version", "8")], close: true
                ).status
                if status == 404 { break }
                usleep(10_000)
            } while Date() < deadline
            #expect(status == 404, "the cut one-shot upload is still there")
        }
        // One upload declaring more than a user's unfinished uploads may hold can never fit: 413.
        try withApp(.sqlite, configure: { $0.resumableBytesPerUser = 10 }) { app in
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: 8, complete: false, length: 4, extra: [("Upload-Length", "11")]) + "abcd")
            let refused = try connection.readFinalResponse()
            #expect(refused.status == 413, "\(refused.text)")
            #expect(refused.header("Retry-After") == nil)
        }
    }

    @Test("DELETE cancels: the bytes and the row go; OPTIONS tells the limits", arguments: backends)
    func cancelAndOptions(_ backend: Backend) throws {
        try withApp(backend) { app in
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: 7, complete: false, length: 4) + "abcd")
            #expect(try connection.readResponse().status == 104)
            let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
            if backend == .bucket { #expect(try Self.openMultipartUploads(String(path.dropFirst("/uploads/".count))).count == 1) }
            let deleted = try RawHTTP(port: app.port).request("DELETE", path, headers: [("Upload-Draft-Interop-Version", "7")], close: true)
            #expect(deleted.status == 204)
            #expect(try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "7")], close: true).status == 404)
            try expectNoPartialBytes(backend, app, id: String(path.dropFirst("/uploads/".count)))
            let options = try RawHTTP(port: app.port).request("OPTIONS", "/uploads", headers: [("Upload-Draft-Interop-Version", "8")], close: true)
            #expect(options.status == 204)
            #expect(options.header("Upload-Limit") == "max-size=\(1 << 30), max-age=86400")
            #expect(options.header("Tus-Version") == "1.0.0")
        }
    }

    @Test("a new HEAD ends the request still appending: its later bytes are refused, the offset stays usable")
    func takeOver() throws {
        try withApp(.sqlite) { app in
            let file = Self.bytes(50_000)
            let first = try RawHTTP(port: app.port, timeout: 5)
            try first.send(Self.creation(version: 8, complete: true, length: file.count))
            let path = Self.path(of: try #require(try first.readResponse().header("Location")))
            try first.send(Array(file[..<10_000]))
            // Wait until the server has the bytes (on disk: a HEAD would take the upload over), then take over.
            let partial = app.dataDirectory.appendingPathComponent("partial").appendingPathComponent(String(path.dropFirst("/uploads/".count)))
            for _ in 0..<500 {
                if ((try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0) == 10_000 { break }
                usleep(10_000)
            }
            let taken = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true)
            #expect(taken.header("Upload-Offset") == "10000")
            // The old request goes on: it is refused and its connection closed, nothing written.
            try? first.send(Array(file[10_000..<20_000]))
            let refused = try? first.readResponse()
            #expect(refused?.status == 409)
            #expect(first.isClosedByServer())
            let head = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true)
            #expect(head.header("Upload-Offset") == "10000")
            let done = try Self.append(app, path, version: 8, offset: 10_000, body: Array(file[10_000...]), complete: true)
            #expect(done.status == 201)
            #expect((try done.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file))
        }
    }

    /// With the bucket, a take-over asks the request appending to stop on every instance by a
    /// PostgreSQL NOTIFY, which each instance hears on a thread of its own — late, when the
    /// machine is busy: after the request that sent it was answered, and after the append
    /// that followed took the upload over. The notice is for the request it displaced, never
    /// for a later one.
    @Test(
        "a take-over's notice heard late stops nothing but the request it displaced: the append after it goes on",
        .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
    func lateTakeOverNotice() throws {
        try withApp(.bucket) { app in
            let databaseURL = try #require({ if case .postgres(let url, _) = app.app.configuration.database { url } else { nil } }())
            func generation(_ id: String) throws -> Int64 {
                let run = try runProgram(["psql", "-qtAX", databaseURL, "-c", "SELECT generation FROM partial_uploads WHERE id = '\(id)'"])
                return Int64(run.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            }
            let file = Self.bytes(300_000, seed: 13)
            let creation = try RawHTTP(port: app.port, timeout: 5)
            try creation.send(Self.creation(version: 6, complete: true, length: file.count))
            let path = Self.path(of: try #require(try creation.readResponse().header("Location")))
            let id = String(path.dropFirst("/uploads/".count))
            try creation.send(Array(file[..<100_000]))
            shutdown(creation.fd, Int32(SHUT_RDWR))
            let head = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "6")], close: true)
            let offset = try #require(Int(head.header("Upload-Offset") ?? ""), "\(head.raw)")
            let displaced = try generation(id) - 1

            // The append's head and some of its body: once it holds the upload…
            let patch = try RawHTTP(port: app.port, timeout: 10)
            let rest = Array(file[offset...])
            try patch.send(
                Array(
                    ("PATCH \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(rest.count)\r\nConnection: close\r\n"
                        + "Upload-Draft-Interop-Version: 6\r\nUpload-Offset: \(offset)\r\nUpload-Complete: ?1\r\n"
                        + "Content-Type: application/partial-upload\r\n\r\n").utf8) + rest[..<50_000])
            let deadline = Date().addingTimeInterval(10)
            while try generation(id) == displaced + 1, Date() < deadline { usleep(20_000) }
            #expect(try generation(id) == displaced + 2)
            // …the notice that displaced the creating request arrives, as a late NOTIFY would.
            let rows = try #require(app.app.notes.bucketPartialUploads)
            rows.announcePartialUploadTakeOver(id: id, holder: displaced)
            usleep(500_000)
            try patch.send(Array(rest[50_000...]))
            let done = try patch.readFinalResponse()
            #expect(done.status == 201, "\(done.raw)")
            #expect((try done.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file))
        }
    }

    @Test("cut at 100 random points and resumed: the stored SHA-256 is the file's every time", arguments: backends)
    func randomCuts(_ backend: Backend) throws {
        try withApp(backend) { app in
            var generator = SystemRandomNumberGenerator()
            // In the bucket, a tenth of the files are larger than a part (8 MiB), so that cuts
            // fall before, on and after part boundaries too.
            let large = backend == .bucket ? 10 : 0
            for round in 0..<100 {
                let size =
                    round < large
                    ? Int.random(in: (8 << 20) - 100_000...(19 << 20), using: &generator) : Int.random(in: 1...400_000, using: &generator)
                let file = Self.bytes(size, seed: UInt32(round))
                let cut = Int.random(in: 0...file.count, using: &generator)
                let connection = try RawHTTP(port: app.port, timeout: 5)
                try connection.send(Self.creation(version: 6, complete: true, length: file.count))
                let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
                try connection.send(Array(file[..<cut]))
                shutdown(connection.fd, Int32(SHUT_RDWR))
                var offset = 0
                var done: WireResponse?
                while done == nil {
                    let head = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "6")], close: true)
                    offset = try #require(Int(head.header("Upload-Offset") ?? ""))
                    if head.header("Upload-Complete") == "?1" { break }
                    done = try Self.append(app, path, version: 6, offset: offset, body: Array(file[offset...]), complete: true)
                }
                let id = String(path.dropFirst("/uploads/".count))
                let shown = try app.request("GET", "/uploads/\(id)")
                #expect(
                    (try shown.json()["upload"] as? [String: Any])?["sha256"] as? String == SHA256Hex.of(file),
                    "round \(round), cut at \(cut), size \(file.count), offset \(offset): \(done?.status ?? 0) \(done?.text ?? "") / \(shown.text)")
                if backend == .bucket, round < large {
                    #expect(try SHA256Hex.of(Self.bucket().bytes(UploadRecord.blobKey(id))) == SHA256Hex.of(file))
                }
            }
        }
    }

    @Test("a server restart resumes: the partial file and its row are durable", arguments: backends)
    func restart(_ backend: Backend) throws {
        try resumesAfterStop(backend, seed: 7) { first, connection in
            shutdown(connection.fd, Int32(SHUT_RDWR))
            first.stop()
        }
    }

    /// The client's end comes while the server drains (SIGTERM, `Application.shutdown`): the
    /// request's abort keeps what it received on a store thread — here held busy, so that the
    /// keep is still queued when the store is asked to close. What it records (with the bucket,
    /// the tail below a part goes to PostgreSQL) is part of the drain: the next instance
    /// resumes at the bytes received.
    @Test(
        "a graceful stop records what an in-flight upload received before the store closes",
        .enabled(if: SharedBackend.available), arguments: [Backend.postgres, .bucket])
    func drainKeeps(_ backend: Backend) throws {
        try resumesAfterStop(backend, seed: 5) { first, connection in
            // Every store thread busy until the store has begun to close (or 3 s have passed).
            final class Flag: Sendable { let raised = Atomic<Bool>(false) }
            let release = Flag()
            for _ in 0..<64 { first.app.notes.threads.run { while !release.raised.load(ordering: .acquiring) { usleep(2_000) } } }
            let stopped = Semaphore()
            Thread.detachNewThread {
                first.stop(); stopped.signal()
            }
            usleep(300_000)  // the drain has begun: the client's end is seen during it
            shutdown(connection.fd, Int32(SHUT_RDWR))
            let deadline = Date().addingTimeInterval(3)
            while first.app.notes.health()["database"] == "ok", Date() < deadline { usleep(5_000) }
            release.raised.store(true, ordering: .releasing)
            stopped.wait()
        }
    }

    /// Sends a creation (200,000 bytes declared) and 80,000 of its bytes to a first instance on
    /// `backend`, lets `stop` end the client's request and the instance, then checks that a
    /// second instance on the same database and bucket (and data folder) resumes at 80,000
    /// and completes with the file's SHA-256.
    func resumesAfterStop(_ backend: Backend, seed: UInt32, stop: (TestApp, RawHTTP) throws -> Void) throws {
        let shared = backend == .sqlite ? nil : try SharedBackend()
        func configure(_ configuration: inout ServerConfiguration) {
            guard let shared else { return }
            if backend == .bucket {
                shared.configure(&configuration)
            } else {
                configuration.database = .postgres(url: shared.databaseURL, poolSize: 4)
            }
        }
        let file = Self.bytes(200_000, seed: seed)
        let first = try TestApp(configure: configure)
        first.removesData = false
        let connection = try RawHTTP(port: first.port, timeout: 5)
        try connection.send(Self.creation(version: 8, complete: true, length: file.count))
        let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
        try connection.send(Array(file[..<80_000]))
        usleep(200_000)
        try stop(first, connection)
        // With the bucket nothing of the upload is on the instance: the next one starts afresh.
        let second = backend == .bucket ? try TestApp(configure: configure) : try TestApp(dataDirectory: first.dataDirectory, configure: configure)
        defer { second.stop() }
        if backend == .bucket { try? FileManager.default.removeItem(at: first.dataDirectory) }
        let head = try RawHTTP(port: second.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true)
        #expect(head.status == 204)
        let offset = try #require(Int(head.header("Upload-Offset") ?? ""))
        #expect(offset == 80_000, "\(head.raw)")
        let done = try Self.append(second, path, version: 8, offset: offset, body: Array(file[offset...]), complete: true)
        #expect(done.status == 201, "\(done.text)")
        #expect((try done.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file))
    }

    @Test("kill -9 of the server mid-upload: the restarted server resumes at what reached the file, same SHA-256")
    func killed() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-kill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let file = Self.bytes(400_000, seed: 11)
        let first = try ServerProcess(["--quiet"], dataDirectory: data)
        let connection = try RawHTTP(port: first.port, timeout: 5)
        try connection.send(Self.creation(version: 8, complete: true, length: file.count))
        let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
        try connection.send(Array(file[..<150_000]))
        // Until the bytes are on the server's side (the offset stops growing), then the kill.
        for _ in 0..<200 {
            let partial = data.appendingPathComponent("partial").appendingPathComponent(String(path.dropFirst("/uploads/".count)))
            if ((try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0) == 150_000 { break }
            usleep(10_000)
        }
        #expect(first.signal(SIGKILL))
        _ = first.finish()
        let second = try ServerProcess(["--quiet"], dataDirectory: data)
        defer { _ = second.signal(SIGTERM); _ = second.finish() }
        let head = try RawHTTP(port: second.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true)
        #expect(head.status == 204)
        let offset = try #require(Int(head.header("Upload-Offset") ?? ""))
        #expect(offset == 150_000)
        var patch = "PATCH \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpload-Draft-Interop-Version: 8\r\nUpload-Offset: \(offset)\r\n"
        patch +=
            "Upload-Complete: ?1\r\nContent-Type: application/partial-upload\r\nContent-Length: \(file.count - offset)\r\nConnection: close\r\n\r\n"
        let append = try RawHTTP(port: second.port, timeout: 5)
        try append.send(Array(patch.utf8) + Array(file[offset...]))
        let done = try append.readResponse()
        #expect(done.status == 201, "\(done.text)")
        #expect((try done.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file))
    }

    @Test("expired partial uploads are swept: row and bytes")
    func expiry() throws {
        try withApp(
            .sqlite,
            configure: {
                $0.resumableUploadLifetime = 1; $0.resumableSweepInterval = 0.2
            }
        ) { app in
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: 8, complete: false, length: 4) + "abcd")
            #expect(try connection.readResponse().status == 104)
            let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
            let partial = app.dataDirectory.appendingPathComponent("partial").path
            #expect(try FileManager.default.contentsOfDirectory(atPath: partial).count == 1)
            var gone = false
            for _ in 0..<100 where !gone {
                usleep(100_000)
                gone = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true).status == 404
            }
            #expect(gone)
            #expect(try FileManager.default.contentsOfDirectory(atPath: partial).isEmpty)
            // A file no row names (a crash before its row), untouched for longer than a row lives.
            let orphan = app.dataDirectory.appendingPathComponent("partial/0123456789abcdef01234567")
            try Data("left".utf8).write(to: orphan)
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: orphan.path)
            var swept = false
            for _ in 0..<100 where !swept {
                usleep(100_000)
                swept = !FileManager.default.fileExists(atPath: orphan.path)
            }
            #expect(swept)
        }
    }

    @Test("authentication before any byte; another user's upload is 404; the per-user limit", arguments: backends)
    func users(_ backend: Backend) throws {
        try withApp(
            backend,
            configure: {
                $0.auth = .required; $0.resumableUploadsPerUser = 1; $0.resumableBytesPerUser = 1000
            }
        ) { app in
            try app.addUser("ann")
            try app.addUser("bob")
            let ann = try app.token("ann"), bob = try app.token("bob")
            // No credentials: refused at the head, no 104, nothing stored.
            let anonymous = try RawHTTP(port: app.port, timeout: 5)
            try anonymous.send(Self.creation(version: 8, complete: false, length: 4))
            #expect(try anonymous.readResponse().status == 401)
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: 8, complete: false, length: 4, extra: [("Authorization", "Bearer \(ann)")]) + "abcd")
            #expect(try connection.readResponse().status == 104)
            let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
            let theirs = try RawHTTP(port: app.port).request(
                "HEAD", path, headers: [("Upload-Draft-Interop-Version", "8"), ("Authorization", "Bearer \(bob)")], close: true)
            #expect(theirs.status == 404)
            let append = try Self.append(app, path, version: 8, offset: 4, body: [1], complete: true, extra: [("Authorization", "Bearer \(bob)")])
            #expect(append.status == 404)
            let second = try RawHTTP(port: app.port, timeout: 5)
            try second.send(Self.creation(version: 8, complete: false, length: 4, extra: [("Authorization", "Bearer \(ann)")]) + "abcd")
            #expect(try second.readResponse().status == 429)
            // Bob's first would hold more than his 1000 bytes alone: waiting can't help it, 413.
            let large = try RawHTTP(port: app.port, timeout: 5)
            try large.send(
                Self.creation(version: 8, complete: false, length: 4, extra: [("Authorization", "Bearer \(bob)"), ("Upload-Length", "5000")]))
            let tooLarge = try large.readResponse()
            #expect(tooLarge.status == 413)
            #expect(tooLarge.header("Retry-After") == nil)
        }
    }

    @Test(
        "PostgreSQL and a bucket: the partial bytes are one multipart upload of parts of 8 MiB and a tail in PostgreSQL, completed into the upload's key",
        .enabled(if: SharedBackend.available))
    func bucket() throws {
        try withApp(.bucket) { app in
            // Two parts and a tail when the first request is cut, the rest in a second request.
            let file = Self.bytes((19 << 20) + 4_321, seed: 9), cut = (17 << 20) + 5
            let connection = try RawHTTP(port: app.port, timeout: 10)
            try connection.send(Self.creation(version: 8, complete: true, length: file.count))
            let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
            let id = String(path.dropFirst("/uploads/".count))
            let open = try #require(try Self.openMultipartUploads(id).first, "a multipart upload begins with the upload")
            #expect(open.key == "uploads/" + id)
            try connection.send(Array(file[..<cut]))
            // Both parts are in the bucket while the request is still open.
            let deadline = Date().addingTimeInterval(20)
            var parts: [S3BlobStore.UploadedPart] = []
            while parts.count < 2, Date() < deadline {
                parts = (try? Self.bucket().listParts(open.key, uploadID: open.uploadID)) ?? []
                usleep(50_000)
            }
            #expect(parts.map(\.size) == [8 << 20, 8 << 20])
            shutdown(connection.fd, Int32(SHUT_RDWR))
            // The offset is every byte received: the tail is kept too (in PostgreSQL).
            let head = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true)
            #expect(head.header("Upload-Offset") == String(cut), "\(head.raw)")
            let done = try Self.append(app, path, version: 8, offset: cut, body: Array(file[cut...]), complete: true)
            #expect(done.status == 201, "\(done.text)")
            #expect((try done.json()["uploads"] as? [[String: Any]])?.first?["sha256"] as? String == SHA256Hex.of(file))
            #expect(try Self.bucket().head(UploadRecord.blobKey(id))?.size == Int64(file.count))
            #expect(SHA256Hex.of(try content(app, id)) == SHA256Hex.of(file))
            try expectNoPartialBytes(.bucket, app, id: id)
        }
    }

    @Test(
        "PostgreSQL and a bucket: an empty upload, and one of a single small part, complete; expiry aborts the multipart upload",
        .enabled(if: SharedBackend.available))
    func bucketEdges() throws {
        try withApp(
            .bucket,
            configure: {
                $0.resumableUploadLifetime = 1; $0.resumableSweepInterval = 0.2
            }
        ) { app in
            for size in [0, 1, 100_000] {
                let file = Self.bytes(size, seed: UInt32(size))
                let connection = try RawHTTP(port: app.port, timeout: 10)
                try connection.send(Array(Self.creation(version: 8, complete: true, length: size).utf8) + file)
                #expect(try connection.readResponse().status == 104)
                let done = try connection.readResponse()
                #expect(done.status == 201, "\(done.text)")
                let upload = try #require((try done.json()["uploads"] as? [[String: Any]])?.first)
                #expect(upload["sha256"] as? String == SHA256Hex.of(file))
                let id = try #require(upload["id"] as? String)
                #expect(try content(app, id) == file)
                try expectNoPartialBytes(.bucket, app, id: id)
            }
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: 8, complete: false, length: 4) + "abcd")
            #expect(try connection.readResponse().status == 104)
            let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
            let id = String(path.dropFirst("/uploads/".count))
            var gone = false
            for _ in 0..<100 where !gone {
                usleep(100_000)
                gone = try RawHTTP(port: app.port).request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")], close: true).status == 404
            }
            #expect(gone)
            try expectNoPartialBytes(.bucket, app, id: id)
        }
    }

    @Test(
        "PostgreSQL and a bucket: the sweep aborts multipart uploads no partial upload names, once older than a row can live, and spares the others",
        .enabled(if: SharedBackend.available))
    func bucketLeftovers() throws {
        // A bucket of its own: the sweep looks at every multipart upload in it, and other tests'
        // uploads in the shared bucket have their rows in other databases.
        let backend = try ScaleOutBackend()
        let environment = ProcessInfo.processInfo.environment.merging(backend.database.credentials) { _, new in new }
        try TestApp.with(configure: { configuration in
            configuration.database = .postgres(url: backend.databaseURL, poolSize: 4)
            configuration.blobStore = backend.blobStoreURL
            configuration.environment.merge(backend.database.credentials) { _, new in new }
        }) { app in
            let bucket = S3BlobStore(try S3BlobStore.Configuration(url: backend.blobStoreURL, environment: environment))
            // A crash between beginning a multipart upload and recording its row leaves one nobody names.
            let stray = UploadRecord.newID()
            let strayUpload = try bucket.createMultipartUpload(UploadRecord.blobKey(stray))
            let connection = try RawHTTP(port: app.port, timeout: 5)
            try connection.send(Self.creation(version: 8, complete: false, length: 4) + "abcd")
            #expect(try connection.readResponse().status == 104)
            let path = Self.path(of: try #require(try connection.readResponse().header("Location")))
            let kept = String(path.dropFirst("/uploads/".count))
            let storage = app.app.resumable.storage
            let lifetime = app.app.configuration.resumableUploadLifetime
            // Not old enough yet: nothing goes.
            #expect(storage.sweepLeftovers(now: WallClock.seconds(), lifetime: lifetime) == 0)
            #expect(try bucket.listMultipartUploads(prefix: UploadRecord.blobKey(stray)).map(\.uploadID) == [strayUpload])
            // As if a day and two hours had passed (the sweep looks at most once an hour).
            let later = WallClock.seconds() + lifetime + 7200
            #expect(storage.sweepLeftovers(now: later, lifetime: lifetime) >= 1)
            #expect(try bucket.listMultipartUploads(prefix: UploadRecord.blobKey(stray)).isEmpty)
            #expect(try bucket.listMultipartUploads(prefix: UploadRecord.blobKey(kept)).count == 1)
            #expect(storage.sweepLeftovers(now: later + 60, lifetime: lifetime) == 0, "again within the hour")
        }
    }

    // MARK: - tus 1.0

    @Test("tus: creation, creation-with-upload, HEAD, PATCH with checksums, metadata, termination, method override", arguments: backends)
    func tus(_ backend: Backend) throws {
        try withApp(backend) { app in
            let file = Self.bytes(30_000)
            let tus = [("Tus-Resumable", "1.0.0")]
            let metadata = "filename \(Data("dog.jpg".utf8).base64EncodedString()),filetype \(Data("image/jpeg".utf8).base64EncodedString())"
            let created = try RawHTTP(port: app.port).request(
                "POST", "/uploads",
                headers: tus + [
                    ("Upload-Length", String(file.count)), ("Upload-Metadata", metadata), ("Content-Type", "application/offset+octet-stream"),
                ], body: Array(file[..<10_000]), close: true)
            #expect(created.status == 201, "\(created.text)")
            #expect(created.header("Upload-Offset") == "10000")
            #expect(created.header("Tus-Resumable") == "1.0.0")
            #expect(created.header("Upload-Expires")?.hasSuffix(" GMT") == true)
            let path = Self.path(of: try #require(created.header("Location")))
            let head = try RawHTTP(port: app.port).request("HEAD", path, headers: tus, close: true)
            #expect(head.status == 200)
            #expect(head.header("Upload-Offset") == "10000")
            #expect(head.header("Upload-Length") == String(file.count))
            #expect(head.header("Cache-Control") == "no-store")
            func patch(_ range: Range<Int>, checksum: String?, override: Bool = false) throws -> WireResponse {
                var headers = tus + [("Upload-Offset", String(range.lowerBound)), ("Content-Type", "application/offset+octet-stream")]
                if let checksum { headers.append(("Upload-Checksum", checksum)) }
                if override { headers.append(("X-HTTP-Method-Override", "PATCH")) }
                return try RawHTTP(port: app.port).request(override ? "POST" : "PATCH", path, headers: headers, body: Array(file[range]), close: true)
            }
            let sha1 = "sha1 " + Data(try ToolDigest.bytes("sha1sum", Array(file[10_000..<20_000]))).base64EncodedString()
            let bad = try patch(10_000..<20_000, checksum: "sha256 " + Data(repeating: 1, count: 32).base64EncodedString())
            #expect(bad.status == 460)
            #expect(try RawHTTP(port: app.port).request("HEAD", path, headers: tus, close: true).header("Upload-Offset") == "10000")
            let good = try patch(10_000..<20_000, checksum: sha1, override: true)
            #expect(good.status == 204, "\(good.text)")
            #expect(good.header("Upload-Offset") == "20000")
            let wrong = try patch(10_000..<20_000, checksum: nil)
            #expect(wrong.status == 409)
            let sha256 = "sha256 " + Data(try ToolDigest.bytes("sha256sum", Array(file[20_000...]))).base64EncodedString()
            let last = try patch(20_000..<file.count, checksum: sha256)
            #expect(last.status == 204)
            #expect(last.header("Upload-Offset") == String(file.count))
            let id = String(path.dropFirst("/uploads/".count))
            let shown = try #require(try app.request("GET", "/uploads/\(id)").json()["upload"] as? [String: Any])
            #expect(shown["filename"] as? String == "dog.jpg")
            #expect(shown["content_type"] as? String == "image/jpeg")
            #expect(shown["sha256"] as? String == SHA256Hex.of(file))
            // Termination of another, and a version this server does not speak.
            let other = try RawHTTP(port: app.port).request("POST", "/uploads", headers: tus + [("Upload-Length", "5")], close: true)
            #expect(other.status == 201)
            let otherPath = Self.path(of: try #require(other.header("Location")))
            #expect(try RawHTTP(port: app.port).request("DELETE", otherPath, headers: tus, close: true).status == 204)
            #expect(try RawHTTP(port: app.port).request("HEAD", otherPath, headers: tus, close: true).status == 404)
            let old = try RawHTTP(port: app.port).request(
                "POST", "/uploads", headers: [("Tus-Resumable", "0.2.2"), ("Upload-Length", "5")], close: true)
            #expect(old.status == 412)
            #expect(old.header("Tus-Version") == "1.0.0")
        }
    }

    /// tus 1.0: "The Server MUST respond with the Upload-Metadata header in a HEAD response if
    /// the Client sent it in the upload creation request" — the value sent, before and after
    /// completion; none invented when none was sent.
    @Test("tus: HEAD answers Upload-Metadata exactly as sent, also once complete; nothing when none was sent", arguments: backends)
    func tusMetadataAsSent(_ backend: Backend) throws {
        try withApp(backend) { app in
            let tus = [("Tus-Resumable", "1.0.0")]
            let sent =
                "filename \(Data("dog.jpg".utf8).base64EncodedString()),is_confidential,filetype \(Data("image/jpeg".utf8).base64EncodedString())"
            func create(_ metadata: String?) throws -> String {
                var headers = tus + [("Upload-Length", "10")]
                if let metadata { headers.append(("Upload-Metadata", metadata)) }
                let created = try RawHTTP(port: app.port).request("POST", "/uploads", headers: headers, close: true)
                #expect(created.status == 201, "\(created.text)")
                return Self.path(of: try #require(created.header("Location")))
            }
            func head(_ path: String) throws -> WireResponse {
                let head = try RawHTTP(port: app.port).request("HEAD", path, headers: tus, close: true)
                #expect(head.status == 200)
                return head
            }
            func complete(_ path: String) throws {
                let patch = try RawHTTP(port: app.port).request(
                    "PATCH", path, headers: tus + [("Upload-Offset", "0"), ("Content-Type", "application/offset+octet-stream")],
                    body: Self.bytes(10), close: true)
                #expect(patch.status == 204, "\(patch.text)")
            }
            let with = try create(sent)
            #expect(try head(with).header("Upload-Metadata") == sent)
            try complete(with)
            let completed = try head(with)
            #expect(completed.header("Upload-Offset") == "10")
            #expect(completed.header("Upload-Metadata") == sent)

            let without = try create(nil)
            #expect(try head(without).header("Upload-Metadata") == nil)
            try complete(without)
            #expect(try head(without).header("Upload-Metadata") == nil)
            let shown = try #require(try app.request("GET", "/uploads/\(without.dropFirst("/uploads/".count))").json()["upload"] as? [String: Any])
            #expect(shown["filename"] as? String == "upload")
        }
    }
}

/// Digests by the system's tools (not the server's code), as raw bytes.
enum ToolDigest {
    static func bytes(_ tool: String, _ data: [UInt8]) throws -> [UInt8] {
        let hex = Array(try runProgram([tool], input: data, separateErrors: true).output.split(separator: " ")[0].utf8)
        return stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }
}

/// tuspy from `.venv-test` (scripts/test-venv) against the tus endpoints.
@Suite("Resumable uploads: tuspy")
struct TusClientTests {
    @Test(
        "tuspy uploads in chunks with sha1 checksums, stops, and a new uploader resumes from the server's offset",
        arguments: ResumableUploadTests.backends)
    func tuspy(_ backend: ResumableUploadTests.Backend) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let python = root.appendingPathComponent(".venv-test/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw RawHTTP.Failure(message: "tuspy is not installed: run scripts/test-venv (make test does)")
        }
        try ResumableUploadTests().withApp(backend) { app in
            let file = ResumableUploadTests.bytes(700_000, seed: 42)
            let path = app.dataDirectory.appendingPathComponent("tus-input.bin")
            try Data(file).write(to: path)
            let output = app.dataDirectory.appendingPathComponent("tus-output.txt")
            let errors = app.dataDirectory.appendingPathComponent("tus-errors.txt")
            let process = try ChildProgram(
                [
                    python.path, root.appendingPathComponent("Tests/Resumable/tus_upload.py").path,
                    "http://127.0.0.1:\(app.port)/uploads", path.path, String(100_000), "3",
                ], output: .file(output), errors: .file(errors))
            // Bounded: a hang is this test's failure, not the suite's.
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning, Date() < deadline { usleep(50_000) }
            if process.isRunning {
                process.stop()
                Issue.record("tuspy got no answer within 60 s")
                return
            }
            func text(_ file: URL) -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }
            let lines = text(output).split(separator: "\n")
            #expect(exitStatus(process.waitUntilExit()) == 0, "\(text(errors))")
            let location = try #require(lines.first.map(String.init))
            #expect(lines.dropFirst().first == "300000")
            let id = try #require(location.split(separator: "/").last.map(String.init))
            let shown = try #require(try app.request("GET", "/uploads/\(id)").json()["upload"] as? [String: Any])
            #expect(shown["filename"] as? String == "tuspy.bin")
            #expect(shown["content_type"] as? String == "application/x-test")
            #expect(shown["size"] as? Int == file.count)
            #expect(shown["sha256"] as? String == SHA256Hex.of(file))
        }
    }
}
