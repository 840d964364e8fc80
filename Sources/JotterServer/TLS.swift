#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JotterHTTP

/// The certificate and key of `--tls-cert` / `--tls-key`, read once at start-up.
enum TLSFiles {
    static func read(_ configuration: ServerConfiguration) throws(ServerStartError) -> (certificate: String, key: String)? {
        switch (configuration.tlsCertificatePath, configuration.tlsKeyPath) {
        case (nil, nil):
            return nil
        case (let certificate?, let key?):
            return (try pem(certificate, "certificate"), try pem(key, "key"))
        default:
            throw ServerStartError(description: "HTTPS needs both --tls-cert and --tls-key")
        }
    }

    private static func pem(_ path: String, _ what: String) throws(ServerStartError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ServerStartError(description: "cannot read the TLS \(what) file '\(path)'")
        }
        let text = String(decoding: data, as: UTF8.self)
        guard text.contains("-----BEGIN ") else {
            throw ServerStartError(description: "the TLS \(what) file '\(path)' is not PEM (-----BEGIN …)")
        }
        return text
    }
}

/// `Strict-Transport-Security` on every answer of an HTTPS server (`always`), and on those a
/// trusted proxy says went over HTTPS: browsers then use HTTPS for this host for a year.
struct StrictTransportSecurity: Middleware {
    var always = true

    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        guard always || request.forwardedProto == "https" else { return try next(request, context) }
        return try next(request, context).map { response in
            var response = response
            response.headers.set("Strict-Transport-Security", "max-age=31536000")
            return response
        }
    }
}
