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
    /// False while the writer fills the storage of the array `bytes(capacity:_:)` makes; it
    /// owns (and frees) its buffer once it had to grow out of that.
    @usableFromInline var ownsBuffer = true

    /// The JSON written so far (one `memcpy` into a new array).
    public var bytes: [UInt8] {
        [UInt8](UnsafeBufferPointer(start: base, count: count))
    }

    @inlinable
    public init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    /// A writer filling `storage` (not freed by it) until it needs more room.
    @usableFromInline
    init(filling storage: UnsafeMutableBufferPointer<UInt8>) {
        base = storage.baseAddress!
        capacity = storage.count
        ownsBuffer = false
    }

    deinit { if ownsBuffer { base.deallocate() } }

    /// The JSON `write` writes into room for `capacity` bytes (`[UInt8].written`: on the stack,
    /// then copied, for a small one; else straight into the returned array's storage); copied
    /// from a larger buffer when it did not fit.
    public static func bytes(capacity: Int, _ write: (inout JSONWriter) -> Void) -> [UInt8] {
        var outgrown: [UInt8]?
        let bytes = [UInt8].written(capacity: max(capacity, 16)) { storage in
            var json = JSONWriter(filling: storage)
            write(&json)
            guard !json.ownsBuffer else {
                outgrown = json.bytes
                return 0
            }
            return json.count
        }
        return outgrown ?? bytes
    }

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
        if ownsBuffer { base.deallocate() }
        ownsBuffer = true
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
        value.withUTF8 { _ = appendEscaped($0, checkingUTF8: false) }
        append(UInt8(ascii: "\""))
    }

    /// Bytes meant to be UTF-8 text (a column a database returned) as a JSON string, exactly as
    /// `string(String(decoding: utf8, as: UTF8.self))` writes it — with no String made, unless
    /// the bytes are not well-formed UTF-8: then that String, with its replacement characters.
    public mutating func string(utf8: UnsafeRawBufferPointer) {
        let start = count
        append(UInt8(ascii: "\""))
        let bytes = UnsafeBufferPointer(start: utf8.baseAddress?.assumingMemoryBound(to: UInt8.self), count: utf8.count)
        guard appendEscaped(bytes, checkingUTF8: true) else {
            count = start
            string(String(decoding: bytes, as: UTF8.self))
            return
        }
        append(UInt8(ascii: "\""))
    }

    /// UTF-8 bytes as a JSON string's content: runs that need no escape go in with one copy
    /// (most strings: one scan, one copy). `checkingUTF8`: false (and nothing more written past
    /// what came before the bad byte) when the bytes are not well-formed UTF-8 (RFC 3629).
    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, checkingUTF8: Bool) -> Bool {
        guard let base = utf8.baseAddress else { return true }
        let end = base + utf8.count
        var start = base
        var cursor = base
        // Bytes from 0x80 stop the fast scan only when they must be checked.
        let stops: UInt64 = checkingUTF8 ? 0x8080_8080_8080_8080 : 0
        while true {
            // Eight bytes at a time while none of them needs a look, then byte by byte.
            while end - cursor >= 8 {
                let word = UnsafeRawPointer(cursor).loadUnaligned(as: UInt64.self)
                if Self.anyNeedsEscape(word) || word & stops != 0 { break }
                cursor += 8
            }
            while cursor < end, !Self.needsEscape(cursor.pointee), cursor.pointee < 0x80 || !checkingUTF8 { cursor += 1 }
            guard cursor < end else { break }
            if cursor.pointee >= 0x80 {
                let length = Self.sequenceLength(cursor, end)
                guard length > 0 else { return false }
                cursor += length
                continue
            }
            if start < cursor { append(UnsafeBufferPointer(start: start, count: cursor - start)) }
            escape(cursor.pointee)
            cursor += 1
            start = cursor
        }
        if start < cursor { append(UnsafeBufferPointer(start: start, count: cursor - start)) }
        return true
    }

    /// The length of the well-formed UTF-8 sequence starting at `lead` (a byte from 0x80),
    /// 0 when it is not one (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
    private static func sequenceLength(_ lead: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> Int {
        let first = lead.pointee
        let length: Int, low: UInt8, high: UInt8
        switch first {
        case 0xC2...0xDF: (length, low, high) = (2, 0x80, 0xBF)
        case 0xE0: (length, low, high) = (3, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE, 0xEF: (length, low, high) = (3, 0x80, 0xBF)
        case 0xED: (length, low, high) = (3, 0x80, 0x9F)
        case 0xF0: (length, low, high) = (4, 0x90, 0xBF)
        case 0xF1...0xF3: (length, low, high) = (4, 0x80, 0xBF)
        case 0xF4: (length, low, high) = (4, 0x80, 0x8F)
        default: return 0
        }
        guard end - lead >= length, lead[1] >= low, lead[1] <= high else { return 0 }
        for index in 2..<length where lead[index] & 0xC0 != 0x80 { return 0 }
        return length
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
    @inlinable
    public mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        append(bytes)
    }

    /// A fixed piece of JSON (keys and punctuation written together), as it is.
    @inlinable @inline(__always)
    public mutating func raw(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func integer(_ value: Int64) {
        reserve(20)  // a sign and 19 digits at most
        if value < 0 { base[count] = UInt8(ascii: "-"); count &+= 1 }
        var magnitude = value.magnitude
        var digits = 1, probe = magnitude
        while probe >= 10 { probe /= 10; digits &+= 1 }
        var index = count &+ digits
        repeat {
            index &-= 1
            base[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        count &+= digits
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
                for digit in [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]] {
                    append(digit)
                }
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
