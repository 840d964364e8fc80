import CEngine
import Glibc

/// HTTP dates (RFC 9110 §5.6.7): written as IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), read
/// in any of the three formats a recipient must accept.
public enum HTTPDate {
    /// `seconds` (Unix time) as IMF-fixdate.
    public static func format(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        var text = [CChar](repeating: 0, count: 40)
        let count = strftime(&text, text.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: text.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The Unix time of an IMF-fixdate, an RFC 850 date (`Sunday, 06-Nov-94 08:49:37 GMT`) or an
    /// asctime date (`Sun Nov  6 08:49:37 1994`); nil for anything else (a date that cannot be
    /// read is ignored, RFC 9110 §13.1.3).
    public static func parse(_ text: String) -> Int64? {
        let trimmed = text.trimmingASCIISpaces()
        for format in ["%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"] {
            var seconds: Int64 = 0
            if String(trimmed).withCString({ jotter_parse_http_date($0, format, &seconds) }) == 1 { return seconds }
        }
        return nil
    }
}
