import Glibc

/// The status line and header section of a response, as the engine writes it: the handler's
/// fields, then `Date`, `X-Content-Type-Options`, the framing (`Content-Length` or chunked) and
/// `Connection` — which are the engine's alone.
enum ResponseHead {
    enum Framing {
        /// `Content-Length: n` (also for a HEAD request's answer, which carries no body).
        case length(UInt64)
        case chunked
        /// No length: the body ends when the connection closes (a stream to an HTTP/1.0 client).
        case closeDelimited
        /// No body by definition (1xx, 204, 304).
        case none
    }

    /// Appends the head to `bytes`.
    static func write(_ response: Response, framing: Framing, keepAlive: Bool, http10: Bool, date: DateField, into bytes: inout [UInt8]) {
        bytes.append(contentsOf: head(response, framing: framing, keepAlive: keepAlive, http10: http10, date: date, body: false))
    }

    /// The head, followed by the response's body when `body` is true, in one array made at its
    /// size: each piece is copied once, with no growth and no per-piece capacity check.
    static func head(_ response: Response, framing: Framing, keepAlive: Bool, http10: Bool, date: DateField, body: Bool) -> [UInt8] {
        var reason = response.status.reasonPhrase
        var capacity =
            httpVersion11.utf8CodeUnitCount + 20 + 1 + reason.utf8.count + crlf.utf8CodeUnitCount + date.count
            + noSniff.utf8CodeUnitCount + contentLength.utf8CodeUnitCount + 20 + connectionKeepAlive.utf8CodeUnitCount + 2 * crlf.utf8CodeUnitCount
            + chunked.utf8CodeUnitCount + (body ? response.body.count : 0)
        response.headers.forEachField { name, value in
            if !engineOwned(name) { capacity += name.count + value.count + 4 }
            return true
        }
        return .written(capacity: capacity) { buffer in
            var out = Writer(start: buffer.baseAddress!)
            out.put(http10 ? httpVersion10 : httpVersion11)
            out.putDecimal(UInt64(response.status.code))
            out.put(0x20)
            reason.withUTF8 { out.put(UnsafeRawBufferPointer($0)) }
            out.put(crlf)
            date.withBytes { out.put($0) }
            response.headers.forEachField { name, value in
                if !engineOwned(name) {
                    out.put(name)
                    out.put(colonSpace)
                    out.put(value)
                    out.put(crlf)
                }
                return true
            }
            out.put(noSniff)
            switch framing {
            case .length(let length):
                out.put(contentLength)
                out.putDecimal(length)
                out.put(crlf)
            case .chunked:
                out.put(chunked)
            case .closeDelimited, .none:
                break
            }
            if !keepAlive {
                out.put(connectionClose)
            } else if http10 {
                out.put(connectionKeepAlive)
            }
            out.put(crlf)
            if body { response.body.withUnsafeBytes { out.put($0) } }
            return out.start.distance(to: out.position)
        }
    }

    /// Writes into memory sized beforehand.
    private struct Writer {
        let start: UnsafeMutablePointer<UInt8>
        var position: UnsafeMutablePointer<UInt8>

        init(start: UnsafeMutablePointer<UInt8>) {
            self.start = start
            position = start
        }

        mutating func put(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            UnsafeMutableRawPointer(position).copyMemory(from: base, byteCount: bytes.count)
            position += bytes.count
        }

        mutating func put(_ string: StaticString) {
            put(UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
        }

        mutating func put(_ byte: UInt8) {
            position.pointee = byte
            position += 1
        }

        mutating func putDecimal(_ value: UInt64) {
            var digits = 1
            var rest = value / 10
            while rest > 0 {
                digits += 1
                rest /= 10
            }
            var remaining = value
            for index in stride(from: digits - 1, through: 0, by: -1) {
                position[index] = UInt8(truncatingIfNeeded: remaining % 10) + 0x30
                remaining /= 10
            }
            position += digits
        }
    }

    /// An interim response (`100 Continue`, `104 Upload Resumption Supported`) with its fields.
    static func interim(_ status: HTTPStatus, headers: HTTPHeaders) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.append(contentsOf: httpVersion11)
        appendDecimal(status.code, to: &bytes)
        bytes.append(0x20)
        bytes.append(contentsOf: status.reasonPhrase.utf8)
        bytes.append(contentsOf: crlf)
        appendFields(headers, to: &bytes)
        bytes.append(contentsOf: crlf)
        return bytes
    }

    /// The fields but those the engine owns, straight from their bytes.
    private static func appendFields(_ headers: HTTPHeaders, to bytes: inout [UInt8]) {
        headers.forEachField { name, value in
            if !engineOwned(name) {
                bytes.append(contentsOf: name)
                bytes.append(contentsOf: colonSpace)
                bytes.append(contentsOf: value)
                bytes.append(contentsOf: crlf)
            }
            return true
        }
    }

    /// Fields the engine writes itself: a handler's are dropped (`Connection: close` from an
    /// error is honoured through `keepAlive`).
    static func engineOwned(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { engineOwned(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always) static func engineOwned(_ name: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 4: HTTPHeaders.equal(name, "date")
        case 10: HTTPHeaders.equal(name, "connection")
        case 14: HTTPHeaders.equal(name, "content-length")
        case 17: HTTPHeaders.equal(name, "transfer-encoding")
        default: false
        }
    }

    static func appendDecimal<T: BinaryInteger>(_ value: T, to bytes: inout [UInt8]) {
        var value = UInt64(value)
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { digits in
            repeat {
                digits[19 - count] = UInt8(truncatingIfNeeded: value % 10) + 0x30
                value /= 10
                count += 1
            } while value > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: digits[(20 - count)...]))
        }
    }

    static let httpVersion11: StaticString = "HTTP/1.1 "
    static let httpVersion10: StaticString = "HTTP/1.0 "
    static let crlf: StaticString = "\r\n"
    static let colonSpace: StaticString = ": "
    static let noSniff: StaticString = "X-Content-Type-Options: nosniff\r\n"
    static let contentLength: StaticString = "Content-Length: "
    static let chunked: StaticString = "Transfer-Encoding: chunked\r\n"
    static let connectionClose: StaticString = "Connection: close\r\n"
    static let connectionKeepAlive: StaticString = "Connection: keep-alive\r\n"
}

extension Array where Element == UInt8 {
    @inline(__always) mutating func append(contentsOf string: StaticString) {
        append(contentsOf: UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }
}

/// The `Date` field of one event loop, formatted again only when the second changes; the loop
/// refreshes it each turn and its connections read it when they write a head.
package final class DateField {
    private var second: time_t = 0
    private var field: [UInt8] = []

    package init() {}

    package func refresh() {
        let now = time(nil)
        guard now != second else { return }
        second = now
        var parts = tm()
        var seconds = now
        gmtime_r(&seconds, &parts)
        var text = [CChar](repeating: 0, count: 40)
        let count = strftime(&text, 40, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &parts)
        field = text[0..<count].map { UInt8(bitPattern: $0) }
    }

    func append(to bytes: inout [UInt8]) { bytes.append(contentsOf: field) }

    /// The field's bytes (`Date: …\r\n`).
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result { field.withUnsafeBytes(body) }

    var count: Int { field.count }

    /// The value alone (`Wed, 02 Dec 2026 01:47:43 GMT`), for HTTP/2's `date`.
    var value: String { field.count > 8 ? String(decoding: field[6..<(field.count - 2)], as: UTF8.self) : "" }
}
