#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Note bodies as PostgreSQL stores them: `text` cannot hold NUL, which a note body may, so
/// NUL is stored as U+FFFF "0" and U+FFFF itself as U+FFFF "F" (U+FFFF is a noncharacter,
/// rare in text). Bodies without either are stored as they are.
enum PostgresText {
    private static let escape: Unicode.Scalar = "\u{FFFF}"

    static func encode(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\0" || $0 == escape }) else { return text }
        var encoded = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\0": encoded.append(escape); encoded.append("0")
            case escape: encoded.append(escape); encoded.append("F")
            default: encoded.append(scalar)
            }
        }
        return String(encoded)
    }

    /// Whether stored bytes hold U+FFFF (EF BF BF), so `decode` may change them; most bodies do not.
    static func mayBeEncoded(_ utf8: UnsafeRawBufferPointer) -> Bool {
        guard var cursor = utf8.baseAddress, utf8.count >= 3 else { return false }
        let end = cursor + utf8.count
        // memchr finds each 0xEF a word or more at a time; most bodies have none.
        while end - cursor >= 3, let found = memchr(cursor, 0xEF, end - cursor - 2) {
            let lead = UnsafeRawPointer(found)
            if lead.load(fromByteOffset: 1, as: UInt8.self) == 0xBF, lead.load(fromByteOffset: 2, as: UInt8.self) == 0xBF { return true }
            cursor = lead + 1
        }
        return false
    }

    static func decode(_ text: String) -> String {
        guard text.unicodeScalars.contains(escape) else { return text }
        var decoded = String.UnicodeScalarView()
        var escaped = false
        for scalar in text.unicodeScalars {
            if escaped {
                decoded.append(scalar == "0" ? "\0" : escape)
                escaped = false
            } else if scalar == escape {
                escaped = true
            } else {
                decoded.append(scalar)
            }
        }
        return String(decoded)
    }
}
