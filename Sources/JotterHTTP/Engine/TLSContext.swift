import CEngine

/// An OpenSSL server context: the certificate chain, its key and the ALPN protocols offered.
/// Immutable once made; reloading the certificate makes a new one, which new connections use
/// while open ones keep theirs (each SSL holds a reference to its context).
final class TLSContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer

    /// - Parameter protocols: ALPN names in the server's order of preference.
    init(certificate: String, key: String, protocols: [String]) throws(ServerStartError) {
        var wire: [UInt8] = []
        for name in protocols {
            wire.append(UInt8(name.utf8.count))
            wire.append(contentsOf: name.utf8)
        }
        var error = [CChar](repeating: 0, count: 256)
        let made = certificate.withCString { certificateBytes in
            key.withCString { keyBytes in
                jotter_tls_context_create(
                    certificateBytes, certificate.utf8.count, keyBytes, key.utf8.count,
                    wire, wire.count, &error, error.count)
            }
        }
        guard let made else {
            throw ServerStartError(description: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        pointer = made
    }

    deinit { jotter_tls_context_free(pointer) }

    /// A server-side session over the accepted socket `fd`; nil when OpenSSL cannot make one.
    func session(fd: Int32) -> UnsafeMutableRawPointer? { jotter_tls_new(pointer, fd) }
}
