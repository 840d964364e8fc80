import Testing
@testable import JotterHTTP

/// The streaming multipart parser alone: the same result however the body is split.
@Suite("multipart parser")
struct MultipartParserTests {
    struct Part: Equatable {
        var headers: MultipartPartHeaders
        var data: [UInt8]
    }

    /// Parses `body` fed in pieces cut at `cuts`.
    static func parse(_ body: String, boundary: String = "XyZ", cuts: [Int] = []) throws(HTTPError) -> [Part] {
        try parse(Array(body.utf8), boundary: boundary, cuts: cuts)
    }

    static func parse(_ bytes: [UInt8], boundary: String = "XyZ", cuts: [Int] = []) throws(HTTPError) -> [Part] {
        var parser = MultipartParser(boundary: boundary)
        var parts: [Part] = []
        var start = 0
        for end in (cuts + [bytes.count]).map({ min($0, bytes.count) }) where end >= start {
            var failure: HTTPError?
            bytes[start..<end].withUnsafeBytes { chunk in
                do throws(HTTPError) {
                    try parser.feed(chunk) { event in
                        switch event {
                        case .begin(let headers): parts.append(Part(headers: headers, data: []))
                        case .data(let data): parts[parts.count - 1].data += data
                        case .end: break
                        }
                    }
                } catch { failure = error }
            }
            if let failure { throw failure }
            start = end
        }
        try parser.finish()
        return parts
    }

    static let body =
        "preamble to ignore\r\n--XyZ\r\n"
        + "Content-Disposition: form-data; name=\"title\"\r\n\r\nHello\r\n--XyA-not-yet\r\n"
        + "--XyZ   \r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\n"
        + "line one\r\n--Xy line two\r\n\r\n"
        + "--XyZ\r\ncontent-disposition: form-data; name=empty\r\n\r\n"
        + "\r\n--XyZ--\r\nepilogue"

    @Test func parsesFieldsFilesAndKeepsNearMisses() throws {
        let parts = try Self.parse(Self.body)
        #expect(parts.count == 3)
        #expect(parts[0].headers == MultipartPartHeaders(name: "title", filename: nil, contentType: nil))
        #expect(parts[0].data == Array("Hello\r\n--XyA-not-yet".utf8))
        #expect(parts[1].headers == MultipartPartHeaders(name: "file", filename: "a.txt", contentType: "text/plain"))
        #expect(parts[1].data == Array("line one\r\n--Xy line two\r\n".utf8))
        #expect(parts[2].headers.name == "empty")
        #expect(parts[2].data.isEmpty)
    }

    @Test func everySplitGivesTheSameParts() throws {
        let whole = try Self.parse(Self.body)
        for cut in 0...Self.body.utf8.count {
            #expect(try Self.parse(Self.body, cuts: [cut]) == whole, "cut at \(cut)")
        }
        #expect(try Self.parse(Self.body, cuts: Array(0...Self.body.utf8.count)) == whole, "byte by byte")
    }

    @Test func binaryDataWithCRLFsAndBoundaryLookalikes() throws {
        var file: [UInt8] = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        file += Array("\r\n--XyZ".utf8).dropLast()  // almost a delimiter at the very end
        let body =
            Array("--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"b.bin\"\r\n\r\n".utf8) + file
            + Array("\r\n--XyZ--".utf8)
        for cut in [1, 70, 100, 4000, body.count - 3] {
            #expect(try Self.parse(body, cuts: [cut, cut + 5]).first?.data == file)
        }
    }

    @Test func filenameStarIsPreferredAndQuotedValuesUnescaped() throws {
        let body =
            "--XyZ\r\nContent-Disposition: form-data; name=\"a\\\"b\"; filename=\"fallback.txt\"; "
            + "filename*=UTF-8''%C3%A9t%C3%A9%20%E2%82%AC.txt\r\n\r\nx\r\n--XyZ\r\n"
            + "Content-Disposition: form-data; name=latin; filename*=ISO-8859-1''caf%E9.txt\r\n\r\ny\r\n--XyZ--"
        let parts = try Self.parse(body)
        #expect(parts[0].headers.name == "a\"b")
        #expect(parts[0].headers.filename == "été €.txt")
        #expect(parts[1].headers.filename == "café.txt")
    }

    @Test(
        "malformed bodies are 400 naming the problem",
        arguments: [
            ("--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--", "no Content-Disposition"),
            ("--XyZ\r\n\r\nx\r\n--XyZ--", "no Content-Disposition"),
            ("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx", "truncated"),
            ("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--XyZ", "truncated"),
            ("no boundary anywhere", "no boundary line"),
            // A boundary line straight after the first (schemathesis's wrapping of a non-object value).
            ("--XyZ\r\n--XyZ--\r\n", "ends in a part's header section"),
            ("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n", "ends in a part's header section"),
            ("--XyZgarbage\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--XyZ--", "malformed multipart boundary line"),
            ("--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--XyZ--", "not form-data"),
            ("--XyZ\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\nx\r\n--XyZ--", "has no name"),
            ("--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--XyZ--", "unterminated"),
            ("--XyZ\r\nContent-Disposition: form-data; name=a; filename*=UTF-8''%FF\r\n\r\nx\r\n--XyZ--", "not valid UTF-8"),
        ])
    func malformed(_ body: String, _ detail: String) {
        let error = #expect(throws: HTTPError.self) { try Self.parse(body) }
        #expect(error?.status == .badRequest)
        #expect(error?.detail?.contains(detail) == true, "\(error?.detail ?? "")")
    }

    @Test func oversizedPartHeadersAre413() {
        let body = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Long: " + String(repeating: "a", count: 20_000) + "\r\n\r\nx\r\n--XyZ--"
        let error = #expect(throws: HTTPError.self) { try Self.parse(body) }
        #expect(error?.status == .contentTooLarge)
    }

    @Test(
        "boundary parameter",
        arguments: [
            ("multipart/form-data; boundary=abc", "abc"), ("Multipart/Form-Data; boundary=\"a b:c\"", "a b:c"),
        ])
    func boundary(_ contentType: String, _ expected: String) throws {
        #expect(try MultipartParser.boundary(of: contentType) == expected)
    }

    @Test(arguments: ["multipart/form-data", "multipart/form-data; boundary=", "multipart/form-data; boundary=" + String(repeating: "a", count: 71)])
    func badBoundary(_ contentType: String) {
        #expect(throws: HTTPError.self) { try MultipartParser.boundary(of: contentType) }
    }

    @Test(
        "filenames are cleaned as the contract says",
        arguments: [
            ("../../etc/passwd", "passwd"), ("/abs/path/x.png", "x.png"), ("C:\\Users\\me\\doc.pdf", "doc.pdf"),
            ("a\u{0}b\u{1F}c\u{7F}d.txt", "abcd.txt"), ("", "upload"), ("dir/", "upload"), ("\u{1}\u{2}", "upload"),
            ("été.txt", "été.txt"),
            ("invoice\u{202E}fdp.exe", "invoicefdp.exe"), ("\u{2066}a\u{2069}\u{200F}\u{61C}.txt", "a.txt"),
            (".", "upload"), ("..", "upload"), ("a/..", "upload"), ("\u{202E}..", "upload"), ("...", "..."), (".hidden", ".hidden"),
        ])
    func clean(_ raw: String, _ expected: String) {
        #expect(cleanFilename(raw) == expected)
    }

    @Test(
        "a name ending in a backslash, as browsers send it (WHATWG), is read as it is",
        arguments: [
            ("name=\"x\\\"", "x\\"), ("name=\"x\\\" ; filename=\"f\"", "x\\"), ("name=\"x\\\"; filename=\"f\"", "x\\"),
            ("name=\"a\\\"b\"", "a\"b"), ("name=\"C:\\dir\\\"", "C:\\dir\\"),
        ])
    func trailingBackslash(_ parameters: String, _ expected: String) throws {
        let body = "--XyZ\r\nContent-Disposition: form-data; \(parameters)\r\n\r\nv\r\n--XyZ--"
        let parts = try Self.parse(body)
        #expect(parts.first?.headers.name == expected)
    }

    @Test func longFilenamesAreCutAtACharacter() {
        let cleaned = cleanFilename(String(repeating: "é", count: 10_000))
        #expect(cleaned.utf8.count <= 255)
        #expect(cleaned.utf8.count == 254)
        #expect(cleanFilename(String(repeating: "a", count: 10_000)).utf8.count == 255)
    }
}
