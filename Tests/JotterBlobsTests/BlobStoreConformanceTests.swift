import Foundation
import Synchronization
import JotterBlobs
import Testing

/// The `BlobStore` contract, against every backend.
@Suite struct BlobStoreConformanceTests {
    @Test(arguments: Backend.available) func putHeadGetDelete(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let store = fixture.store, key = fixture.key("one")
        let bytes = Array("hello, blobs".utf8)
        let stored = try store.put(key, bytes: bytes)
        #expect(stored.size == Int64(bytes.count))
        let info = try #require(try store.head(key))
        #expect(info.size == Int64(bytes.count))
        #expect(info.etag.hasPrefix("\"") && info.etag.count > 2)
        #expect(try store.bytes(key) == bytes)
        try store.delete(key)
        #expect(try store.head(key) == nil)
        #expect(throws: BlobError.notFound(key)) { try store.bytes(key) }
        try store.delete(key)  // deleting what is not there succeeds
    }

    @Test(arguments: Backend.available) func rangesAreExactAndClamped(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let store = fixture.store, key = fixture.key("ranged")
        let bytes = patternChunk(0, size: 1000)
        try store.put(key, bytes: bytes)
        #expect(try store.bytes(key, range: 10...19) == Array(bytes[10...19]))
        #expect(try store.bytes(key, range: 0...0) == [bytes[0]])
        #expect(try store.bytes(key, range: 990...5000) == Array(bytes[990...]))
        var info: BlobInfo?
        var received = 0
        info = try store.get(key, range: 500...599) { received += $0.count }
        #expect(received == 100)
        #expect(info?.size == 1000)
        #expect(throws: BlobError.invalidRange) { try store.bytes(key, range: 1000...1010) }
    }

    @Test(arguments: Backend.available) func overwriteReplacesWholeAndChangesETag(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let store = fixture.store, key = fixture.key("again")
        let first = try store.put(key, bytes: Array("first".utf8))
        let second = try store.put(key, bytes: Array("the second one".utf8))
        #expect(try store.bytes(key) == Array("the second one".utf8))
        #expect(try store.head(key)?.etag != first.etag)
        #expect(try store.head(key)?.size == second.size)
    }

    @Test(arguments: Backend.available) func listByPrefixSortedThenDelete(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let store = fixture.store
        for name in ["b/1", "a/2", "a/1", "ab"] { try store.put(fixture.key(name), bytes: Array(name.utf8)) }
        #expect(try store.list(prefix: fixture.key("a/")).map(\.key) == [fixture.key("a/1"), fixture.key("a/2")])
        #expect(try store.list(prefix: fixture.key("a")).map(\.key) == ["a/1", "a/2", "ab"].map(fixture.key))
        let all = try store.list(prefix: fixture.prefix)
        #expect(all.map(\.key) == ["a/1", "a/2", "ab", "b/1"].map(fixture.key))
        #expect(all.first?.size == 3)
        // Each listed object says when it was stored (what the orphan sweep goes by).
        let now = Int64(Date().timeIntervalSince1970)
        for blob in all { #expect(blob.modified.map { abs(now - $0) <= 120 } == true, "\(blob.key): \(String(describing: blob.modified))") }
        for blob in all { try store.delete(blob.key) }
        #expect(try store.list(prefix: fixture.prefix).isEmpty)
    }

    @Test(arguments: Backend.available) func listPagesPastOneThousand(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let keys = (0..<1010).map { fixture.key(String(format: "k%05d", $0)) }
        let store = fixture.store
        DispatchQueue.concurrentPerform(iterations: 10) { slice in
            for key in keys[(slice * 101)..<((slice + 1) * 101)] { try! store.put(key, bytes: [1]) }
        }
        #expect(try fixture.store.list(prefix: fixture.prefix).map(\.key) == keys)
    }

    @Test(arguments: Backend.available) func keysWithSpacesAndUnicodeRoundTrip(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let key = fixture.key("dir/ünï côde+&=%?.txt")
        try fixture.store.put(key, bytes: [1, 2, 3])
        #expect(try fixture.store.bytes(key) == [1, 2, 3])
        #expect(try fixture.store.list(prefix: fixture.key("dir/")).map(\.key) == [key])
    }

    @Test(arguments: Backend.available) func invalidKeysAreRefused(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        for key in ["", "/abs", "a//b", "../up", "a/./b", "a/"] {
            #expect(throws: BlobError.invalidKey(key)) { try fixture.store.put(key, bytes: [1]) }
        }
    }

    @Test(arguments: Backend.available) func failingSourceLeavesNoObject(_ backend: Backend) throws {
        struct SourceFailed: Error {}
        let fixture = try BlobFixture(backend)
        let key = fixture.key("broken")
        var sent = 0
        // 6 MiB then a failure: past one 5 MiB part, so S3 had a multipart upload to abort.
        #expect(throws: SourceFailed.self) {
            try fixture.store.put(key) {
                sent += 1
                if sent > 6 { throw SourceFailed() }
                return patternChunk(sent, size: 1 << 20)
            }
        }
        #expect(try fixture.store.head(key) == nil)
        #expect(try fixture.store.list(prefix: fixture.prefix).isEmpty)
    }

    @Test(arguments: Backend.available) func sinkErrorStopsTheDownload(_ backend: Backend) throws {
        struct SinkFull: Error {}
        let fixture = try BlobFixture(backend)
        let key = fixture.key("stop")
        try fixture.store.put(key, bytes: patternChunk(1, size: 3 << 20))
        var calls = 0
        #expect(throws: SinkFull.self) {
            try fixture.store.get(key, range: nil) { _ in
                calls += 1; throw SinkFull()
            }
        }
        #expect(calls == 1)
    }

    @Test(arguments: Backend.available) func putFromFile(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let path = NSTemporaryDirectory() + "jotter-blob-source-\(UUID().uuidString)"
        let bytes = patternChunk(7, size: 300_000)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        try fixture.store.put(fixture.key("file"), contentsOfFile: path, chunkSize: 64 << 10)
        #expect(try fixture.store.bytes(fixture.key("file")) == bytes)
    }
}

/// What only the S3 store has: signatures, configuration from a URL and the environment.
@Suite struct S3BlobStoreTests {
    @Test(.enabled(if: Backend.s3Available, Backend.s3SkipMessage)) func wrongSecretIsRefused() throws {
        let store = S3BlobStore(Backend.s3Configuration(secret: "not-the-secret"))
        for attempt in [{ _ = try store.put("t-denied/x", bytes: [1]) }, { _ = try store.list(prefix: "") }] {
            #expect {
                try attempt()
            } throws: { error in
                guard case BlobError.accessDenied(let message) = error else { return false }
                return message.contains("SignatureDoesNotMatch")
            }
        }
        // The right secret on the same server works (the refusal was the signature).
        #expect(throws: Never.self) { _ = try S3BlobStore(Backend.s3Configuration()).list(prefix: "t-denied/") }
    }

    @Test func configurationFromURLAndEnvironment() throws {
        let environment = ["AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "TOKEN"]
        let explicit = try S3BlobStore.Configuration(
            url: "s3://notes-blobs?endpoint=http%3A%2F%2F127.0.0.1%3A9000%2F&region=eu-west-3", environment: environment)
        #expect(
            explicit
                == S3BlobStore.Configuration(
                    bucket: "notes-blobs", endpoint: "http://127.0.0.1:9000", region: "eu-west-3",
                    accessKey: "AK", secretKey: "SK", sessionToken: "TOKEN"))
        let fromEnvironment = try S3BlobStore.Configuration(
            url: "s3://b",
            environment: environment.merging(
                ["AWS_ENDPOINT_URL": "https://s3.example.test", "AWS_DEFAULT_REGION": "ap-south-1"]) { $1 })
        #expect(fromEnvironment.endpoint == "https://s3.example.test")
        #expect(fromEnvironment.region == "ap-south-1")
        let defaults = try S3BlobStore.Configuration(url: "s3://b?endpoint=http://h:1", environment: environment)
        #expect(defaults.region == "us-east-1")
        #expect(defaults.partSize == 8 << 20)
        for bad in [
            "http://b?endpoint=http://h", "s3://?endpoint=http://h", "s3://b", "s3://b?endpoint=ftp://h",
            "s3://b?endpoint=http://h&colour=blue", "s3://b?endpoint=http%zz",
        ] {
            #expect(throws: BlobError.self, "\(bad)") { try S3BlobStore.Configuration(url: bad, environment: environment) }
        }
        #expect(throws: BlobError.self) { try S3BlobStore.Configuration(url: "s3://b?endpoint=http://h", environment: [:]) }
    }

    @Test func unreachableEndpointIsTransient() throws {
        // Port 9 on loopback: nothing listens, the connection is refused at once.
        let store = S3BlobStore(.init(bucket: "b", endpoint: "http://127.0.0.1:9", region: "us-east-1", accessKey: "a", secretKey: "s"))
        #expect {
            _ = try store.head("x")
        } throws: { error in
            guard let error = error as? BlobError, case .transport = error else { return false }
            return error.isTransient
        }
    }
}

/// `get`'s `opened`: what the object is, before any byte, and never for one that is not there.
@Suite struct BlobOpenTests {
    @Test(arguments: Backend.available) func openedComesFirstAndOnlyForAnObjectThere(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let store = fixture.store, key = fixture.key("opened")
        let bytes = patternChunk(7, size: 300_000)
        try store.put(key, bytes: bytes)
        var events: [String] = []
        var openedInfo: BlobInfo?
        try store.get(
            key, range: 1000...1999,
            opened: { info in
                openedInfo = info
                events.append("opened")
            },
            into: { chunk in
                if events.last != "bytes" { events.append("bytes") }
            })
        #expect(events == ["opened", "bytes"])
        #expect(openedInfo?.size == Int64(bytes.count))
        #expect(openedInfo?.etag == (try store.head(key))?.etag)

        var opened = false
        #expect(throws: BlobError.notFound(fixture.key("missing"))) {
            try store.get(fixture.key("missing"), range: nil, opened: { _ in opened = true }, into: { _ in })
        }
        #expect(throws: BlobError.invalidRange) {
            try store.get(key, range: 400_000...400_010, opened: { _ in opened = true }, into: { _ in })
        }
        #expect(!opened)

        // An error from `opened` stops the transfer before any byte, and is rethrown.
        struct Refused: Error {}
        var received = 0
        #expect(throws: Refused.self) {
            try store.get(key, range: nil, opened: { _ in throw Refused() }, into: { received += $0.count })
        }
        #expect(received == 0)
    }

    /// What `open` gives for an answer not sent yet: the range's exact bytes (a local file's
    /// descriptor, or a bucket's download), nothing for no bytes once the object is known to be
    /// there, and a missing object as `notFound` — thrown, or (a download) given to
    /// `whenOpened`. The capabilities say which kind of store it is.
    @Test(arguments: Backend.available) func openGivesTheRangeOrNotFound(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let store = fixture.store, key = fixture.key("opened")
        let bytes = patternChunk(7, size: 300_000)
        try store.put(key, bytes: bytes)
        #expect(store.readsBlock == (backend == .s3))
        #expect((store.multipart != nil) == (backend == .s3))

        func read(_ key: String, offset: Int64, length: Int64) throws -> [UInt8] {
            switch try store.open(key, offset: offset, length: length, bufferLimit: 64 << 10) {
            case .file(let descriptor):
                defer { close(descriptor) }
                var out = [UInt8](repeating: 0, count: Int(length))
                let count = out.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, Int(length), off_t(offset)) }
                #expect(count == Int(length))
                return out
            case .empty:
                return []
            case .download(let download):
                defer { download.cancel() }
                let opened = Mutex<Result<BlobInfo, any Error>?>(nil)
                download.whenOpened { outcome in opened.withLock { $0 = outcome } }
                // As a response does: the status waits for the store's answer, then the bytes.
                let deadline = ContinuousClock.now + .seconds(30)
                var outcome: Result<BlobInfo, any Error>?
                while outcome == nil && ContinuousClock.now < deadline {
                    outcome = opened.withLock { $0 }
                    if outcome == nil { usleep(2_000) }
                }
                let info = try #require(outcome, "no answer in 30 s").get()
                #expect(info.size == Int64(bytes.count))
                var out: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 16 << 10)
                while ContinuousClock.now < deadline {
                    switch buffer.withUnsafeMutableBytes({ download.read(into: $0) }) {
                    case .bytes(let count): out += buffer[..<count]
                    case .wait: usleep(2_000)
                    case .end: return out
                    case .failed: throw BlobError.transport("cut short")
                    }
                }
                Issue.record("the download did not end in 30 s")
                return out
            }
        }
        #expect(try read(key, offset: 0, length: Int64(bytes.count)) == bytes)
        #expect(try read(key, offset: 1234, length: 100_000) == Array(bytes[1234..<101_234]))
        #expect(try read(key, offset: 5, length: 0) == [])
        for length: Int64 in [0, 10] {
            #expect(throws: BlobError.notFound(fixture.key("missing"))) { try read(fixture.key("missing"), offset: 0, length: length) }
        }
    }

    @Test func anUnreachableBucketThrowsBeforeOpened() throws {
        let store = S3BlobStore(.init(bucket: "b", endpoint: "http://127.0.0.1:9", region: "us-east-1", accessKey: "a", secretKey: "s"))
        var opened = false
        #expect {
            try store.get("x", range: nil, opened: { _ in opened = true }, into: { _ in })
        } throws: { ($0 as? BlobError)?.isTransient == true }
        #expect(!opened)
    }
}
