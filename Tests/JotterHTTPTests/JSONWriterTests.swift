import Foundation
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

    /// Strings escaped eight bytes at a time agree with JSONEncoder whatever byte needs the
    /// escape and wherever it sits (every offset of a word, in the tail, none at all).
    @Test("strings are escaped as JSONEncoder escapes them")
    func strings() throws {
        let specials: [String] = ["\"", "\\", "\n", "\r", "\t", "\u{8}", "\u{C}", "\u{0}", "\u{1F}", "\u{7F}", " ", "/", "é", "日", "📝", "\u{2028}", "!", "#", "[", "]", "\u{21}", "\u{5B}", "\u{5D}"]
        for length in 0..<20 {
            for special in specials {
                for offset in 0...length {
                    var text = String(repeating: "a", count: length)
                    text.insert(contentsOf: special, at: text.index(text.startIndex, offsetBy: offset))
                    var json = JSONWriter()
                    json.string(text)
                    let foundation = String(decoding: try JSONCoding.encoder.encode([text]), as: UTF8.self)
                    #expect("[" + String(decoding: json.bytes, as: UTF8.self) + "]" == foundation, "\(text.debugDescription)")
                }
            }
        }
    }
}
