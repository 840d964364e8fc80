import Glibc

/// An HTTP request method, compared case-sensitively as RFC 9110 §9.1 says.
///
/// ```swift
/// let method = HTTPMethod("PATCH")   // .patch
/// ```
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let patch = HTTPMethod("PATCH")
    public static let delete = HTTPMethod("DELETE")
    public static let options = HTTPMethod("OPTIONS")

    public var description: String { rawValue }

    /// The method named by these bytes of a request line: one of the constants above (no new
    /// string) when it is one of them.
    init(_ bytes: UnsafeRawBufferPointer) {
        func equals(_ name: StaticString) -> Bool {
            bytes.count == name.utf8CodeUnitCount && memcmp(bytes.baseAddress!, name.utf8Start, bytes.count) == 0
        }
        switch bytes.count {
        case 3 where equals("GET"): self = .get
        case 3 where equals("PUT"): self = .put
        case 4 where equals("POST"): self = .post
        case 4 where equals("HEAD"): self = .head
        case 5 where equals("PATCH"): self = .patch
        case 6 where equals("DELETE"): self = .delete
        case 7 where equals("OPTIONS"): self = .options
        default: self.init(String(decoding: bytes, as: UTF8.self))
        }
    }
}
