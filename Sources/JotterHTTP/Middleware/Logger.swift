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

    /// The access-log line for one finished request, put together in one buffer (no String
    /// made for it or its parts) and written with one `write(2)`.
    func access(
        remote: String, method: String, target: String, version: String, status: Int,
        bytes: Int, microseconds: Int, requestID: String, outcome: String
    ) {
        guard accessLog else { return }
        // Every part's longest form: a target byte escaped is 4 bytes, a number 20.
        let capacity =
            21 + remote.utf8.count + 2 + method.utf8.count + 1 + 4 * target.utf8.count + 1 + version.utf8.count
            + 2 + 20 + 1 + 20 + 1 + 24 + 6 + requestID.utf8.count + 1 + outcome.utf8.count + 1
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            var line = LineBuffer(buffer)
            line.timestamp(time(nil))
            line.append(" ")
            line.append(remote)
            line.append(" \"")
            line.append(method)
            line.append(" ")
            line.appendSanitized(target)
            line.append(" ")
            line.append(version)
            line.append("\" ")
            line.append(status)
            line.append(" ")
            line.append(bytes)
            line.append(" ")
            line.append(microseconds / 1000)
            line.append(".")
            line.appendPadded(microseconds % 1000, digits: 3)
            line.append("ms id=")
            line.append(requestID)
            if !outcome.isEmpty {
                line.append(" ")
                line.append(outcome)
            }
            line.append("\n")
            emit(UnsafeBufferPointer(rebasing: buffer[..<line.count]))
        }
    }

    private func write(_ level: String, _ message: String) {
        emit("\(Self.timestamp()) \(level) \(message)\n")
    }

    private func emit(_ line: String) {
        var line = line
        line.withUTF8 { emit($0) }
    }

    private func emit(_ buffer: UnsafeBufferPointer<UInt8>) {
        var offset = 0
        while offset < buffer.count {
            let written = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
            if written <= 0 { break }
            offset += written
        }
    }

    /// UTC `2026-11-30T14:35:40Z`.
    static func timestamp() -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var line = LineBuffer(buffer)
            line.timestamp(time(nil))
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[..<line.count]), as: UTF8.self)
        }
    }

    /// Whether `byte` of request text is written escaped (`\xHH`), so a log line stays one line.
    static func needsEscape(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "\"") }

    /// Request text with control characters and quotes escaped, so a log line stays one line.
    static func sanitize(_ text: String) -> String {
        guard text.utf8.contains(where: needsEscape) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x80, needsEscape(UInt8(scalar.value)) {
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

/// A log line being put together in a buffer big enough for it (its writer computed the bound).
private struct LineBuffer {
    let base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { base = buffer.baseAddress! }

    mutating func append(_ text: StaticString) {
        (base + count).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        count += text.utf8CodeUnitCount
    }

    mutating func append(_ text: String) {
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            if let source = utf8.baseAddress { (base + count).update(from: source, count: utf8.count) }
            count += utf8.count
            return true
        }
        if copied == nil { for byte in text.utf8 { base[count] = byte; count += 1 } }
    }

    /// Request text, with what `Logger.needsEscape` names as `\xHH`.
    mutating func appendSanitized(_ text: String) {
        let hex: StaticString = "0123456789abcdef"
        for byte in text.utf8 {
            if Logger.needsEscape(byte) {
                base[count] = UInt8(ascii: "\\")
                base[count + 1] = UInt8(ascii: "x")
                base[count + 2] = hex.utf8Start[Int(byte >> 4)]
                base[count + 3] = hex.utf8Start[Int(byte & 0xF)]
                count += 4
            } else {
                base[count] = byte
                count += 1
            }
        }
    }

    /// A number in decimal, `-` first when negative.
    mutating func append(_ value: Int) {
        if value < 0 { base[count] = UInt8(ascii: "-"); count += 1 }
        var magnitude = value.magnitude, digits = 1, probe = magnitude
        while probe >= 10 { probe /= 10; digits += 1 }
        var index = count + digits
        repeat {
            index -= 1
            base[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        count += digits
    }

    /// The last `digits` decimal digits of `value` (not negative), zeros in front.
    mutating func appendPadded(_ value: Int, digits: Int) {
        var value = value
        for index in stride(from: count + digits - 1, through: count, by: -1) {
            base[index] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
        }
        count += digits
    }

    /// UTC `2026-11-30T14:35:40Z`.
    mutating func timestamp(_ now: time_t) {
        var now = now, parts = tm()
        gmtime_r(&now, &parts)
        appendPadded(Int(parts.tm_year) + 1900, digits: 4)
        append("-")
        appendPadded(Int(parts.tm_mon) + 1, digits: 2)
        append("-")
        appendPadded(Int(parts.tm_mday), digits: 2)
        append("T")
        appendPadded(Int(parts.tm_hour), digits: 2)
        append(":")
        appendPadded(Int(parts.tm_min), digits: 2)
        append(":")
        appendPadded(Int(parts.tm_sec), digits: 2)
        append("Z")
    }
}
