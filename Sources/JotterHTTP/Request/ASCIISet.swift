/// A set of ASCII bytes as a 128-bit mask: membership is two shifts and an AND, for the
/// per-byte checks on the request path.
struct ASCIISet: Sendable {
    private var low: UInt64 = 0
    private var high: UInt64 = 0

    init(_ members: String) {
        for byte in members.utf8 where byte < 128 {
            if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte - 64) }
        }
    }

    @inline(__always) func contains(_ byte: UInt8) -> Bool {
        byte < 64 ? low & (1 << UInt64(byte)) != 0 : byte < 128 && high & (1 << UInt64(byte - 64)) != 0
    }

    static let digits = ASCIISet("0123456789")
    static let alphanumerics = ASCIISet("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    /// RFC 9110 `tchar`.
    static let token = ASCIISet("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~")
    /// RFC 3986 reg-name characters (unreserved, sub-delims, and `%` of pct-encoded).
    static let regName = ASCIISet("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=%")
    static let ipLiteral = ASCIISet("0123456789abcdefABCDEF:.")
    /// RFC 3986 unreserved characters.
    static let unreserved = ASCIISet("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    public func trimmingASCIISpaces() -> SubSequence {
        guard let start = firstIndex(where: { $0 != " " && $0 != "\t" }),
            let end = lastIndex(where: { $0 != " " && $0 != "\t" })
        else { return self[endIndex...] }
        return self[start...end]
    }
}
