import Glibc

/// The reverse proxies whose word about the client is believed (`--trusted-proxy CIDR…`).
///
/// A request whose connection comes from one of them gets its client's address and scheme from
/// `Forwarded` (RFC 7239) or, without it, `X-Forwarded-For` / `X-Forwarded-Proto`; from any
/// other peer those headers are ignored — a client cannot claim another address. The chain is
/// read from the right: addresses of trusted proxies are skipped, and the first other one is
/// the client (so a client's own, spoofed entries on the left are never reached while a
/// proxy appends). An entry that is no IP address (`unknown`, `_hidden`) ends the walk with
/// the proxy as the client.
///
/// ```swift
/// var routes = RouterBuilder()
/// routes.trustedProxies = try TrustedProxies(["10.0.0.0/8", "::1"])
/// ```
public struct TrustedProxies: Sendable, Equatable {
    /// One CIDR block: 4 or 16 address bytes and the prefix length.
    public struct Block: Sendable, Equatable, CustomStringConvertible {
        let bytes: [UInt8]
        let prefix: Int

        /// `10.0.0.0/8`, `2001:db8::/32`, or a single address (`/32`, `/128`); nil when not one.
        public init?(_ text: String) {
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let bytes = IPAddress.bytes(String(parts[0])) else { return nil }
            let width = bytes.count * 8
            var prefix = width
            if parts.count == 2 {
                guard let value = Int(parts[1]), (0...width).contains(value), parts[1].allSatisfy(\.isNumber) else { return nil }
                prefix = value
            }
            self.bytes = bytes
            self.prefix = prefix
        }

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var bits = prefix, index = 0
            while bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                if address[index] & mask != bytes[index] & mask { return false }
                bits -= 8
                index += 1
            }
            return true
        }

        public var description: String { "\(IPAddress.text(bytes))/\(prefix)" }
    }

    public let blocks: [Block]

    /// No proxy is trusted (the default): forwarding headers are always ignored.
    public init() { blocks = [] }

    /// Throws `InvalidBlock` naming the first text that is not an address or CIDR block.
    public init(_ texts: [String]) throws {
        blocks = try texts.map { text in
            guard let block = Block(text) else { throw InvalidBlock(text: text) }
            return block
        }
    }

    public struct InvalidBlock: Error, CustomStringConvertible {
        public let text: String
        public var description: String { "'\(text)' is not an IP address or CIDR block (10.0.0.0/8, 2001:db8::/32, 127.0.0.1)" }
    }

    public var isEmpty: Bool { blocks.isEmpty }

    /// Whether `address` (text, as the engine reports peers) is in a trusted block.
    public func contains(_ address: String) -> Bool {
        guard !blocks.isEmpty, let bytes = IPAddress.bytes(address) else { return false }
        return blocks.contains { $0.contains(bytes) }
    }

    /// What the proxies say of the client of a request from `peer`: nil when `peer` is not
    /// trusted or no forwarding header is there.
    func forwarded(peer: String, headers: HTTPHeaders) -> ForwardedClient? {
        guard contains(peer) else { return nil }
        let fields = headers.values("Forwarded")
        if !fields.isEmpty {
            var hops: [(address: String?, proto: String?)] = []
            for field in fields {
                for element in Self.splitOutsideQuotes(field, on: ",") {
                    var hop: (address: String?, proto: String?) = (nil, nil)
                    for pair in Self.splitOutsideQuotes(element, on: ";") {
                        guard let equals = pair.firstIndex(of: "=") else { continue }
                        let name = pair[..<equals].trimmingSpaces().lowercased()
                        var value = pair[pair.index(after: equals)...].trimmingSpaces()
                        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                        if name == "for" { hop.address = value } else if name == "proto" { hop.proto = value.lowercased() }
                    }
                    hops.append(hop)
                }
            }
            return pick(hops)
        }
        let addresses = headers.values("X-Forwarded-For").flatMap { $0.split(separator: ",").map { $0.trimmingSpaces() } }
        let proto = headers.values("X-Forwarded-Proto").flatMap { $0.split(separator: ",") }.last?.trimmingSpaces().lowercased()
        guard !addresses.isEmpty || proto != nil else { return nil }
        var client = pick(addresses.map { (address: Optional($0), proto: nil) }) ?? ForwardedClient(address: nil, proto: nil)
        client.proto = proto.flatMap { $0 == "https" || $0 == "http" ? $0 : nil }
        return client
    }

    /// Walks the hops from the right: trusted proxies are skipped, the first other address is the client.
    private func pick(_ hops: [(address: String?, proto: String?)]) -> ForwardedClient? {
        guard !hops.isEmpty else { return nil }
        var chosen = ForwardedClient(address: nil, proto: nil)
        for hop in hops.reversed() {
            if let proto = hop.proto, proto == "https" || proto == "http" { chosen.proto = proto }
            guard let text = hop.address, let address = IPAddress.normalized(text) else { break }
            chosen.address = address
            if !contains(address) { break }
        }
        return chosen
    }

    static func splitOutsideQuotes(_ text: String, on separator: Character) -> [String] {
        var parts: [String] = [], current = "", quoted = false, escaped = false
        for character in text {
            if escaped { current.append(character); escaped = false; continue }
            if quoted && character == "\\" { escaped = true; current.append(character); continue }
            if character == "\"" { quoted.toggle() }
            if character == separator && !quoted { parts.append(current); current = "" } else { current.append(character) }
        }
        parts.append(current)
        return parts.map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
    }
}

/// The client as trusted proxies described it.
struct ForwardedClient: Sendable, Equatable {
    /// Normalized address text (no port, no brackets); nil when they gave none usable.
    var address: String?
    /// `https` or `http`; nil when they did not say.
    var proto: String?
}

/// IPv4 and IPv6 addresses as bytes and back (inet_pton / inet_ntop). An IPv4-mapped IPv6
/// address (`::ffff:10.0.0.1`) is its IPv4 address.
enum IPAddress {
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    static func text(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An address as a forwarding header may give it — `192.0.2.1`, `192.0.2.1:4711`,
    /// `[2001:db8::1]`, `[2001:db8::1]:4711`, `2001:db8::1` — in canonical text; nil otherwise.
    static func normalized(_ text: String) -> String? {
        var candidate = Substring(text)
        if candidate.hasPrefix("[") {
            guard let close = candidate.firstIndex(of: "]") else { return nil }
            candidate = candidate[candidate.index(after: candidate.startIndex)..<close]
        } else if candidate.filter({ $0 == ":" }).count == 1, let colon = candidate.firstIndex(of: ":") {
            candidate = candidate[..<colon]  // IPv4 with a port
        }
        return bytes(String(candidate)).map { IPAddress.text($0) }
    }
}

private extension StringProtocol {
    func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
