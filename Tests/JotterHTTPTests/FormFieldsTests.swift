import Testing
@testable import JotterHTTP

@Suite("form-urlencoded decoding")
struct FormFieldsTests {
    @Test func decodesPlusPercentAndRepeats() throws {
        let fields = try FormFields(decoding: Array("name=Bob+Smith&tag=a&tag=b%26c&empty=&flag&&".utf8), context: "form body")
        #expect(fields["name"] == "Bob Smith")
        #expect(fields.all("tag") == ["a", "b&c"])
        #expect(fields["empty"] == "")
        #expect(fields["flag"] == "")
        #expect(fields.pairs.count == 5)
    }

    @Test func keepsTheOriginalClientsUnescapedSpaces() throws {
        let fields = try FormFields(decoding: Array("body=my new note&".utf8), context: "form body")
        #expect(fields["body"] == "my new note")
    }

    @Test("bad escapes and invalid UTF-8 are 400 naming the problem",
          arguments: ["a=%", "a=%4", "a=%zz", "a=%ff", "%c3%28=x"])
    func rejects(_ text: String) throws {
        let error = #expect(throws: HTTPError.self) { try FormFields(decoding: Array(text.utf8), context: "query") }
        #expect(error?.status == .badRequest)
        #expect(error?.detail?.contains("query") == true)
    }

    @Test func decodesUTF8() throws {
        #expect(try FormFields(decoding: Array("n=%C3%A9t%C3%A9".utf8), context: "query")["n"] == "été")
    }
}
