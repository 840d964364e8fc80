/// Checks that bytes arriving in chunks are well-formed UTF-8 (RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF), a sequence split across chunks included.
///
/// ```swift
/// var validator = UTF8Validator()
/// validator.update(chunk1); validator.update(chunk2)
/// validator.isComplete   // true when everything so far is UTF-8 and no sequence is cut off
/// ```
public struct UTF8Validator: Sendable {
    public init() {}

    /// False once a byte was found that can't be UTF-8 here.
    public private(set) var isValid = true
    /// Continuation bytes still expected, and the range the next one must be in.
    private var pending = 0
    private var low: UInt8 = 0x80
    private var high: UInt8 = 0xBF

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard isValid else { return }
        for byte in bytes {
            if pending > 0 {
                guard byte >= low && byte <= high else { isValid = false; return }
                pending -= 1
                (low, high) = (0x80, 0xBF)
                continue
            }
            switch byte {
            case 0x00...0x7F: continue
            case 0xC2...0xDF: pending = 1
            case 0xE0: (pending, low) = (2, 0xA0)
            case 0xE1...0xEC, 0xEE, 0xEF: pending = 2
            case 0xED: (pending, high) = (2, 0x9F)
            case 0xF0: (pending, low) = (3, 0x90)
            case 0xF1...0xF3: pending = 3
            case 0xF4: (pending, high) = (3, 0x8F)
            default: isValid = false; return
            }
        }
    }

    /// Everything so far is UTF-8 and ends on a character boundary.
    public var isComplete: Bool { isValid && pending == 0 }
}
