/// The header-section checks of RFC 9112 (§6.3, §3.2, §5.1) beyond llhttp's own, run when the
/// head is complete, before any body byte is read. A failure closes the
/// connection, so nothing can be smuggled behind the request.
enum FramingCheck {
    /// The longest request-target answered normally (longer: `414`).
    static let maxTargetLength = 6000
    /// The largest request head answered normally (larger: `431`), counted as: the request
    /// line, each field's bytes, and a 64-byte record per field (so many tiny fields cost as
    /// much as they would take to store).
    static let maxHeadSize = 6500
    static let fieldRecordSize = 64
    /// The most bytes of a head the parser reads before it answers `431` without looking further.
    static let maxParsedHead = 8192

    /// The first framing error of a request, if any. `folded`: a header line was continued by
    /// obsolete line folding (RFC 9112 §5.2), which is refused.
    static func check(method: String, target: String, version: String, headers: HTTPHeaders, folded: Bool = false) -> HTTPError? {
        // llhttp in strict mode has already refused, before the head was complete: a method it
        // does not know (an unknown token is routed to 405/404 by the connection, never here),
        // a request-target longer than `maxTargetLength` (the parser's own limit) or holding a
        // space or control character, and obsolete line folding (`folded` is for heads
        // assembled elsewhere).
        if folded {
            return reject("a header line starts with a space or tab (obsolete line folding is not accepted)")
        }
        // RFC 9112 §3.2: origin-form and absolute-form for every method, the asterisk-form for
        // OPTIONS alone; the authority-form belongs to CONNECT, which an origin server doesn't serve.
        if method == "CONNECT" {
            return HTTPError(.notImplemented, detail: "CONNECT is not served: this is an origin server, not a proxy", closesConnection: true)
        }
        if target == "*" {
            if method != "OPTIONS" { return reject("the request-target '*' is for OPTIONS alone") }
        } else if target.utf8.first != UInt8(ascii: "/"), !target.hasPrefix("http://"), !target.hasPrefix("https://") {
            return reject("the request-target must start with '/'")
        }
        // Field names and values are checked by llhttp in strict mode (a name is a token, a
        // value holds no control character but HTAB: FramingTests, HostileHeadTests) — but for
        // an empty name (": value"), which it passes on. The rest is counted here without a
        // string per field.
        var contentLengths = 0, transferEncodings = 0, hosts = 0
        var badContentLength: String?, badHost: String?, emptyName = false
        var headSize = method.utf8.count + target.utf8.count + version.utf8.count + 4
        headers.forEachField { name, value in
            headSize += name.count + value.count + 4 + fieldRecordSize
            switch name.count {
            case 0:
                emptyName = true
                return false
            case 4 where HTTPHeaders.equal(name, "host"):
                hosts += 1
                if hosts == 1, !isValidHost(value) { badHost = String(decoding: value, as: UTF8.self) }
            case 14 where HTTPHeaders.equal(name, "content-length"):
                contentLengths += 1
                if contentLengths == 1, !isDecimal(value) { badContentLength = String(decoding: value, as: UTF8.self) }
            case 17 where HTTPHeaders.equal(name, "transfer-encoding"):
                transferEncodings += 1
            default:
                break
            }
            return true
        }
        if emptyName {
            return reject("invalid header field name '' (whitespace before the colon or a forbidden character)")
        }
        if headSize > maxHeadSize {
            return HTTPError(
                .requestHeaderFieldsTooLarge,
                detail: "the request's header section is too large (at most \(maxHeadSize) bytes, counting \(fieldRecordSize) per field)",
                closesConnection: true)
        }
        if transferEncodings > 0 {
            if contentLengths > 0 {
                return reject("Content-Length and Transfer-Encoding together make the message length ambiguous")
            }
            if version == "HTTP/1.0" {
                return reject("Transfer-Encoding is not allowed in an HTTP/1.0 request")
            }
            let codings = headers.values("Transfer-Encoding").flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingASCIISpaces().lowercased() }
            if let unknown = codings.first(where: { $0 != "chunked" }) {
                return HTTPError(.notImplemented, detail: "transfer coding '\(unknown)' is not supported; only 'chunked' is", closesConnection: true)
            }
            if codings.count != 1 {
                return reject("Transfer-Encoding must name 'chunked' exactly once")
            }
        }
        if contentLengths > 1 {
            return reject("Content-Length is repeated")
        }
        if let badContentLength {
            return reject("Content-Length '\(Logger.sanitize(badContentLength))' is not a decimal number")
        }
        if version == "HTTP/1.1" {
            guard hosts == 1 else {
                return reject(hosts == 0 ? "an HTTP/1.1 request must carry a Host header" : "Host is repeated")
            }
        }
        if hosts > 1 { return reject("Host is repeated") }
        if let badHost {
            return reject("Host '\(Logger.sanitize(badHost))' is not a valid host[:port]")
        }
        return nil
    }

    private static func reject(_ detail: String) -> HTTPError {
        HTTPError.badRequest(detail, close: true)
    }

    /// RFC 9110 tchar.
    static func isTokenByte(_ byte: UInt8) -> Bool { ASCIISet.token.contains(byte) }

    static func isDecimal(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 18 && text.utf8.allSatisfy(ASCIISet.digits.contains)
    }

    static func isDecimal(_ bytes: UnsafeRawBufferPointer) -> Bool {
        !bytes.isEmpty && bytes.count <= 18 && bytes.allSatisfy(ASCIISet.digits.contains)
    }

    /// `uri-host [ ":" port ]` (RFC 9110 §7.2): a reg-name or IPv4 address, or an IP literal in brackets.
    static func isValidHost(_ host: String) -> Bool {
        var host = host
        return host.withUTF8 { isValidHost(UnsafeRawBufferPointer($0)) }
    }

    static func isValidHost(_ host: UnsafeRawBufferPointer) -> Bool {
        if host.isEmpty { return true }  // allowed when the target has no authority (RFC 9112 §3.2)
        var end = host.count
        if host[0] == UInt8(ascii: "[") {
            var close = 1
            while close < end, host[close] != UInt8(ascii: "]") { close += 1 }
            guard close < end, close > 1 else { return false }
            for index in 1..<close where !ASCIISet.ipLiteral.contains(host[index]) { return false }
            guard close + 1 < end else { return true }
            guard host[close + 1] == UInt8(ascii: ":") else { return false }
            for index in (close + 2)..<end where !ASCIISet.digits.contains(host[index]) { return false }
            return true
        }
        var colon = end - 1
        while colon >= 0, host[colon] != UInt8(ascii: ":") { colon -= 1 }
        if colon >= 0 {
            guard end - colon - 1 <= 5 else { return false }
            for index in (colon + 1)..<end where !ASCIISet.digits.contains(host[index]) { return false }
            end = colon
        }
        guard end > 0 else { return false }
        for index in 0..<end where !ASCIISet.regName.contains(host[index]) { return false }
        return true
    }
}
