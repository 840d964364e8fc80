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
        guard !method.isEmpty, method.utf8.allSatisfy(isTokenByte) else {
            return reject("the request method is not a valid token")
        }
        if target.utf8.count > maxTargetLength {
            return HTTPError(.uriTooLong, detail: "the request-target is longer than \(maxTargetLength) bytes", closesConnection: true)
        }
        if folded {
            return reject("a header line starts with a space or tab (obsolete line folding is not accepted)")
        }
        if target.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            return reject("the request-target contains a space or control character")
        }
        guard target.hasPrefix("/") || target == "*" || method == "CONNECT" || target.hasPrefix("http://") || target.hasPrefix("https://") else {
            return reject("the request-target must start with '/'")
        }
        var contentLengths: [String] = []
        var transferEncodings: [String] = []
        var hosts: [String] = []
        var headSize = method.utf8.count + target.utf8.count + version.utf8.count + 4
        for field in headers {
            headSize += field.name.utf8.count + field.value.utf8.count + 4 + fieldRecordSize
            guard !field.name.isEmpty, field.name.utf8.allSatisfy(isTokenByte) else {
                return reject("invalid header field name '\(Logger.sanitize(field.name))' (whitespace before the colon or a forbidden character)")
            }
            if field.value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
                return reject("header field '\(field.name)' contains a control character")
            }
            if HTTPHeaders.equal(field.name, "Host") {
                hosts.append(field.value)
            } else if HTTPHeaders.equal(field.name, "Content-Length") {
                contentLengths.append(field.value)
            } else if HTTPHeaders.equal(field.name, "Transfer-Encoding") {
                transferEncodings.append(field.value)
            }
        }
        if headSize > maxHeadSize {
            return HTTPError(.requestHeaderFieldsTooLarge, detail: "the request's header section is too large (at most \(maxHeadSize) bytes, counting \(fieldRecordSize) per field)",
                             closesConnection: true)
        }
        if !transferEncodings.isEmpty {
            if !contentLengths.isEmpty {
                return reject("Content-Length and Transfer-Encoding together make the message length ambiguous")
            }
            if version == "HTTP/1.0" {
                return reject("Transfer-Encoding is not allowed in an HTTP/1.0 request")
            }
            let codings = transferEncodings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingASCIISpaces().lowercased() }
            if let unknown = codings.first(where: { $0 != "chunked" }) {
                return HTTPError(.notImplemented, detail: "transfer coding '\(unknown)' is not supported; only 'chunked' is", closesConnection: true)
            }
            if codings.count != 1 {
                return reject("Transfer-Encoding must name 'chunked' exactly once")
            }
        }
        if contentLengths.count > 1 {
            return reject("Content-Length is repeated")
        }
        if let length = contentLengths.first, !isDecimal(length) {
            return reject("Content-Length '\(Logger.sanitize(length))' is not a decimal number")
        }
        if version == "HTTP/1.1" {
            guard hosts.count == 1 else {
                return reject(hosts.isEmpty ? "an HTTP/1.1 request must carry a Host header" : "Host is repeated")
            }
        }
        if hosts.count > 1 { return reject("Host is repeated") }
        if let host = hosts.first, !isValidHost(host) {
            return reject("Host '\(Logger.sanitize(host))' is not a valid host[:port]")
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

    /// `uri-host [ ":" port ]` (RFC 9110 §7.2): a reg-name or IPv4 address, or an IP literal in brackets.
    static func isValidHost(_ host: String) -> Bool {
        if host.isEmpty { return true }  // allowed when the target has no authority (RFC 9112 §3.2)
        var name = Substring(host)
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            let literal = name[name.index(after: name.startIndex)..<close]
            guard !literal.isEmpty, literal.utf8.allSatisfy(ASCIISet.ipLiteral.contains) else { return false }
            name = name[name.index(after: close)...]
            return name.isEmpty || (name.hasPrefix(":") && name.dropFirst().utf8.allSatisfy(ASCIISet.digits.contains))
        }
        if let colon = name.utf8.lastIndex(of: UInt8(ascii: ":")) {
            let port = name.utf8[name.utf8.index(after: colon)...]
            guard port.count <= 5, port.allSatisfy(ASCIISet.digits.contains) else { return false }
            name = Substring(name.utf8[..<colon])
        }
        return !name.isEmpty && name.utf8.allSatisfy(ASCIISet.regName.contains)
    }
}
