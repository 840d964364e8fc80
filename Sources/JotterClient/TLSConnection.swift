#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Glibc
internal import CTLS  // not part of the SDK's interface: an app needs no OpenSSL module map

/// TLS over a connected socket with OpenSSL, for `SocketExchange`: how the SDK speaks HTTPS to a
/// server whose certificate comes from a private CA (`ServerTrust.certificateAuthorities`) or
/// is not verified (`.insecure`) — URLSession on Linux verifies only against the system's store
/// and has no way to be told otherwise (measured: no server-trust challenge reaches the
/// delegate; `SSL_CERT_FILE`, `CURL_CA_BUNDLE`, `URLSessionCertificateAuthorityInfoFile` change
/// nothing).
///
/// The socket stays blocking; `SocketExchange` polls it (and its cancel pipe) before each read
/// that OpenSSL has not buffered already. Failures are `URLError`s with TLS codes
/// (`.serverCertificateUntrusted`, `.secureConnectionFailed`) and OpenSSL's reason.
final class TLSConnection {
    private let context: OpaquePointer
    private let ssl: OpaquePointer

    /// Shakes hands with `host` over `fd`, verifying its certificate as `trust` says.
    init(fd: Int32, host: String, trust: JotterClient.ServerTrust) throws {
        var caFile: String?
        if case .certificateAuthorities(let file) = trust { caFile = file.path }
        let verify: Int32 = trust == .insecure ? 0 : 1
        guard let context = caFile.withOptionalCString({ jotter_tls_context($0, verify) }) else {
            let reason = String(cString: jotter_tls_error())
            throw URLError(
                .secureConnectionFailed,
                userInfo: [
                    NSLocalizedDescriptionKey:
                        "TLS: cannot use the certificate authorities in \(caFile ?? "the system's store")\(reason.isEmpty ? "" : " (\(reason))")"
                ])
        }
        var address = in6_addr()
        let isAddress = inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
        guard let ssl = jotter_tls_connection(context, fd, host, isAddress ? 1 : 0) else {
            SSL_CTX_free(context)
            throw URLError(.secureConnectionFailed, userInfo: [NSLocalizedDescriptionKey: "TLS: cannot set up a connection to \(host)"])
        }
        self.context = context
        self.ssl = ssl
        guard SSL_connect(ssl) == 1 else {
            let verified = SSL_get_verify_result(ssl)
            let reason = String(cString: jotter_tls_error())
            if verify == 1, verified != X509_V_OK {
                let why = String(cString: X509_verify_cert_error_string(verified))
                throw URLError(
                    .serverCertificateUntrusted,
                    userInfo: [
                        NSLocalizedDescriptionKey:
                            "TLS: the certificate of \(host) is not trusted (\(why))"
                    ])
            }
            throw URLError(
                .secureConnectionFailed,
                userInfo: [
                    NSLocalizedDescriptionKey:
                        "TLS: the handshake with \(host) failed\(reason.isEmpty ? "" : " (\(reason))")"
                ])
        }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    /// Whether OpenSSL holds decrypted bytes not read yet (so no `poll` is needed first).
    var hasBuffered: Bool { SSL_pending(ssl) > 0 }

    /// Writes all of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let count = SSL_write(ssl, bytes.baseAddress! + offset, Int32(min(bytes.count - offset, 1 << 20)))
            guard count > 0 else { throw URLError(.networkConnectionLost) }
            offset += Int(count)
        }
    }

    /// Reads up to `count` bytes into `buffer`; 0 at the end of the stream.
    func read(_ buffer: UnsafeMutableRawPointer, _ count: Int) throws -> Int {
        let read = SSL_read(ssl, buffer, Int32(min(count, Int(Int32.max))))
        if read > 0 { return Int(read) }
        let error = SSL_get_error(ssl, read)
        if error == SSL_ERROR_ZERO_RETURN || error == SSL_ERROR_SYSCALL && errno == 0 { return 0 }
        _ = jotter_tls_error()
        throw URLError(.networkConnectionLost)
    }
}

extension Optional where Wrapped == String {
    /// `body` with the C string of the value, or with nil.
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let text): text.withCString { body($0) }
        case .none: body(nil)
        }
    }
}
#endif
