/// An ordered list of header fields with case-insensitive look-up by name.
///
/// ```swift
/// var headers = HTTPHeaders()
/// headers.add("Content-Type", "text/plain")
/// headers["content-type"]   // "text/plain"
/// ```
///
/// A parsed request's fields live in one buffer, each field as two spans of it: the head is one
/// copy of its field lines, however many fields it has, and a field becomes a `String` only
/// when it is asked for. Fields added later (a response's) are kept as the strings given,
/// after the parsed ones.
public struct HTTPHeaders: Sendable, Sequence {
    /// Where one field's name and value are in `bytes`.
    @usableFromInline struct Span: Sendable {
        var nameStart: UInt32
        var nameCount: UInt32
        var valueStart: UInt32
        var valueCount: UInt32
    }

    /// The parsed fields' bytes, and where each field is in them.
    @usableFromInline var bytes: [UInt8] = []
    @usableFromInline var spans: [Span] = []
    /// Fields added after parsing, in order.
    @usableFromInline var added: [(name: String, value: String)] = []

    public init() {}
    public init(_ fields: [(String, String)]) {
        added.reserveCapacity(fields.count + 3)  // room for the headers middleware add
        for field in fields { added.append((name: field.0, value: field.1)) }
    }

    /// The fields, in order, as strings (made on each call: prefer the subscript or iteration).
    public var fields: [(name: String, value: String)] { spans.map { (name(of: $0), value(of: $0)) } + added }

    /// How many fields there are.
    public var count: Int { spans.count + added.count }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(_ name: String, _ value: String) {
        if added.capacity == 0 { added.reserveCapacity(4) }  // room for a response's usual fields at once
        added.append((name: name, value: value))
    }

    /// Replaces every field of that name with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        if !spans.isEmpty, first(name) != nil {
            let bytes = self.bytes
            spans.removeAll { Self.matches($0, name, in: bytes) }
        }
        if added.contains(where: { Self.equal($0.name, name) }) {
            added.removeAll { Self.equal($0.name, name) }
        }
    }

    /// The first value of the named field.
    public subscript(name: String) -> String? {
        if let span = first(name) { return value(of: span) }
        return added.first { Self.equal($0.name, name) }?.value
    }

    /// Every value of the named field, in order.
    public func values(_ name: String) -> [String] {
        spans.filter { Self.matches($0, name, in: bytes) }.map(value(of:)) + added.filter { Self.equal($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { first(name) != nil || added.contains { Self.equal($0.name, name) } }

    /// Whether the first field of that name has this value, compared ASCII case-insensitively
    /// (`Connection: close`, `Expect: 100-continue`), without making a string of it.
    public func value(of name: String, equalsIgnoringCase expected: String) -> Bool {
        withValueBytes(of: name) { value in
            guard let value else { return false }
            var expected = expected
            return expected.withUTF8 { Self.equal(value, UnsafeRawBufferPointer($0)) }
        }
    }

    /// Calls `body` with the bytes of the first value of the named field, or nil when absent.
    public func withValueBytes<T>(of name: String, _ body: (UnsafeRawBufferPointer?) throws -> T) rethrows -> T {
        if let span = first(name) { return try withValueBytes(span) { try body($0) } }
        guard var value = added.first(where: { Self.equal($0.name, name) })?.value else { return try body(nil) }
        return try value.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }

    public struct Iterator: IteratorProtocol {
        let headers: HTTPHeaders
        var index = 0

        public mutating func next() -> (name: String, value: String)? {
            defer { index += 1 }
            if index < headers.spans.count {
                let span = headers.spans[index]
                return (headers.name(of: span), headers.value(of: span))
            }
            let extra = index - headers.spans.count
            return extra < headers.added.count ? headers.added[extra] : nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(headers: self) }

    public var underestimatedCount: Int { count }

    /// ASCII case-insensitive comparison, without allocating.
    public static func equal(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a, b = b
        return a.withUTF8 { a in b.withUTF8 { b in equal(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) } }
    }

    @inline(__always) static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        for index in 0..<a.count where lower(a[index]) != lower(b[index]) { return false }
        return true
    }

    /// `a` against a lower-case literal, ASCII case-insensitively.
    @inline(__always) static func equal(_ a: UnsafeRawBufferPointer, _ lowercased: StaticString) -> Bool {
        equal(a, UnsafeRawBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount))
    }

    @inline(__always) static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    // MARK: - Spans

    /// The first parsed field of that name.
    func first(_ name: String) -> Span? {
        guard !spans.isEmpty else { return nil }
        var name = name
        return name.withUTF8 { name in
            let name = UnsafeRawBufferPointer(name)
            return bytes.withUnsafeBytes { bytes in
                for span in spans where Int(span.nameCount) == name.count
                    && Self.equal(UnsafeRawBufferPointer(rebasing: bytes[Int(span.nameStart)..<Int(span.nameStart + span.nameCount)]), name) {
                    return span
                }
                return nil
            }
        }
    }

    private static func matches(_ span: Span, _ name: String, in bytes: [UInt8]) -> Bool {
        guard Int(span.nameCount) == name.utf8.count else { return false }
        var name = name
        return name.withUTF8 { name in
            bytes.withUnsafeBytes { bytes in
                equal(UnsafeRawBufferPointer(rebasing: bytes[Int(span.nameStart)..<Int(span.nameStart + span.nameCount)]),
                      UnsafeRawBufferPointer(name))
            }
        }
    }

    func name(of span: Span) -> String {
        String(decoding: bytes[Int(span.nameStart)..<Int(span.nameStart + span.nameCount)], as: UTF8.self)
    }

    func value(of span: Span) -> String {
        String(decoding: bytes[Int(span.valueStart)..<Int(span.valueStart + span.valueCount)], as: UTF8.self)
    }

    func withValueBytes<T>(_ span: Span, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[Int(span.valueStart)..<Int(span.valueStart + span.valueCount)])) }
    }

    func withNameBytes<T>(_ span: Span, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[Int(span.nameStart)..<Int(span.nameStart + span.nameCount)])) }
    }

    /// Calls `body` with each field's name and value bytes, in order, until it returns false.
    func forEachField(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) rethrows {
        let more = try bytes.withUnsafeBytes { bytes in
            for span in spans {
                let name = UnsafeRawBufferPointer(rebasing: bytes[Int(span.nameStart)..<Int(span.nameStart + span.nameCount)])
                let value = UnsafeRawBufferPointer(rebasing: bytes[Int(span.valueStart)..<Int(span.valueStart + span.valueCount)])
                if try !body(name, value) { return false }
            }
            return true
        }
        guard more else { return }
        for var field in added {
            let more = try field.name.withUTF8 { name in
                try field.value.withUTF8 { value in try body(UnsafeRawBufferPointer(name), UnsafeRawBufferPointer(value)) }
            }
            if !more { return }
        }
    }
}

extension HTTPHeaders {
    /// Fields parsed from one buffer: `bytes` holds them, `spans` say where each is.
    init(bytes: [UInt8], spans: [Span]) {
        self.bytes = bytes
        self.spans = spans
    }
}
