internal import CCrypto

/// Incremental SHA-256 (OpenSSL's libcrypto, which uses the CPU's SHA instructions), for
/// hashing uploads as their bytes arrive. Its running state can be saved and restored
/// (`state`, `init(state:)`), so that a resumable upload continued by another request — on
/// another instance, after a restart — goes on hashing where the last one stopped.
///
/// ```swift
/// var hash = SHA256()
/// hash.update(bytes)
/// let saved = hash.state          // 42–105 bytes
/// var later = SHA256(state: saved)!
/// later.update(more)
/// later.finish()                  // the SHA-256 of bytes + more
/// ```
public struct SHA256: ~Copyable {
    // The low-level context (SHA256_CTX): unlike EVP's, its fields can be read and set. Its
    // update runs the same assembly (SHA-NI, AVX2) as EVP's.
    private let context: UnsafeMutablePointer<SHA256_CTX>

    public init() {
        context = .allocate(capacity: 1)
        SHA256_Init(context)
    }

    deinit { context.deallocate() }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        SHA256_Update(context, base, bytes.count)
    }

    /// The digest as 64 lowercase hex digits. Call once.
    public consuming func finish() -> String { Self.hex(digest: digest()) }

    /// The digest's 32 bytes. Call once (instead of `finish()`).
    public consuming func digest() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        SHA256_Final(&digest, context)
        return digest
    }

    /// `digest` as lowercase hex digits.
    public static func hex(digest: [UInt8]) -> String { Hex.lowercase(digest) }

    /// Bytes hashed so far.
    public var count: Int64 { Int64(context.pointee.Nh) << 29 | Int64(context.pointee.Nl) >> 3 }

    /// The running state, to be restored by `init(state:)` anywhere: a format byte (1), the
    /// eight chaining words, the bit count (low, high word), each big-endian, the number of
    /// bytes waiting for a full block (0–63) and those bytes.
    public var state: [UInt8] {
        var out: [UInt8] = [1]
        out.reserveCapacity(Self.fixedStateSize + 64)
        func word(_ value: UInt32) {
            out += [
                UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value),
            ]
        }
        withUnsafeBytes(of: context.pointee.h) { words in for index in 0..<8 { word(words.load(fromByteOffset: index * 4, as: UInt32.self)) } }
        word(context.pointee.Nl)
        word(context.pointee.Nh)
        let waiting = Int(context.pointee.num)
        out.append(UInt8(waiting))
        withUnsafeBytes(of: context.pointee.data) { out += $0.prefix(waiting) }
        return out
    }

    private static let fixedStateSize = 1 + 8 * 4 + 2 * 4 + 1

    /// A hash that goes on from a saved `state`; nil when `state` is not one.
    public init?(state: [UInt8]) {
        guard state.count >= Self.fixedStateSize, state[0] == 1 else { return nil }
        let waiting = Int(state[Self.fixedStateSize - 1])
        guard waiting < 64, state.count == Self.fixedStateSize + waiting else { return nil }
        func word(_ at: Int) -> UInt32 {
            UInt32(state[at]) << 24 | UInt32(state[at + 1]) << 16 | UInt32(state[at + 2]) << 8 | UInt32(state[at + 3])
        }
        let low = word(33), high = word(37)
        // The bit count is whole bytes, and the waiting bytes are what it leaves past a block.
        guard low & 7 == 0, Int((low >> 3) & 63) == waiting else { return nil }
        context = .allocate(capacity: 1)
        SHA256_Init(context)
        withUnsafeMutableBytes(of: &context.pointee.h) { words in
            for index in 0..<8 { words.storeBytes(of: word(1 + index * 4), toByteOffset: index * 4, as: UInt32.self) }
        }
        context.pointee.Nl = low
        context.pointee.Nh = high
        context.pointee.num = UInt32(waiting)
        withUnsafeMutableBytes(of: &context.pointee.data) { data in
            for index in 0..<waiting { data[index] = state[Self.fixedStateSize + index] }
        }
    }

    /// The digest of `bytes` at once, in hex.
    public static func hex(_ bytes: some Collection<UInt8>) -> String { hex(digest: digest(bytes)) }

    /// The digest of `bytes` at once.
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var hash = SHA256()
        Array(bytes).withUnsafeBytes { hash.update($0) }
        return hash.digest()
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
