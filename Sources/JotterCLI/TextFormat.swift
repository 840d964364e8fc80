#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterAPI

/// How the client commands write sizes, rates, durations and tables for people.
enum TextFormat {
    /// `1 note`, `2 notes`, `0 notes`: a count with its noun, plural unless it is one.
    static func count(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    /// A time as people read it: `2026-11-30 14:35:40 UTC`; nil is `-`.
    static func time(_ date: Date?) -> String {
        date.map { Timestamp.format($0) + " UTC" } ?? "-"
    }

    /// `512 B`, `1.5 KiB`, `2.3 MiB`, `1.0 GiB`.
    static func bytes(_ count: Int64) -> String {
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count) / 1024
        for unit in ["KiB", "MiB", "GiB"] {
            if value < 1024 || unit == "GiB" { return "\(oneDecimal(value)) \(unit)" }
            value /= 1024
        }
        return "\(count) B"
    }

    /// `12.3 MB/s` (decimal megabytes, as network rates are given).
    static func rate(_ bytesPerSecond: Double) -> String {
        "\(oneDecimal(bytesPerSecond / 1_000_000)) MB/s"
    }

    /// `0:07`, `12:34`, `1:02:03`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.up))
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return total >= 3600 ? "\(total / 3600):\(two(total % 3600 / 60)):\(two(total % 60))" : "\(total / 60):\(two(total % 60))"
    }

    static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// The first line of `text`, cut to `width` characters with `…`.
    static func excerpt(_ text: String, width: Int) -> String {
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let more = line.count > width || line.count < text.count
        let cut = line.count > width ? String(line.prefix(width - 1)) : line
        return more ? cut + "…" : cut
    }

    /// Left-aligned columns two spaces apart, with a header row; the last column is not padded.
    ///
    /// ```
    /// ID  UPDATED                  BODY
    /// 12  2026-11-30 14:35:40 UTC  Buy milk
    /// ```
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column] + String(repeating: " ", count: widths[column] - row[column].count + 2)
            }.joined()
        }.joined(separator: "\n") + "\n"
    }
}

extension TextFormat {
    /// `text` with its control characters made visible, for a terminal: C0 controls but
    /// newline and tab, and DEL, in caret notation (`ESC` is `^[`), C1 controls as `<U+009B>`.
    /// A note holding escape sequences can then neither recolour nor rewrite the screen.
    static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A, 0x09: result.unicodeScalars.append(scalar)
            case 0x00..<0x20: result += "^" + String(UnicodeScalar(UInt8(scalar.value + 0x40)))
            case 0x7F: result += "^?"
            case 0x80..<0xA0: result += "<U+00\(String(scalar.value, radix: 16, uppercase: true))>"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\n" && scalar != "\t") || (0x7F..<0xA0).contains(scalar.value)
    }
}
