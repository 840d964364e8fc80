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

    @Test(
        "a % without two hex digits is itself, as PHP and browsers read it",
        arguments: [
            ("a=%", "%"), ("a=%4", "%4"), ("a=%zz", "%zz"), ("a=100%", "100%"), ("a=100%+done", "100% done"),
            ("a=100%25", "100%"), ("a=%%41", "%A"), ("a=%e9%", "data"),
        ])
    func literalPercent(_ text: String, _ value: String) throws {
        if value == "data" {
            #expect(throws: HTTPError.self) { try FormFields(decoding: Array(text.utf8), context: "query") }  // %e9 alone is not UTF-8
        } else {
            #expect(try FormFields(decoding: Array(text.utf8), context: "query")["a"] == value)
        }
    }

    @Test("a repeated key: the subscript is the last value (as PHP), all() has every one")
    func lastOfRepeated() throws {
        let fields = try FormFields(decoding: Array("name=Bob&name=Eve".utf8), context: "form body")
        #expect(fields["name"] == "Eve")
        #expect(fields.all("name") == ["Bob", "Eve"])
    }

    @Test("the path stays strict: a bad escape is 400")
    func strictPath() {
        #expect(throws: HTTPError.self) { try FormFields.percentDecode(Array("100%".utf8), plusIsSpace: false, context: "path") }
    }

    @Test(
        "invalid UTF-8 is 400 naming the problem",
        arguments: ["a=%ff", "%c3%28=x"])
    func rejects(_ text: String) throws {
        let error = #expect(throws: HTTPError.self) { try FormFields(decoding: Array(text.utf8), context: "query") }
        #expect(error?.status == .badRequest)
        #expect(error?.detail?.contains("query") == true)
    }

    @Test func decodesUTF8() throws {
        #expect(try FormFields(decoding: Array("n=%C3%A9t%C3%A9".utf8), context: "query")["n"] == "été")
    }
}
