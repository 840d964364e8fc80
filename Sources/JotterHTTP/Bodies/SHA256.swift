internal import CCrypto

/// Incremental SHA-256 (OpenSSL's libcrypto, which uses the CPU's SHA instructions), for
/// hashing uploads as their bytes arrive.
///
/// ```swift
/// var hash = SHA256()
/// hash.update(bytes)
/// hash.finish()   // "e3b0c442…"
/// ```
public struct SHA256: ~Copyable {
    private let context: OpaquePointer

    public init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest as 64 lowercase hex digits. Call once.
    public consuming func finish() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xF)]] }, as: UTF8.self)
    }

    /// The digest of `bytes` at once.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        var hash = SHA256()
        Array(bytes).withUnsafeBytes { hash.update($0) }
        return hash.finish()
    }
}

/// An incremental digest by algorithm name (libcrypto), for checksums a client sends: tus's
/// `Upload-Checksum` (sha1, sha256) and RFC 9530's `Repr-Digest` (sha-256).
///
/// ```swift
/// var digest = MessageDigest(.sha1)
/// digest.update(bytes)
/// digest.finish()   // 20 bytes
/// ```
public struct MessageDigest: ~Copyable {
    public enum Algorithm: Sendable {
        case sha1, sha256
    }

    private let context: OpaquePointer

    public init(_ algorithm: Algorithm) {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, algorithm == .sha1 ? EVP_sha1() : EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest's bytes. Call once.
    public consuming func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return Array(digest.prefix(Int(length)))
    }
}
