/// An ordered list of header fields with case-insensitive look-up by name.
///
/// ```swift
/// var headers = HTTPHeaders()
/// headers.add("Content-Type", "text/plain")
/// headers["content-type"]   // "text/plain"
/// ```
///
/// A parsed request's fields live in one allocation — the bytes of its field lines, copied once,
/// and where each field's name and value are in them — however many fields it has, and a field
/// becomes a `String` only when it is asked for. Fields added later (a response's) are kept as
/// the strings given, after the parsed ones.
public struct HTTPHeaders: Sendable, Sequence {
    /// Where one field's name and value are in the parsed bytes.
    @usableFromInline struct Span: Sendable {
        @usableFromInline var nameStart: UInt32
        @usableFromInline var nameCount: UInt32
        @usableFromInline var valueStart: UInt32
        @usableFromInline var valueCount: UInt32
    }

    /// The parsed fields; nil when there are none.
    @usableFromInline var parsed: ParsedFields?
    /// Fields added after parsing, in order.
    @usableFromInline var added: [(name: String, value: String)] = []

    public init() {}
    public init(_ fields: [(String, String)]) {
        added.reserveCapacity(fields.count + 3)  // room for the headers middleware add
        for field in fields { added.append((name: field.0, value: field.1)) }
    }

    /// Fields parsed from a head: `byteCount` bytes and `count` spans, written by `fill` into
    /// the one allocation that keeps them.
    init(parsedCount count: Int, byteCount: Int, _ fill: (UnsafeMutablePointer<Span>, UnsafeMutableRawPointer) -> Void) {
        if count > 0 { parsed = ParsedFields.make(count: count, byteCount: byteCount, fill) }
    }

    /// The fields, in order, as strings (made on each call: prefer the subscript or iteration).
    public var fields: [(name: String, value: String)] { Array(self) }

    /// How many fields there are.
    public var count: Int { (parsed?.count ?? 0) + added.count }

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
        if let parsed, parsed.first(name) != nil {
            // Rare (a parsed head changed by hand): the others become added fields, in order.
            let kept = (0..<parsed.count).filter { !parsed.nameEquals($0, name) }.map { (name: parsed.name(at: $0), value: parsed.value(at: $0)) }
            self.parsed = nil
            added = kept + added
        }
        let count = name.utf8.count
        if added.contains(where: { $0.name.utf8.count == count && Self.equal($0.name, name) }) {
            added.removeAll { Self.equal($0.name, name) }
        }
    }

    /// The first value of the named field.
    public subscript(name: String) -> String? {
        if let parsed, let index = parsed.first(name) { return parsed.value(at: index) }
        return added.first { Self.equal($0.name, name) }?.value
    }

    /// Every value of the named field, in order.
    public func values(_ name: String) -> [String] {
        var values: [String] = []
        if let parsed {
            for index in 0..<parsed.count where parsed.nameEquals(index, name) { values.append(parsed.value(at: index)) }
        }
        return values + added.filter { Self.equal($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { parsed?.first(name) != nil || added.contains { Self.equal($0.name, name) } }

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
    @inlinable
    public func withValueBytes<T>(of name: String, _ body: (UnsafeRawBufferPointer?) throws -> T) rethrows -> T {
        if let parsed, let value = parsed.value(named: name) {
            return try withExtendedLifetime(parsed.buffer) { try body(value) }
        }
        guard var value = added.first(where: { Self.equal($0.name, name) })?.value else { return try body(nil) }
        return try value.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }

    public struct Iterator: IteratorProtocol {
        let headers: HTTPHeaders
        var index = 0

        public mutating func next() -> (name: String, value: String)? {
            defer { index += 1 }
            let parsedCount = headers.parsed?.count ?? 0
            if index < parsedCount, let parsed = headers.parsed {
                return (parsed.name(at: index), parsed.value(at: index))
            }
            let extra = index - parsedCount
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

    /// Calls `body` with each field's name and value bytes, in order, until it returns false.
    func forEachField(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) rethrows {
        if let parsed {
            let more = try parsed.withContents { spans, bytes in
                for span in spans {
                    if try !body(ParsedFields.name(span, in: bytes), ParsedFields.value(span, in: bytes)) { return false }
                }
                return true
            }
            guard more else { return }
        }
        for var field in added {
            let more = try field.name.withUTF8 { name in
                try field.value.withUTF8 { value in try body(UnsafeRawBufferPointer(name), UnsafeRawBufferPointer(value)) }
            }
            if !more { return }
        }
    }
}

extension HTTPHeaders {
    /// The spans and bytes of `ParsedFields`, in one allocation.
    @usableFromInline
    final class FieldBuffer: ManagedBuffer<FieldBuffer.Counts, Span> {
        @usableFromInline struct Counts {
            var fields: Int
            var bytes: Int
        }
    }

    /// The fields of a parsed head in one allocation, immutable once made: the spans, then the
    /// bytes they point into.
    @usableFromInline
    struct ParsedFields: @unchecked Sendable {
        @usableFromInline let buffer: FieldBuffer

        static func make(count: Int, byteCount: Int, _ fill: (UnsafeMutablePointer<Span>, UnsafeMutableRawPointer) -> Void) -> ParsedFields {
            let spanSize = MemoryLayout<Span>.stride
            let made = FieldBuffer.create(minimumCapacity: count + (byteCount + spanSize - 1) / spanSize) { _ in
                FieldBuffer.Counts(fields: count, bytes: byteCount)
            }
            let buffer = unsafeDowncast(made, to: FieldBuffer.self)
            buffer.withUnsafeMutablePointerToElements { spans in fill(spans, UnsafeMutableRawPointer(spans + count)) }
            return ParsedFields(buffer: buffer)
        }

        @usableFromInline var count: Int { buffer.header.fields }

        func withContents<R>(_ body: (UnsafeBufferPointer<Span>, UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try buffer.withUnsafeMutablePointers { counts, spans in
                try body(
                    UnsafeBufferPointer(start: spans, count: counts.pointee.fields),
                    UnsafeRawBufferPointer(start: UnsafeRawPointer(spans + counts.pointee.fields), count: counts.pointee.bytes))
            }
        }

        @inline(__always) static func name(_ span: Span, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: bytes[Int(span.nameStart)..<Int(span.nameStart + span.nameCount)])
        }

        @inline(__always) static func value(_ span: Span, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: bytes[Int(span.valueStart)..<Int(span.valueStart + span.valueCount)])
        }

        /// The index of the first field of that name.
        func first(_ name: String) -> Int? {
            var name = name
            return name.withUTF8 { name in
                let name = UnsafeRawBufferPointer(name)
                return withContents { spans, bytes in
                    for index in spans.indices
                    where Int(spans[index].nameCount) == name.count
                        && HTTPHeaders.equal(Self.name(spans[index], in: bytes), name)
                    {
                        return index
                    }
                    return nil
                }
            }
        }

        /// The bytes of the first value of that name, valid while this object lives.
        @usableFromInline
        func value(named name: String) -> UnsafeRawBufferPointer? {
            guard let index = first(name) else { return nil }
            return withContents { spans, bytes in Self.value(spans[index], in: bytes) }
        }

        func nameEquals(_ index: Int, _ name: String) -> Bool {
            guard
                let found = withContents({ spans, bytes -> Bool? in
                    Int(spans[index].nameCount) == name.utf8.count ? nil : false
                })
            else {
                var name = name
                return name.withUTF8 { name in
                    withContents { spans, bytes in HTTPHeaders.equal(Self.name(spans[index], in: bytes), UnsafeRawBufferPointer(name)) }
                }
            }
            return found
        }

        func name(at index: Int) -> String {
            withContents { spans, bytes in String(decoding: Self.name(spans[index], in: bytes), as: UTF8.self) }
        }

        func value(at index: Int) -> String {
            withContents { spans, bytes in String(decoding: Self.value(spans[index], in: bytes), as: UTF8.self) }
        }
    }
}
