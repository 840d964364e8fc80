import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An `application/x-www-form-urlencoded` body (or query string), escaped correctly.
///
/// Every byte but the RFC 3986 unreserved characters (`A–Z a–z 0–9 - . _ ~`) is
/// percent-encoded from its UTF-8, and a space becomes `+`: `&`, `=`, `+`, `%`, newlines and
/// emoji all arrive as sent. Fields keep their order; a name may repeat.
///
/// ```swift
/// var form: FormURLEncodedBody = ["name": "Bob & Alice", "note": "1+1=2"]
/// form.append("tag", "a")
/// form.append("tag", "b")
/// form.encoded            // "name=Bob+%26+Alice&note=1%2B1%3D2&tag=a&tag=b"
///
/// var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/echo")!)
/// form.apply(to: &request)    // POST, Content-Type and body
/// ```
public struct FormURLEncodedBody: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// One `name=value` pair.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields, in the order they are sent.
    public var fields: [Field]

    /// A body with `fields` in this order: `FormURLEncodedBody([("name", "Bob"), ("tag", "a")])`.
    public init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { Field(name: $0.0, value: $0.1) }
    }

    /// `["name": "Bob", "tag": "a"]`, in the order written.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Adds a field at the end (a repeated name sends several values).
    public mutating func append(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// The Content-Type of the body.
    public static let contentType = "application/x-www-form-urlencoded"

    /// `name=value&name=value`, escaped.
    public var encoded: String {
        fields.map { Self.escape($0.name) + "=" + Self.escape($0.value) }.joined(separator: "&")
    }

    /// The body bytes.
    public var data: Data { Data(encoded.utf8) }

    /// Makes `request` send this body: method `POST` unless another was set, `Content-Type`,
    /// `Content-Length` and the bytes.
    public func apply(to request: inout URLRequest) {
        if request.httpMethod == nil || request.httpMethod == "GET" { request.httpMethod = "POST" }
        request.setValue(Self.contentType, forHTTPHeaderField: "Content-Type")
        request.httpBody = data
    }

    /// Percent-encodes `text` for a form field or query: unreserved bytes stay, space is `+`,
    /// everything else is `%XX` of its UTF-8.
    public static func escape(_ text: String) -> String {
        percentEncode(text, spaceAsPlus: true)
    }

    /// `text` with every byte but the unreserved ones as `%XX`; a space is `+` in forms and
    /// `%20` in paths.
    static func percentEncode(_ text: String, spaceAsPlus: Bool) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            case UInt8(ascii: " ") where spaceAsPlus:
                bytes.append(UInt8(ascii: "+"))
            default:
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}
