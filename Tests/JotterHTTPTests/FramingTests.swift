import Testing
import JotterTestSupport

/// RFC 9112 framing: every ambiguous or malformed request is refused with 400 (501 for an
/// unknown transfer coding) and the connection is closed, so nothing can be smuggled behind it.
@Suite("Strict HTTP/1.1 framing")
struct FramingTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let request: String
        let status: Int
        var testDescription: String { name }
    }

    static let smuggled = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"

    static let cases: [Case] = [
        Case(name: "Content-Length with Transfer-Encoding",
             request: "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, status: 400),
        Case(name: "Transfer-Encoding with Content-Length (reversed)",
             request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled, status: 400),
        Case(name: "repeated identical Content-Length",
             request: "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", status: 400),
        Case(name: "repeated different Content-Length",
             request: "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc" + smuggled, status: 400),
        Case(name: "Content-Length with a sign", request: "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc", status: 400),
        Case(name: "Content-Length in hex", request: "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 0x3\r\n\r\nabc", status: 400),
        Case(name: "Content-Length as a list", request: "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc", status: 400),
        Case(name: "unknown transfer coding", request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", status: 501),
        Case(name: "identity transfer coding", request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", status: 501),
        Case(name: "chunked twice in one field", request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", status: 400),
        Case(name: "chunked in two fields",
             request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400),
        Case(name: "Transfer-Encoding on HTTP/1.0", request: "POST /body HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400),
        Case(name: "chunk size not hex", request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", status: 400),
        Case(name: "chunk size with 0x", request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n", status: 400),
        Case(name: "negative chunk size", request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-3\r\nabc\r\n0\r\n\r\n", status: 400),
        Case(name: "chunk size with leading space", request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n 3\r\nabc\r\n0\r\n\r\n", status: 400),
        Case(name: "chunk data longer than its size",
             request: "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n", status: 400),
        Case(name: "missing Host on HTTP/1.1", request: "GET /hello HTTP/1.1\r\n\r\n", status: 400),
        Case(name: "repeated Host", request: "GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400),
        Case(name: "Host with a space", request: "GET /hello HTTP/1.1\r\nHost: a b\r\n\r\n", status: 400),
        Case(name: "Host with a slash", request: "GET /hello HTTP/1.1\r\nHost: a/b\r\n\r\n", status: 400),
        Case(name: "Host with a bad port", request: "GET /hello HTTP/1.1\r\nHost: a:8x\r\n\r\n", status: 400),
        Case(name: "space before the colon", request: "GET /hello HTTP/1.1\r\nHost: x\r\nFoo : bar\r\n\r\n", status: 400),
        Case(name: "space before the colon of Content-Length",
             request: "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\nabc", status: 400),
        Case(name: "tab before the colon", request: "GET /hello HTTP/1.1\r\nHost: x\r\nFoo\t: bar\r\n\r\n", status: 400),
        Case(name: "bare CR in a header value", request: "GET /hello HTTP/1.1\r\nHost: x\r\nFoo: a\rb\r\n\r\n", status: 400),
        Case(name: "bare CR in the request line", request: "GET /hel\rlo HTTP/1.1\r\nHost: x\r\n\r\n", status: 400),
        Case(name: "control character in a header value", request: "GET /hello HTTP/1.1\r\nHost: x\r\nFoo: a\u{01}b\r\n\r\n", status: 400),
        Case(name: "DEL in a header value", request: "GET /hello HTTP/1.1\r\nHost: x\r\nFoo: a\u{7F}b\r\n\r\n", status: 400),
        Case(name: "NUL in a header name", request: "GET /hello HTTP/1.1\r\nHost: x\r\nFo\u{0}o: bar\r\n\r\n", status: 400),
        Case(name: "space inside the request-target", request: "GET /hel lo HTTP/1.1\r\nHost: x\r\n\r\n", status: 400),
        // llhttp passes a line with no name; Jotter refuses it.
        Case(name: "empty field name", request: "GET /hello HTTP/1.1\r\nHost: x\r\n: bar\r\n\r\n", status: 400),
        Case(name: "DEL in the request-target", request: "GET /hel\u{7F}lo HTTP/1.1\r\nHost: x\r\n\r\n", status: 400),
        Case(name: "non-ASCII byte in a header name", request: "GET /hello HTTP/1.1\r\nHost: x\r\nF\u{E4}o: bar\r\n\r\n", status: 400),
    ]

    @Test("refused with the connection closed", arguments: cases)
    func refused(_ testCase: Case) throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        try connection.send(testCase.request)
        let response = try connection.readResponse()
        #expect(response.status == testCase.status, "\(response.raw)")
        #expect(response.header("Connection")?.lowercased() == "close")
        // Nothing smuggled behind it is answered: the next thing on the wire is the end.
        #expect(connection.isClosedByServer())
    }

    @Test("our refusals are problem+json naming the problem")
    func problemBody() throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        try connection.send("POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.header("Content-Type") == "application/problem+json")
        let detail = try #require(try response.json()["detail"] as? String)
        #expect(detail.contains("Content-Length and Transfer-Encoding"))
    }

    @Test("valid framings are served and the connection kept")
    func validFramings() throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        try connection.send("POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
        #expect(try connection.readResponse().text == "POST 5")
        try connection.send("POST /body HTTP/1.1\r\nHost: [::1]:8080\r\nContent-Length: 3\r\n\r\nabc")
        #expect(try connection.readResponse().text == "POST 3")
        try connection.send("GET /hello HTTP/1.1\r\nHost: \r\n\r\n")
        #expect(try connection.readResponse().status == 200)
        try connection.send("GET /hello HTTP/1.0\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
    }

    @Test("oversized header section is 431, oversized target 414")
    func oversized() throws {
        let fixture = try EngineFixture()
        let header = try fixture.connect()
        try header.send("GET /hello HTTP/1.1\r\nHost: x\r\nFoo: \(String(repeating: "a", count: 40_000))\r\n\r\n")
        #expect(try header.readResponse().status == 431)
        let target = try fixture.connect()
        try target.send("GET /hello?q=\(String(repeating: "a", count: 40_000)) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try target.readResponse().status == 414)
    }

    /// A NUL is no field-value character (RFC 9110 §5.5): refused, and the connection closed,
    /// in a value, a name and the target alike.
    @Test("a NUL inside a header value, a name or the target is refused", arguments: [
        "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 3\u{0}00\r\n\r\nabc",
        "GET /hello HTTP/1.1\r\nHost: x\r\nX-A\u{0}b: 1\r\n\r\n",
        "GET /hel\u{0}lo HTTP/1.1\r\nHost: x\r\n\r\n",
    ])
    func nulInValue(request: String) throws {
        let fixture = try EngineFixture()
        let connection = try fixture.connect()
        try connection.send(request)
        let response = try connection.readResponse()
        #expect(response.status == 400)
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(connection.isClosedByServer())
    }
}
