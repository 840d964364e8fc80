import Testing
@testable import JotterHTTP

/// `TrustedProxies`: which peers are believed, and what `Forwarded` / `X-Forwarded-*` then say.
@Suite struct TrustedProxiesTests {
    let proxies = try! TrustedProxies(["10.0.0.0/8", "192.0.2.1", "2001:db8::/32"])

    func client(_ peer: String, _ fields: [(String, String)]) -> ForwardedClient? {
        proxies.forwarded(peer: peer, headers: HTTPHeaders(fields))
    }

    @Test func blocksAndAddresses() throws {
        #expect(proxies.contains("10.1.2.3"))
        #expect(proxies.contains("::ffff:10.9.9.9"))  // IPv4-mapped
        #expect(proxies.contains("192.0.2.1"))
        #expect(!proxies.contains("192.0.2.2"))
        #expect(!proxies.contains("11.0.0.1"))
        #expect(proxies.contains("2001:db8:1::5"))
        #expect(!proxies.contains("2001:db9::5"))
        #expect(!proxies.contains("not an address"))
        #expect(!TrustedProxies().contains("10.0.0.1"))
        #expect(try TrustedProxies(["0.0.0.0/0"]).contains("203.0.113.9"))
        #expect(try TrustedProxies(["10.0.0.0/9"]).contains("10.127.0.1"))
        #expect(try !TrustedProxies(["10.0.0.0/9"]).contains("10.128.0.1"))
        for bad in ["10.0.0.0/33", "10.0.0/8", "example.com", "::/129", "10.0.0.0/", "10.0.0.0/-1", ""] {
            #expect(throws: TrustedProxies.InvalidBlock.self, "\(bad)") { try TrustedProxies([bad]) }
        }
    }

    @Test func forwardedHeaderOfRFC7239() {
        #expect(client("10.0.0.5", [("Forwarded", "for=198.51.100.17;proto=https")]) == ForwardedClient(address: "198.51.100.17", proto: "https"))
        // Quoted IPv6 with a port; IPv4 with a port; case of names and proto.
        #expect(
            client("10.0.0.5", [("Forwarded", #"For="[2001:db9:cafe::17]:4711";Proto=HTTP"#)])
                == ForwardedClient(address: "2001:db9:cafe::17", proto: "http"))
        #expect(client("10.0.0.5", [("Forwarded", #"for="198.51.100.17:4711""#)])?.address == "198.51.100.17")
        // A chain: the proxies on the right are skipped, the first other address is the client;
        // what the client itself put on the left is never reached.
        #expect(
            client("10.0.0.5", [("Forwarded", "for=203.0.113.66, for=198.51.100.17;proto=https, for=10.0.0.9")])
                == ForwardedClient(address: "198.51.100.17", proto: "https"))
        // Several fields are one list.
        #expect(client("10.0.0.5", [("Forwarded", "for=203.0.113.66"), ("Forwarded", "for=198.51.100.17")])?.address == "198.51.100.17")
        // An obfuscated or unknown node ends the walk: the proxy stays the client.
        #expect(client("10.0.0.5", [("Forwarded", "for=unknown")]) == ForwardedClient(address: nil, proto: nil))
        #expect(client("10.0.0.5", [("Forwarded", "for=_hidden, for=10.0.0.9")])?.address == "10.0.0.9")
        // Forwarded wins over X-Forwarded-For.
        #expect(client("10.0.0.5", [("Forwarded", "for=198.51.100.17"), ("X-Forwarded-For", "203.0.113.1")])?.address == "198.51.100.17")
    }

    @Test func xForwardedHeaders() {
        #expect(
            client("192.0.2.1", [("X-Forwarded-For", "198.51.100.17"), ("X-Forwarded-Proto", "https")])
                == ForwardedClient(address: "198.51.100.17", proto: "https"))
        #expect(client("192.0.2.1", [("X-Forwarded-For", "203.0.113.66, 198.51.100.17, 10.2.2.2")])?.address == "198.51.100.17")
        #expect(client("192.0.2.1", [("X-Forwarded-For", "2001:db9::1")])?.address == "2001:db9::1")
        #expect(client("192.0.2.1", [("X-Forwarded-Proto", "https")]) == ForwardedClient(address: nil, proto: "https"))
        #expect(client("192.0.2.1", [("X-Forwarded-Proto", "gopher")])?.proto == nil)
        #expect(client("192.0.2.1", []) == nil)
    }

    @Test func untrustedPeersAreIgnored() {
        #expect(client("198.51.100.99", [("X-Forwarded-For", "10.0.0.1"), ("X-Forwarded-Proto", "https")]) == nil)
        #expect(client("198.51.100.99", [("Forwarded", "for=1.2.3.4;proto=https")]) == nil)
        #expect(TrustedProxies().forwarded(peer: "127.0.0.1", headers: HTTPHeaders([("X-Forwarded-For", "1.2.3.4")])) == nil)
    }

    @Test func theRouterSetsTheHead() {
        var routes = RouterBuilder()
        routes.trustedProxies = proxies
        routes.get("/x") { _, _ in "x" }
        let router = routes.build()
        var trusted = RequestHead(
            method: .get, target: "/x", headers: HTTPHeaders([("X-Forwarded-For", "198.51.100.17"), ("X-Forwarded-Proto", "https")]),
            remoteAddress: "10.0.0.5")
        _ = router.resolve(&trusted)
        #expect(trusted.remoteAddress == "198.51.100.17")
        #expect(trusted.peerAddress == "10.0.0.5")
        #expect(trusted.forwardedProto == "https")
        var spoofed = RequestHead(
            method: .get, target: "/x", headers: HTTPHeaders([("X-Forwarded-For", "198.51.100.17"), ("X-Forwarded-Proto", "https")]),
            remoteAddress: "203.0.113.5")
        _ = router.resolve(&spoofed)
        #expect(spoofed.remoteAddress == "203.0.113.5")
        #expect(spoofed.forwardedProto == nil)
    }
}
