import Foundation
import Testing
@testable import JotterServer

/// The byte-level paths of per-request header work agree with the string code they replace.
@Suite("Host name and Accept checks on bytes")
struct HostNameTests {
    /// The Unicode-aware `hostName` of before: trimmed, lowercased, without port or final dot.
    static func reference(_ value: String) -> String {
        let value = value.trimmingCharacters(in: [" ", "\t"]).lowercased()
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return value }
            return String(value[...close])
        }
        guard let colon = value.lastIndex(of: ":"), value[value.index(after: colon)...].allSatisfy({ $0.isASCII && $0.isNumber }) else {
            return value.hasSuffix(".") ? String(value.dropLast()) : value
        }
        let name = value[..<colon]
        return String(name.hasSuffix(".") ? name.dropLast() : name)
    }

    @Test(
        "hostName on ASCII bytes equals the string version",
        arguments: [
            "localhost", "LOCALHOST:8080", "127.0.0.1", " 127.0.0.1:80\t", "[::1]", "[::1]:8080", "[::1", "[::1]x", "notes.example.com.",
            "Notes.Example.COM.:443", "a:b", "a:", ":", "", " ", "host:12a", "x.:", "very-long-host-name.example.org:65535", "ÄBC.example",
        ])
    func hostName(_ value: String) {
        #expect(BrowserProtection.hostName(value) == Self.reference(value))
        if value.utf8.allSatisfy({ $0 < 0x80 }) { #expect(BrowserProtection.asciiHostName(value) == Self.reference(value)) }
    }

    /// The string-splitting `prefersJSON` of before.
    static func prefersJSONReference(_ accept: String) -> Bool {
        accept.split(separator: ",").contains { range in
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: [" ", "\t"]).lowercased() }
            guard let media = parts.first else { return false }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0 && (media == "application/json" || media.hasSuffix("+json"))
        }
    }

    @Test(
        "prefersJSON on bytes equals the string version",
        arguments: [
            "application/json", "APPLICATION/JSON", "text/html, application/json;q=0", "text/html, application/json;Q=0.5",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/problem+json", "application/jsonx",
            " application/json ; q=0.0", "application/json;q=abc", "application/json;q=0e1", ";application/json", ",,", "", "json",
            "text/plain;q=1, application/vnd.api+json ; q = 0", "application/json;charset=utf-8;q=0.001",
        ])
    func prefersJSON(_ accept: String) {
        #expect(HelloController.prefersJSON(accept) == Self.prefersJSONReference(accept), "\(accept)")
    }
}
