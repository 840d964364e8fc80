import Glibc

/// Writes log lines to standard error, one `write(2)` per line so lines from several threads
/// never interleave.
///
/// ```swift
/// let log = Logger(accessLog: true)
/// log.info("listening on http://127.0.0.1:8080")
/// ```
public struct Logger: Sendable {
    /// Whether one line per request is written.
    public let accessLog: Bool

    public init(accessLog: Bool = true) { self.accessLog = accessLog }

    public func info(_ message: String) { write("info", message) }
    public func warning(_ message: String) { write("warning", message) }
    public func error(_ message: String) { write("error", message) }

    /// The access-log line for one finished request.
    func access(remote: String, method: String, target: String, version: String, status: Int,
                bytes: Int, microseconds: Int, requestID: String, outcome: String) {
        guard accessLog else { return }
        let ms = "\(microseconds / 1000).\(String(microseconds % 1000).leftPadded(to: 3))"
        emit("\(Self.timestamp()) \(remote) \"\(method) \(Self.sanitize(target)) \(version)\" \(status) \(bytes) \(ms)ms id=\(requestID)\(outcome.isEmpty ? "" : " " + outcome)\n")
    }

    private func write(_ level: String, _ message: String) {
        emit("\(Self.timestamp()) \(level) \(message)\n")
    }

    private func emit(_ line: String) {
        var line = line
        line.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }

    /// UTC `2026-11-30T14:35:40Z`.
    static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// Request text with control characters and quotes escaped, so a log line stays one line.
    static func sanitize(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\"") }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" {
                out += "\\x" + String(scalar.value, radix: 16).leftPadded(to: 2)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
