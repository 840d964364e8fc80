import Foundation
import Synchronization
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// `Idempotency-Key` answers kept in the database: across a restart, across instances on one
/// PostgreSQL, within a byte budget.
@Suite("Idempotency keys in the database")
struct SharedIdempotencyTests {
    static func noteCount(_ app: TestApp, limit: Int = 20) throws -> Int? {
        (try app.request("GET", "/notes?limit=\(limit)").json()["notes"] as? [Any])?.count
    }

    @Test("SQLite: a POST retried after a restart gets the first answer and creates nothing")
    func afterRestart() throws {
        let first = try TestApp()
        first.removesData = false
        let key = [("Idempotency-Key", "restart-1")]
        let created = try first.request("POST", "/notes", headers: key, body: "body=once")
        #expect(created.status == 201)
        first.stop()
        let second = try TestApp(dataDirectory: first.dataDirectory)
        defer { second.stop() }
        let again = try second.request("POST", "/notes", headers: key, body: "body=once")
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.text == created.text)
        #expect(again.header("Location") == created.header("Location"))
        #expect(try Self.noteCount(second) == 1)
    }

    @Test("an answer over 64 KiB is kept as a reference: the retry is 303 See Other to the note, and creates nothing")
    func largeAnswerIsAReference() throws {
        try TestApp.with { app in
            let body = "body=" + String(repeating: "x", count: 100_000)
            let key = [("Idempotency-Key", "large-1")]
            let created = try app.request("POST", "/notes", headers: key, body: body)
            #expect(created.status == 201)
            let again = try app.request("POST", "/notes", headers: key, body: body)
            #expect(again.status == 303)
            #expect(again.header("Location") == created.header("Location"))
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(try Self.noteCount(app) == 1)
        }
    }
}

/// Two instances on one PostgreSQL and bucket.
@Suite("Idempotency keys across instances", .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
struct IdempotencyAcrossInstancesTests {
    /// Sends every key twice at once (`send(index)`: key `index / 2`, to instance `index % 2`);
    /// checks that each key made one answer and its other answer is `409` or the same one again.
    /// The first answer of each key.
    static func race(_ keys: [String], send: @escaping @Sendable (Int) throws -> WireResponse) -> [String: WireResponse] {
        let answers = Mutex<[(String, WireResponse)]>([])
        DispatchQueue.concurrentPerform(iterations: keys.count * 2) { index in
            if let response = try? send(index) { answers.withLock { $0.append((keys[index / 2], response)) } }
        }
        let all = answers.withLock { $0 }
        #expect(all.count == keys.count * 2)
        var first: [String: WireResponse] = [:]
        for key in keys {
            let pair = all.filter { $0.0 == key }.map(\.1)
            let created = pair.filter { $0.status == 201 && $0.header("Idempotent-Replayed") == nil }
            #expect(created.count == 1, "\(key): \(pair.map(\.status))")
            for other in pair where other.header("Idempotent-Replayed") != nil || other.status != 201 {
                #expect(other.status == 409 || (other.status == 201 && other.text == created.first?.text), "\(key): \(other.status)")
            }
            first[key] = created.first
        }
        return first
    }

    @Test("one key sent to two instances at once: one note, the other answer 409 or the same answer; after a restart, the same answer")
    func race() throws {
        let backend = try SharedBackend()
        let keys = (0..<12).map { "race-\($0)" }
        var firstAnswers: [String: (status: Int, text: String, replayed: Bool)] = [:]
        try TestApp.with(configure: backend.configure) { one in
            try TestApp.with(configure: backend.configure) { two in
                let created = Self.race(keys) { index in
                    try (index % 2 == 0 ? one : two).request(
                        "POST", "/notes", headers: [("Idempotency-Key", keys[index / 2])], body: "body=\(keys[index / 2])")
                }
                for (key, answer) in created { firstAnswers[key] = (answer.status, answer.text, false) }
                let count = try SharedIdempotencyTests.noteCount(one, limit: 100)
                #expect(count == keys.count)
            }
        }
        // Both instances gone; a new one on the same database answers every key the same.
        try TestApp.with(configure: backend.configure) { three in
            for key in keys {
                let again = try three.request("POST", "/notes", headers: [("Idempotency-Key", key)], body: "body=\(key)")
                #expect(again.status == 201)
                #expect(again.header("Idempotent-Replayed") == "true")
                #expect(again.text == firstAnswers[key]?.text)
            }
            let count = try SharedIdempotencyTests.noteCount(three, limit: 100)
            #expect(count == keys.count)
        }
    }

    @Test(
        "one keyed upload sent to two instances at once: one upload, the other answer 409 or the same answer; a retry on a new instance, the same answer"
    )
    func uploadRace() throws {
        let backend = try SharedBackend()
        let keys = (0..<8).map { "upload-race-\($0)" }
        var parts = MultipartBuilder()
        parts.file("file", filename: "race.bin", body: [UInt8](repeating: 7, count: 100_000))
        let body = parts.finished(), type = [("Content-Type", parts.contentType)]
        @Sendable func post(_ app: TestApp, _ key: String) throws -> WireResponse {
            try RawHTTP(port: app.port, timeout: 20).request("POST", "/uploads", headers: type + [("Idempotency-Key", key)], body: body, close: true)
        }
        func uploadCount(_ app: TestApp) throws -> Int? {
            (try app.request("GET", "/uploads?limit=100").json()["uploads"] as? [Any])?.count
        }
        var firstAnswers: [String: String] = [:]
        try TestApp.with(configure: backend.configure) { one in
            try TestApp.with(configure: backend.configure) { two in
                let created = Self.race(keys) { index in try post(index % 2 == 0 ? one : two, keys[index / 2]) }
                for (key, answer) in created { firstAnswers[key] = answer.text }
                let count = try uploadCount(one)
                #expect(count == keys.count)
            }
        }
        try TestApp.with(configure: backend.configure) { three in
            for key in keys {
                let again = try post(three, key)
                #expect(again.status == 201 && again.header("Idempotent-Replayed") == "true", "\(key): \(again.status)")
                #expect(again.text == firstAnswers[key])
            }
            let count = try uploadCount(three)
            #expect(count == keys.count)
        }
    }
}
