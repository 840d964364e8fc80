import CSodium
import JotterSystem

/// Password hashing with Argon2id (libsodium's `crypto_pwhash_str`).
///
/// The stored string is self-describing (`$argon2id$v=19$m=65536,t=2,p=1$…`): algorithm,
/// parameters and salt travel with the hash, so stronger parameters later still verify old
/// hashes. Passwords are never stored, logged or returned.
public enum PasswordHash {
    /// Hashes `password` with a fresh random salt (libsodium's "interactive" limits: 2 passes,
    /// 64 MiB). Takes tens of milliseconds and that memory, by design.
    public static func make(_ password: String) throws(StoreError) -> String {
        Sodium.ready()
        var out = [CChar](repeating: 0, count: Int(crypto_pwhash_STRBYTES))
        let rc = crypto_pwhash_str(
            &out, password, UInt64(password.utf8.count),
            UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE), Int(crypto_pwhash_MEMLIMIT_INTERACTIVE))
        guard rc == 0 else { throw .system("could not hash the password (out of memory)") }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `password` matches `hash` (constant-time comparison inside libsodium).
    public static func verify(_ password: String, hash: String) -> Bool {
        Sodium.ready()
        return crypto_pwhash_str_verify(hash, password, UInt64(password.utf8.count)) == 0
    }

    /// A valid hash of no password anyone knows: verified against when a name is unknown, so a
    /// wrong name takes as long as a wrong password.
    public static let decoy: String = (try? make(Secret.random(count: 24))) ?? ""
}

/// The secrets the server issues: API tokens (`jot_…`) and web sessions (`jots_…`).
///
/// A secret is its prefix, 30 random base62 characters (178 bits) and a 6-character base62
/// CRC-32 of the random part — the shape GitHub's tokens have, so secret scanners can
/// recognise a leaked one and a typo is caught without any look-up. Only the SHA-256 of the
/// whole secret is stored.
public enum Secret {
    public static let tokenPrefix = "jot_"
    public static let sessionPrefix = "jots_"
    static let randomLength = 30
    static let checksumLength = 6
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    /// A new secret with `prefix`.
    public static func make(prefix: String) -> String {
        let body = random(count: randomLength)
        return prefix + body + base62(crc32(Array(body.utf8)), width: checksumLength)
    }

    /// The kind a well-formed secret is, or nil when its prefix, length, alphabet or checksum
    /// is wrong.
    public static func kind(of secret: some StringProtocol) -> CredentialKind? {
        let utf8 = Array(secret.utf8)
        let kind: CredentialKind
        let prefixLength: Int
        if utf8.starts(with: sessionPrefix.utf8) {
            (kind, prefixLength) = (.session, sessionPrefix.utf8.count)
        } else if utf8.starts(with: tokenPrefix.utf8) {
            (kind, prefixLength) = (.token, tokenPrefix.utf8.count)
        } else {
            return nil
        }
        guard utf8.count == prefixLength + randomLength + checksumLength else { return nil }
        let body = utf8[prefixLength..<(prefixLength + randomLength)]
        guard utf8[prefixLength...].allSatisfy({ alphabet.contains($0) }) else { return nil }
        guard Array(utf8[(prefixLength + randomLength)...]) == Array(base62(crc32(Array(body)), width: checksumLength).utf8) else { return nil }
        return kind
    }

    /// SHA-256 of the secret: what is stored and looked up.
    public static func digest(_ secret: some StringProtocol) -> [UInt8] { SHA256.digest(secret.utf8) }

    /// `count` random base62 characters from libsodium's CSPRNG (rejection sampling: unbiased).
    static func random(count: Int) -> String {
        Sodium.ready()
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count {
            var byte: UInt8 = 0
            randombytes_buf(&byte, 1)
            if byte < 248 { result.append(alphabet[Int(byte % 62)]) }
        }
        return String(decoding: result, as: UTF8.self)
    }

    static func base62(_ value: UInt32, width: Int) -> String {
        var value = value
        var digits = [UInt8](repeating: alphabet[0], count: width)
        for index in stride(from: width - 1, through: 0, by: -1) {
            digits[index] = alphabet[Int(value % 62)]
            value /= 62
        }
        return String(decoding: digits, as: UTF8.self)
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }
}

enum Sodium {
    private static let initialised: Bool = sodium_init() >= 0
    static func ready() { precondition(initialised, "libsodium could not be initialised") }
}
