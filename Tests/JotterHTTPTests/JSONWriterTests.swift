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
        let specials: [String] = [
            "\"", "\\", "\n", "\r", "\t", "\u{8}", "\u{C}", "\u{0}", "\u{1F}", "\u{7F}", " ", "/", "é", "日", "📝", "\u{2028}", "!", "#", "[", "]",
            "\u{21}", "\u{5B}", "\u{5D}",
        ]
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

    /// JSON written straight into the array's storage is the same when it fits the estimate
    /// and when it outgrows it (then copied from the writer's own larger buffer).
    @Test("bytes(capacity:) fills an array whether or not the estimate was enough", arguments: [0, 16, 40, 41, 4096])
    func writtenIntoAnArray(capacity: Int) {
        let write: (inout JSONWriter) -> Void = { json in
            json.object { json in
                json.field("text") { $0.string(String(repeating: "ab\"", count: 5)) }
                json.field("n") { $0.integer(-1234567) }
            }
        }
        var plain = JSONWriter()
        write(&plain)
        #expect(JSONWriter.bytes(capacity: capacity, write) == plain.bytes)
        #expect(String(decoding: plain.bytes, as: UTF8.self) == #"{"text":"ab\"ab\"ab\"ab\"ab\"","n":-1234567}"#)
    }

    /// Bytes from a database are written as the String `String(decoding:as:)` makes of them:
    /// well-formed UTF-8 as it is (escaped), anything else with its replacement characters —
    /// every kind of sequence at every offset of a word, and random bytes.
    @Test("bytes are written as the String they decode to")
    func utf8Bytes() {
        func check(_ bytes: [UInt8]) {
            var direct = JSONWriter(capacity: 1)
            direct.raw("[")
            bytes.withUnsafeBytes { direct.string(utf8: $0) }
            var viaString = JSONWriter()
            viaString.raw("[")
            viaString.string(String(decoding: bytes, as: UTF8.self))
            #expect(direct.bytes == viaString.bytes, "\(bytes)")
        }
        let sequences: [[UInt8]] = [
            [0x22], [0x5C], [0x0A], [0x00], [0x7F], Array("é".utf8), Array("日".utf8), Array("📝".utf8), Array("\u{2028}".utf8),
            Array("\u{FFFF}".utf8), Array("\u{10FFFF}".utf8),
            [0x80], [0xBF], [0xC0, 0x80], [0xC1, 0xBF], [0xC2], [0xC2, 0x41], [0xE0, 0x80, 0x80], [0xE0, 0xA0], [0xED, 0xA0, 0x80],
            [0xEF, 0xBF], [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x90, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF],
        ]
        for length in 0..<18 {
            for sequence in sequences {
                for offset in 0...length {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes.insert(contentsOf: sequence, at: offset)
                    check(bytes)
                }
            }
        }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let length = Int.random(in: 0..<40, using: &random)
            // Mostly ASCII letters, with some of every other kind of byte.
            check(
                (0..<length).map { _ in
                    Bool.random(using: &random) ? UInt8.random(in: 0x61...0x7A, using: &random) : UInt8.random(in: 0...0xFF, using: &random)
                })
        }
    }
}
