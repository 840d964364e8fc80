import Foundation

/// A throwaway certificate authority and a server certificate it signed for 127.0.0.1 and
/// localhost, made by `openssl` in a fresh folder: what a server with a private CA presents.
public struct PrivateCA {
    public let folder: URL
    /// The authority's certificate (what a client is told to trust).
    public var authority: URL { folder.appendingPathComponent("ca.pem") }
    /// The server's certificate and key (`--tls-cert`, `--tls-key`).
    public var certificate: URL { folder.appendingPathComponent("server.pem") }
    public var key: URL { folder.appendingPathComponent("server.key") }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init() throws {
        folder = try scratchFolder()
        let path = folder.path
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: path + "/ext.cnf", atomically: true, encoding: .utf8)
        try Self.openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path + "/ca.key", "-out", path + "/ca.pem",
            "-days", "2", "-subj", "/CN=Jotter test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign",
        ])
        try Self.openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", path + "/server.key", "-out", path + "/server.csr",
            "-subj", "/CN=127.0.0.1",
        ])
        try Self.openssl([
            "x509", "-req", "-in", path + "/server.csr", "-CA", path + "/ca.pem", "-CAkey", path + "/ca.key",
            "-CAcreateserial", "-out", path + "/server.pem", "-days", "2", "-extfile", path + "/ext.cnf",
        ])
    }

    public func remove() { try? FileManager.default.removeItem(at: folder) }

    private static func openssl(_ arguments: [String]) throws {
        let run = try runProgram(["openssl"] + arguments)
        guard run.status == 0 else { throw Failure(description: "openssl \(arguments.first ?? "") failed: \(run.output)") }
    }
}
