/// Writes JSON straight into bytes — for the wire types on hot paths, where Foundation's
/// `JSONEncoder` (reflection, boxing, a dictionary per object) costs more than the request.
///
/// Objects are written with their keys in a fixed (sorted) order, as `JSONCoding.encoder` writes
/// them, so the two agree byte for byte.
///
/// ```swift
/// var json = JSONWriter()
/// json.object { json in
///     json.field("id") { $0.string("1") }
///     json.field("version") { $0.integer(3) }
/// }
/// json.bytes   // {"id":"1","version":3}
/// ```
public struct JSONWriter: ~Copyable {
    // Its own buffer, not an `Array`: every write is a capacity check and a store or a
    // `memcpy`, with no uniqueness check and no generic copy loop (a page of notes is some
    // thousand small writes). Inlinable, so the closures of `object`/`field`/`array` are inlined
    // into the writers of other modules instead of being called (and `array` specialized there).
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var count = 0
    @usableFromInline var capacity: Int
    @usableFromInline var needsComma = false

    /// The JSON written so far.
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    @inlinable
    public init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Room for `extra` more bytes.
    @inlinable @inline(__always)
    mutating func reserve(_ extra: Int) {
        if capacity &- count < extra { grow(extra) }
    }

    @usableFromInline
    mutating func grow(_ extra: Int) {
        let larger = Swift.max(capacity * 2, count + extra)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        moved.initialize(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = larger
    }

    @inlinable @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count &+= 1
    }

    @inlinable @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        UnsafeMutableRawPointer(base + count).copyMemory(from: source, byteCount: bytes.count)
        count &+= bytes.count
    }

    @inlinable @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        append(UnsafeRawBufferPointer(bytes))
    }

    @inlinable
    public mutating func object(_ fields: (inout JSONWriter) -> Void) {
        append(UInt8(ascii: "{"))
        needsComma = false
        fields(&self)
        append(UInt8(ascii: "}"))
        needsComma = true
    }

    @inlinable
    public mutating func array<S: Sequence>(_ elements: S, _ write: (inout JSONWriter, S.Element) -> Void) {
        append(UInt8(ascii: "["))
        needsComma = false
        for element in elements {
            if needsComma { append(UInt8(ascii: ",")) }
            write(&self, element)
            needsComma = true
        }
        append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// `"key":` then the value `write` produces. Keys are plain ASCII names.
    @inlinable
    public mutating func field(_ key: StaticString, _ write: (inout JSONWriter) -> Void) {
        let length = key.utf8CodeUnitCount
        reserve(length &+ 4)
        if needsComma { base[count] = UInt8(ascii: ","); count &+= 1 }
        base[count] = UInt8(ascii: "\"")
        UnsafeMutableRawPointer(base + (count &+ 1)).copyMemory(from: key.utf8Start, byteCount: length)
        base[count &+ 1 &+ length] = UInt8(ascii: "\"")
        base[count &+ 2 &+ length] = UInt8(ascii: ":")
        count &+= length &+ 3
        needsComma = false
        write(&self)
        needsComma = true
    }

    /// A string, escaped: `"`, `\` and control characters (the short forms where JSON has one).
    public mutating func string(_ value: String) {
        append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { appendEscaped($0) }
        append(UInt8(ascii: "\""))
    }

    /// UTF-8 bytes as a JSON string's content: runs that need no escape go in with one copy
    /// (most strings: one scan, one copy).
    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        guard let base = utf8.baseAddress else { return }
        let end = base + utf8.count
        var start = base
        var cursor = base
        while true {
            // Eight bytes at a time while none of them needs an escape, then byte by byte.
            while end - cursor >= 8, !Self.anyNeedsEscape(UnsafeRawPointer(cursor).loadUnaligned(as: UInt64.self)) { cursor += 8 }
            while cursor < end, !Self.needsEscape(cursor.pointee) { cursor += 1 }
            if start < cursor { append(UnsafeBufferPointer(start: start, count: cursor - start)) }
            guard cursor < end else { return }
            escape(cursor.pointee)
            cursor += 1
            start = cursor
        }
    }

    /// Whether any of the eight bytes of `word` is below 0x20, `"` or `\\` (exact: the
    /// classic has-zero-byte and has-less-than tests, no false positives).
    @inline(__always)
    private static func anyNeedsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
        let quotes = (quote &- ones) & ~quote & highs
        let backslashes = (backslash &- ones) & ~backslash & highs
        return (control | quotes | backslashes) != 0
    }

    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// A string of decimal digits: `"42"` for an id kept as a number.
    public mutating func quotedInteger(_ value: Int64) {
        append(UInt8(ascii: "\""))
        integer(value)
        append(UInt8(ascii: "\""))
    }

    /// Bytes that are already JSON (or a string's content that needs no escape), as they are.
    public mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        append(bytes)
    }

    public mutating func integer(_ value: Int64) {
        guard value != .min else { var text = String(value); text.withUTF8 { append($0) }; return }
        if value < 0 { append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        if magnitude < 10 {
            append(UInt8(ascii: "0") + UInt8(magnitude))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            append(UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...]))
        }
    }

    public mutating func null() {
        let null: StaticString = "null"
        append(UnsafeRawBufferPointer(start: null.utf8Start, count: null.utf8CodeUnitCount))
    }

    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    /// The second byte of a two-byte escape (`\n`…) by control character, 0 where JSON has
    /// none (those are written `\u00XX`).
    private static let shortEscapes: [UInt8] = (0..<0x20).map { byte -> UInt8 in
        switch byte {
        case 0x0A: UInt8(ascii: "n")
        case 0x0D: UInt8(ascii: "r")
        case 0x09: UInt8(ascii: "t")
        case 0x08: UInt8(ascii: "b")
        case 0x0C: UInt8(ascii: "f")
        default: 0
        }
    }

    private mutating func escape(_ byte: UInt8) {
        if byte >= 0x20 {  // `"` or `\`
            append(0x5C)
            append(byte)
            return
        }
        let short = Self.shortEscapes[Int(byte)]
        if short != 0 {
            append(0x5C)
            append(short)
        } else {
            let hex: StaticString = "0123456789abcdef"
            hex.withUTF8Buffer { hex in
                for digit in [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]] { append(digit) }
            }
        }
    }
}

/// A value that writes its own JSON with `JSONWriter`; `JSON(value)` uses it instead of
/// `JSONEncoder`.
public protocol JSONWritable {
    func write(to json: inout JSONWriter)
    /// About how many bytes `write` produces, so the buffer is allocated once.
    var estimatedJSONSize: Int { get }
}

extension JSONWritable {
    public var estimatedJSONSize: Int { 256 }
}
