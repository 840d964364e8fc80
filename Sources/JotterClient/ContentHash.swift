#if canImport(CryptoKit)
import CryptoKit
#else
internal import CCrypto
#endif

/// Incremental SHA-256 of downloaded bytes, to check them against the upload's `sha256`:
/// libcrypto on Linux, CryptoKit on Apple platforms.
struct ContentHash: ~Copyable {
    #if canImport(CryptoKit)
    private var hash = SHA256()
    #else
    private let context: OpaquePointer = {
        let context = EVP_MD_CTX_new()!
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
        return context
    }()

    deinit { EVP_MD_CTX_free(context) }
    #endif

    init() {}

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        #if canImport(CryptoKit)
        hash.update(bufferPointer: bytes)
        #else
        EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
        #endif
    }

    /// The digest as 64 lowercase hex digits.
    consuming func finish() -> String {
        #if canImport(CryptoKit)
        let digest = Array(hash.finalize())
        #else
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        #endif
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xF)]] }, as: UTF8.self)
    }
}
