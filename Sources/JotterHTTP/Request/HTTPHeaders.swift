/// An ordered list of header fields with case-insensitive look-up by name.
///
/// ```swift
/// var headers = HTTPHeaders()
/// headers.add("Content-Type", "text/plain")
/// headers["content-type"]   // "text/plain"
/// ```
public struct HTTPHeaders: Sendable, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(_ fields: [(String, String)]) {
        self.fields.reserveCapacity(fields.count + 3)  // room for the headers middleware add
        for field in fields { self.fields.append((name: field.0, value: field.1)) }
    }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field of that name with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { Self.equal($0.name, name) }
    }

    /// The first value of the named field.
    public subscript(name: String) -> String? {
        fields.first { Self.equal($0.name, name) }?.value
    }

    /// Every value of the named field, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.equal($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// ASCII case-insensitive comparison, without allocating.
    public static func equal(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let fast = a.utf8.withContiguousStorageIfAvailable { a in
            b.utf8.withContiguousStorageIfAvailable { b in
                for index in 0..<a.count where lower(a[index]) != lower(b[index]) { return false }
                return true
            }
        }
        if let fast, let result = fast { return result }
        return zip(a.utf8, b.utf8).allSatisfy { lower($0) == lower($1) }
    }

    @inline(__always) static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }
}

extension HTTPHeaders {
    /// The fields as parsed, in order, taken without a copy.
    init(fields: [(name: String, value: String)]) {
        self.fields = fields
    }
}
