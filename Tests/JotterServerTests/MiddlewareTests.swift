import Foundation
import Glibc
import Testing
import JotterHTTP
import JotterServerTestSupport
import JotterTestSupport

/// Middleware written outside the server, plugged into the real one: they act before any body
/// byte is stored, and they see — and change — every answer, writes included.
@Suite("Middleware around the real server")
struct MiddlewareTests {
    /// Answers 401 to every upload, in the head phase, as an authentication middleware would.
    struct RefuseUploads: Middleware {
        func head(_ head: RequestHead, context: inout RequestContext) throws {
            if head.path.hasPrefix("/upload") && head.method == .post {
                throw HTTPError(.unauthorized, detail: "uploads need credentials", headers: HTTPHeaders([("WWW-Authenticate", "Bearer")]))
            }
        }
    }

    /// Stamps every answer, later ones included.
    struct Stamp: Middleware {
        func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
            try next(request, context).map { response in
                var response = response
                response.headers.set("X-Stamp", "seen")
                return response
            }
        }
    }

    func entries(_ app: TestApp, _ folder: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: app.dataDirectory.appendingPathComponent(folder).path)) ?? []
    }

    @Test("a head-phase 401 to POST /uploads with a 100 MiB body: answered at once, nothing reaches the data folder")
    func refusedUpload() throws {
        try TestApp.with(configure: { $0.middleware = [RefuseUploads()] }) { app in
            let size = 100 << 20
            let preamble = Array("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n\r\n".utf8)
            let connection = try RawHTTP(port: app.port, timeout: 10)
            try connection.send(
                "POST /uploads HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: \(size)\r\n\r\n")
            try connection.send(preamble)
            let response = try connection.readResponse()
            #expect(response.status == 401)
            #expect(response.header("WWW-Authenticate") == "Bearer")
            #expect(response.header("X-Request-Id")?.isEmpty == false)
            #expect(try response.json()["detail"] as? String == "uploads need credentials")
            // The server closes the connection: the client cannot push the 100 MiB through.
            var sent = preamble.count
            let chunk = [UInt8](repeating: 0x61, count: 1 << 20)
            while sent < size, (try? connection.send(chunk)) != nil { sent += chunk.count }
            #expect(sent < size, "the server kept reading a body it had refused")
            #expect(entries(app, "tmp").isEmpty)
            #expect(entries(app, "uploads").isEmpty)
            #expect(try uploadsListed(app) == 0)
        }
    }

    func uploadsListed(_ app: TestApp) throws -> Int {
        try #require(try app.request("GET", "/uploads").json()["uploads"] as? [Any]).count
    }

    @Test("a header set by a middleware is on every write's answer, refusals and later errors included")
    func everyWrite() throws {
        try TestApp.with(configure: { $0.middleware = [Stamp()] }) { app in
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            let created = try app.request("POST", "/notes", headers: form, body: "body=one")
            #expect(created.status == 201)
            let id = try #require(try created.json()["note"] as? [String: Any])["id"] as! String
            var parts = MultipartBuilder()
            parts.field("note_id", id)
            parts.file("file", filename: "a.txt", contentType: "text/plain", body: Array("hi".utf8))
            let uploaded = try RawHTTP(port: app.port).request(
                "POST", "/uploads", headers: [("Content-Type", parts.contentType)],
                body: parts.finished(), close: true)
            #expect(uploaded.status == 201)
            let upload = try #require((try uploaded.json()["uploads"] as? [[String: Any]])?.first?["id"] as? String)
            let answers = [
                created, uploaded,
                try app.request("PUT", "/notes/\(id)", headers: form, body: "body=two"),
                try app.request("PATCH", "/notes/\(id)", headers: form, body: "body=three"),
                try app.request("POST", "/notes/\(id)", headers: form, body: "_method=PUT&body=four"),
                try app.request("PUT", "/notes/\(id)", headers: form + [("If-Match", "\"1\"")], body: "body=stale"),  // 412
                try app.request("DELETE", "/uploads/\(upload)"),
                try app.request("DELETE", "/notes/\(id)"),
                try app.request("DELETE", "/notes/\(id)"),  // 404
                try app.request("GET", "/nowhere"),  // 404 before routing
                try app.request("POST", "/notes", headers: [("Content-Type", "text/csv")], body: "a,b"),  // 415
            ]
            #expect(answers.map(\.status) == [201, 201, 200, 200, 200, 412, 200, 200, 404, 404, 415])
            for answer in answers {
                #expect(answer.header("X-Stamp") == "seen", "no stamp on a \(answer.status)")
            }
        }
    }
}
