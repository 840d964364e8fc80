import Testing
@testable import JotterHTTP

/// The header fields as the parser stores them (spans of one copied buffer) and as handlers
/// add them (strings), seen through one API.
@Suite("HTTP header fields: parsed spans and added fields")
struct HTTPHeadersTests {
    /// A head's field lines parsed by the engine's own parser, as a connection would.
    func parsed(_ lines: String) -> HTTPHeaders {
        let parser = RequestParser(maxTarget: 6000, maxHead: 8192)
        let raw = Array("GET /x HTTP/1.1\r\n\(lines)\r\n".utf8)
        var headers: HTTPHeaders?
        _ = raw.withUnsafeBytes { buffer in
            parser.execute(buffer.baseAddress!, from: 0, to: buffer.count) { event in
                if case .head = event { headers = parser.head(buffer.baseAddress!).headers }
                return true
            }
        }
        return headers ?? HTTPHeaders()
    }

    @Test("parsed fields: case-insensitive look-up, order, repeated names, trailing whitespace dropped")
    func parsedFields() {
        let headers = parsed("Host: a\r\nX-Two: 1 \t\r\nx-two: 2\r\nEmpty:\r\nAccept: text/html\r\n")
        #expect(headers.count == 5)
        #expect(headers["host"] == "a")
        #expect(headers["X-TWO"] == "1")
        #expect(headers.values("x-two") == ["1", "2"])
        #expect(headers["Empty"] == "")
        #expect(headers.contains("empty"))
        #expect(!headers.contains("Missing"))
        #expect(headers["Missing"] == nil)
        #expect(headers.map(\.name) == ["Host", "X-Two", "x-two", "Empty", "Accept"])
        #expect(headers.fields.map(\.value) == ["a", "1", "2", "", "text/html"])
        #expect(headers.value(of: "accept", equalsIgnoringCase: "TEXT/HTML"))
        #expect(!headers.value(of: "accept", equalsIgnoringCase: "text/htm"))
    }

    @Test("added fields come after the parsed ones; set and remove reach both")
    func addedFields() {
        var headers = parsed("Host: a\r\nX-Request-Id: sent\r\n")
        headers.add("X-Added", "1")
        headers.add("x-request-id", "added")
        #expect(headers.values("X-Request-Id") == ["sent", "added"])
        #expect(headers.map(\.name) == ["Host", "X-Request-Id", "X-Added", "x-request-id"])
        headers.set("X-Request-Id", "one")
        #expect(headers.values("x-request-id") == ["one"])
        #expect(headers.map(\.name) == ["Host", "X-Added", "X-Request-Id"])
        headers.remove("host")
        #expect(headers["Host"] == nil)
        #expect(headers.count == 2)
        var fields: [String] = []
        headers.forEachField { name, value in
            fields.append(String(decoding: name, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self))
            return true
        }
        #expect(fields == ["X-Added=1", "X-Request-Id=one"])
        #expect(headers.withValueBytes(of: "x-added") { $0.map { String(decoding: $0, as: UTF8.self) } } == "1")
    }

    @Test("a response's fields: strings only, written by the engine without the fields it owns")
    func responseHead() {
        var response = Response(status: .ok, contentType: "text/plain", body: [])
        response.headers.add("Connection", "close")
        response.headers.add("X-Request-Id", "k-1")
        var bytes: [UInt8] = []
        let date = DateField()
        date.refresh()
        ResponseHead.write(response, framing: .length(0), keepAlive: true, http10: false, date: date, into: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\nDate: "))
        #expect(text.hasSuffix("Content-Type: text/plain\r\nX-Request-Id: k-1\r\nX-Content-Type-Options: nosniff\r\nContent-Length: 0\r\n\r\n"))
        #expect(!text.contains("Connection"))
    }
}
