import Testing
@testable import JotterHTTP

@Suite("JSONWriter")
struct JSONWriterTests {
    @Test("integers are written as Swift prints them", arguments: [0, 7, -7, 10, 1_000_000, Int64.max, Int64.min, -9_223_372_036_854_775_807])
    func integers(_ value: Int64) {
        var json = JSONWriter()
        json.integer(value)
        #expect(String(decoding: json.bytes, as: UTF8.self) == String(value))
    }

    @Test("fields are separated and keyed")
    func fields() {
        var json = JSONWriter()
        json.object { json in
            json.field("a") { $0.integer(1) }
            json.field("b") { $0.string("x\"y") }
            json.field("c") { $0.null() }
        }
        #expect(String(decoding: json.bytes, as: UTF8.self) == #"{"a":1,"b":"x\"y","c":null}"#)
    }
}
