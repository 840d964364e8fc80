#if canImport(CryptoKit)
import CryptoKit
#else
import JotterSystem
#endif

/// Incremental SHA-256 of downloaded bytes, to check them against the upload's `sha256`:
/// libcrypto on Linux (the system module's `SHA256`), CryptoKit on Apple platforms.
struct ContentHash: ~Copyable {
    private var hash = SHA256()

    init() {}

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        #if canImport(CryptoKit)
        hash.update(bufferPointer: bytes)
        #else
        hash.update(bytes)
        #endif
    }

    /// The digest as 64 lowercase hex digits.
    consuming func finish() -> String {
        #if canImport(CryptoKit)
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: Array(hash.finalize()).flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xF)]] }, as: UTF8.self)
        #else
        var done = SHA256()
        swap(&done, &hash)
        return done.finish()
        #endif
    }
}
