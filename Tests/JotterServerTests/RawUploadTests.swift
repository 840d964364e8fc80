import Foundation
import Glibc
import Testing
import JotterServerTestSupport
import JotterTestSupport
@testable import JotterServer

/// Raw-body `POST /uploads` (one file's bytes, its name in `Content-Disposition`) as docs/API.md
/// promises it: a cut, refused or replayed request leaves nothing of itself in `<data>/tmp/`, and
/// an `Idempotency-Key` sent again with another file is `422`, as multipart's is.
@Suite("Raw-body uploads")
struct RawUploadTests {
    static let head =
        "POST /uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
        + "Content-Disposition: attachment; filename=x.bin\r\n"

    func temporaryFiles(_ app: TestApp) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent("tmp").path)) ?? []
    }

    /// Polls `condition` until it holds or `seconds` pass.
    func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    func uploadCount(_ app: TestApp) throws -> Int? {
        try app.request("GET", "/uploads").json()["uploads"].map { ($0 as? [Any])?.count } ?? nil
    }

    @Test("a raw body cut by the client leaves no file in tmp/ once the request has ended", arguments: [false, true])
    func cut(_ chunked: Bool) throws {
        try TestApp.with { app in
            let connection = try RawHTTP(port: app.port)
            let sent = [UInt8](repeating: 7, count: 300_000)
            if chunked {
                // One chunk of 1,000,000 bytes announced, 300,000 of it sent.
                try connection.send(Self.head + "Transfer-Encoding: chunked\r\n\r\n" + String(1_000_000, radix: 16) + "\r\n")
            } else {
                try connection.send(Self.head + "Content-Length: 1000000\r\n\r\n")
            }
            try connection.send(sent)
            // The file exists while the body arrives…
            #expect(waitUntil(seconds: 30) { !temporaryFiles(app).isEmpty }, "the upload never started")
            connection.closeNow()  // … and goes with the request.
            // When the server notices the closed connection is not the point (see
            // UploadsTests.disconnect): once the request has ended, nothing of it is left.
            #expect(waitUntil(seconds: 30) { app.app.server.requestsInFlight == 0 }, "the cut request never ended")
            #expect(temporaryFiles(app).isEmpty, "left in tmp/: \(temporaryFiles(app))")
            #expect(try uploadCount(app) == 0)
        }
    }

    @Test("a chunked raw body over --max-upload-size is 413 and leaves no file in tmp/ within 1 s")
    func overLimit() throws {
        try TestApp.with(configure: { $0.maxUploadSize = 1000 }) { app in
            let connection = try RawHTTP(port: app.port)
            let body = [UInt8](repeating: 1, count: 2000)
            try? connection.send(
                Array((Self.head + "Transfer-Encoding: chunked\r\n\r\n").utf8) + Array("3e8\r\n".utf8) + body[..<1000] + Array("\r\n3e8\r\n".utf8)
                    + body[1000...] + Array("\r\n0\r\n\r\n".utf8))
            let response = try connection.readResponse()
            #expect(response.status == 413, "\(response.text)")
            #expect((try response.json()["detail"] as? String)?.contains("(--max-upload-size)") == true, "\(response.text)")
            #expect(waitUntil(seconds: 1) { temporaryFiles(app).isEmpty }, "left in tmp/: \(temporaryFiles(app))")
            #expect(try uploadCount(app) == 0)
        }
    }

    func post(_ app: TestApp, key: String, body: [UInt8], filename: String = "x.bin", type: String = "application/octet-stream") throws
        -> WireResponse
    {
        try RawHTTP(port: app.port).request(
            "POST", "/uploads",
            headers: [("Content-Type", type), ("Content-Disposition", "attachment; filename=\(filename)"), ("Idempotency-Key", key)],
            body: body, close: true)
    }

    @Test("Idempotency-Key: the same raw body again replays the answer and leaves no file in tmp/ within 1 s")
    func replay() throws {
        try TestApp.with { app in
            let body = [UInt8](repeating: 3, count: 100_000)
            let first = try post(app, key: "raw-1", body: body)
            #expect(first.status == 201, "\(first.text)")
            let again = try post(app, key: "raw-1", body: body)
            #expect(again.status == 201, "\(again.text)")
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(again.body == first.body)
            #expect(waitUntil(seconds: 1) { temporaryFiles(app).isEmpty }, "left in tmp/: \(temporaryFiles(app))")
            #expect(try uploadCount(app) == 1)
        }
    }

    @Test("Idempotency-Key: a raw body with other bytes, type or name under a used key is 422, stores nothing")
    func mismatch() throws {
        try TestApp.with { app in
            let body = [UInt8](repeating: 3, count: 10_000)
            #expect(try post(app, key: "raw-2", body: body).status == 201)
            var other = body
            other[5_000] = 4
            for (what, response) in [
                ("bytes", try post(app, key: "raw-2", body: other)),
                ("length", try post(app, key: "raw-2", body: body + [0])),
                ("type", try post(app, key: "raw-2", body: body, type: "image/png")),
                ("name", try post(app, key: "raw-2", body: body, filename: "y.bin")),
            ] {
                #expect(response.status == 422, "\(what): \(response.text)")
                #expect((try? response.json()["detail"] as? String)?.contains("different request body") == true, "\(what)")
                #expect(response.header("Idempotent-Replayed") == nil, "\(what)")
            }
            #expect(try uploadCount(app) == 1)
            #expect(waitUntil(seconds: 1) { temporaryFiles(app).isEmpty }, "left in tmp/: \(temporaryFiles(app))")
        }
    }
}
