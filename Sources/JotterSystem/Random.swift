import Glibc

/// Bytes from the kernel's random generator (`getentropy`): unpredictable, for identifiers,
/// boundaries and nonces. Secrets that must resist guessing come from libsodium in the store.
///
/// ```swift
/// let id = SystemRandom.bytes(12)
/// let seed: UInt32 = SystemRandom.value()
/// ```
public enum SystemRandom {
    /// Fills `buffer` (any size; `getentropy` is asked 256 bytes at a time).
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard var base = buffer.baseAddress else { return }
        var left = buffer.count
        while left > 0 {
            let count = min(left, 256)
            if getentropy(base, count) != 0 {
                // Only on a kernel without getrandom(2); the standard library's generator reads the
                // same source another way.
                var generator = SystemRandomNumberGenerator()
                for index in 0..<count { base.storeBytes(of: generator.next() as UInt8, toByteOffset: index, as: UInt8.self) }
            }
            base += count
            left -= count
        }
    }

    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { fill($0) }
        return bytes
    }

    /// `count` random bytes as `2 × count` lowercase hex digits (names of files, ids).
    public static func hex(bytes count: Int) -> String { Hex.lowercase(bytes(count)) }

    /// A random value of a fixed-width integer type.
    public static func value<T: FixedWidthInteger>(_: T.Type = T.self) -> T {
        var value: T = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }
}

/// Bytes as hex digits.
public enum Hex {
    /// Two lowercase hex digits a byte: `[0x0a, 0xff]` is `"0aff"`.
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
