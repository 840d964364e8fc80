import JotterHTTP

/// What a browser may be made to do by a page of another site, refused on every route before
/// routing, authentication or any body byte:
///
/// - **Cross-origin writes** (as Go 1.25's `CrossOriginProtection`): a request with an unsafe
///   method (anything but `GET`, `HEAD`, `OPTIONS`) is `403` when the browser marks it
///   `Sec-Fetch-Site: cross-site`/`same-site`, or — from a browser that sends no
///   `Sec-Fetch-Site` — when its `Origin` is neither this server's (`Host`) nor one of
///   `--cors-origin`. A client that sends neither header (curl, the SDK, the CLI) is not affected.
/// - **DNS rebinding**: on a loopback listener only a `Host` of `localhost`, `127.0.0.1`,
///   `[::1]` (the listener's own address, any port) or of `--allowed-host` is served; any other
///   is `421 Misdirected Request`, so a page whose name was rebound to 127.0.0.1 reads nothing.
struct BrowserProtection: Middleware {
    /// Origins of `--cors-origin`, without a trailing slash.
    let trustedOrigins: Set<String>
    /// Lowercased host names served on a loopback listener; nil when any `Host` is served.
    let allowedHosts: Set<String>?
    /// The same as bytes, compared with a request's `Host` without making a string of it.
    private let allowedHostBytes: [[UInt8]]

    init(listenHost: String, corsOrigins: [String], allowedHosts: [String]) {
        trustedOrigins = Set(corsOrigins.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
        if AuthMode.isLoopback(listenHost) {
            let listener = listenHost.contains(":") && !listenHost.hasPrefix("[") ? "[\(listenHost)]" : listenHost
            let names = Set((["localhost", "127.0.0.1", "[::1]", listener] + allowedHosts).map { Self.hostName($0) })
            self.allowedHosts = names
            allowedHostBytes = names.map { Array($0.utf8) }
        } else {
            self.allowedHosts = nil
            allowedHostBytes = []
        }
    }

    func head(_ head: RequestHead, context: inout RequestContext) throws {
        if let allowedHosts, !head.withAuthorityBytes({ $0.map { isAllowed($0, allowedHosts) } ?? true }) {
            throw HTTPError(
                .misdirectedRequest,
                detail: "this server does not answer for the host '\((head.authority ?? "").prefix(200))'; "
                    + "serve it with --allowed-host NAME")
        }
        try checkOrigin(head)
    }

    /// Whether the host of the `Host` value `value` is one of `allowedHosts`: compared on the
    /// bytes for an ASCII value (every valid one).
    private func isAllowed(_ value: UnsafeRawBufferPointer, _ allowedHosts: Set<String>) -> Bool {
        guard let name = Self.asciiHostRange(value) else {
            return allowedHosts.contains(Self.hostName(String(decoding: value, as: UTF8.self)))
        }
        for allowed in allowedHostBytes where allowed.count == name.count {
            var index = 0
            while index < name.count, allowed[index] == Self.lower(value[name.lowerBound + index]) { index += 1 }
            if index == name.count { return true }
        }
        return false
    }

    /// `403` for an unsafe request a browser made on behalf of another site.
    func checkOrigin(_ head: RequestHead) throws(HTTPError) {
        let method = head.originalMethod
        guard method != .get, method != .head, method != .options else { return }
        let origin = head.headers["Origin"]
        if let origin, trustedOrigins.contains(origin) { return }
        if let site = head.headers["Sec-Fetch-Site"] {
            guard site == "same-origin" || site == "none" else {
                throw HTTPError(.forbidden, detail: "a \(method) from another site (Sec-Fetch-Site: \(site.prefix(200))) is refused")
            }
            return
        }
        guard let origin else { return }
        let host = head.authority ?? ""
        guard HTTPHeaders.equal(origin, "http://\(host)") || HTTPHeaders.equal(origin, "https://\(host)") else {
            throw HTTPError(.forbidden, detail: "a \(method) from another origin (\(origin.prefix(200))) is refused")
        }
    }

    /// The host of a `Host` value without its port, lowercased: `[::1]:8080` → `[::1]`.
    static func hostName(_ value: String) -> String {
        if let name = asciiHostName(value) { return name }
        let value = value.trimmingASCIISpaces().lowercased()
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return value }
            return String(value[...close])
        }
        guard let colon = value.lastIndex(of: ":"), value[value.index(after: colon)...].allSatisfy(\.isASCIIDigit) else {
            return value.hasSuffix(".") ? String(value.dropLast()) : value
        }
        let name = value[..<colon]
        return String(name.hasSuffix(".") ? name.dropLast() : name)
    }
}

extension BrowserProtection {
    /// `hostName` of an ASCII value (every valid `Host`), on its bytes: no Unicode case
    /// mapping or grapheme breaking, and no allocation for a name of up to 15 bytes.
    static func asciiHostName(_ value: String) -> String? {
        var value = value
        return value.withUTF8 { bytes -> String? in
            guard let name = asciiHostRange(UnsafeRawBufferPointer(bytes)) else { return nil }
            return String(unsafeUninitializedCapacity: name.count) { buffer in
                for index in name.indices { buffer[index - name.lowerBound] = Self.lower(bytes[index]) }
                return name.count
            }
        }
    }

    private static func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    /// Where the bytes of `hostName` of an ASCII value are, before lowercasing; nil when it is
    /// not ASCII. (Plain loops: this runs on every request.)
    static func asciiHostRange(_ bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        for byte in bytes where byte >= 0x80 { return nil }
        var start = 0, end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        if start < end, bytes[start] == UInt8(ascii: "[") {
            var close = start
            while close < end, bytes[close] != UInt8(ascii: "]") { close += 1 }
            if close < end { end = close + 1 }
        } else {
            // A port: the digits after the last colon.
            var digits = end
            while digits > start, bytes[digits - 1] >= 0x30, bytes[digits - 1] <= 0x39 { digits -= 1 }
            if digits > start, bytes[digits - 1] == UInt8(ascii: ":") {
                end = digits - 1
            }
            if end > start, bytes[end - 1] == UInt8(ascii: ".") { end -= 1 }
        }
        return start..<end
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
