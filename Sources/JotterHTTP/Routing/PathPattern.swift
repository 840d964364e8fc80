import Glibc
import Synchronization

/// A route path such as `/notes/:id/content`, matched segment by segment.
struct PathPattern: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    let segments: [Segment]
    /// The bytes of each literal segment (empty for a parameter), to match a path on its bytes.
    private let literals: [[UInt8]]
    /// The pattern as registered.
    let text: String
    /// The same number for every pattern of the same text in the process, given at
    /// registration: metrics count a route's answers by it, without hashing the text per request.
    let number: Int

    private static let numbers = Mutex<[String: Int]>([:])

    init(_ path: String) {
        text = path
        segments = path.split(separator: "/").map { part in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(String(part))
        }
        literals = segments.map { if case .literal(let text) = $0 { Array(text.utf8) } else { [] } }
        number = Self.numbers.withLock { numbers in
            if let number = numbers[path] { return number }
            numbers[path] = numbers.count
            return numbers.count - 1
        }
    }

    /// True when the pattern has no parameters.
    var isStatic: Bool {
        segments.allSatisfy { if case .literal = $0 { true } else { false } }
    }

    /// `/a/b` for a static pattern: the form a request path is looked up by first.
    var canonicalPath: String {
        "/" + segments.map { if case .literal(let text) = $0 { text } else { "" } }.joined(separator: "/")
    }

    /// The parameters when `path` (already split and decoded) matches, else `nil`.
    func match(_ path: [String]) -> Parameters? {
        guard path.count == segments.count else { return nil }
        var parameters = Parameters()
        for (segment, value) in zip(segments, path) {
            switch segment {
            case .literal(let literal): if literal != value { return nil }
            case .parameter(let name): parameters.values.append((name: name, value: value))
            }
        }
        return parameters
    }

    /// The parameters when the raw path `path` — with no `%` in it, so nothing to decode —
    /// matches, else nil: compared on its bytes, without splitting it into strings.
    func match(unescaped path: UnsafeRawBufferPointer) -> Parameters? {
        var parameters = Parameters()
        var position = 0
        for index in segments.indices {
            while position < path.count, path[position] == UInt8(ascii: "/") { position += 1 }
            guard position < path.count else { return nil }
            var end = position + 1
            while end < path.count, path[end] != UInt8(ascii: "/") { end += 1 }
            let part = UnsafeRawBufferPointer(rebasing: path[position..<end])
            switch segments[index] {
            case .literal:
                guard literals[index].count == part.count, memcmp(literals[index], part.baseAddress!, part.count) == 0 else { return nil }
            case .parameter(let name):
                parameters.values.append((name: name, value: String(decoding: part, as: UTF8.self)))
            }
            position = end
        }
        while position < path.count, path[position] == UInt8(ascii: "/") { position += 1 }
        return position == path.count ? parameters : nil
    }

    /// How many segments `segments(of:)` would find in the raw path (empty ones left out), and
    /// whether one holds a `%`.
    static func segmentCount(_ path: UnsafeRawBufferPointer) -> (count: Int, escaped: Bool) {
        var count = 0, escaped = false, inSegment = false
        for byte in path {
            if byte == UInt8(ascii: "/") {
                inSegment = false
            } else {
                if !inSegment { count += 1 }
                inSegment = true
                if byte == UInt8(ascii: "%") { escaped = true }
            }
        }
        return (count, escaped)
    }

    /// Splits a raw path on `/` and percent-decodes each segment; `400` when it can't.
    /// Empty segments (`//`, a trailing `/`) are left out.
    static func segments(of path: Substring) throws(HTTPError) -> [String] {
        var result: [String] = []
        result.reserveCapacity(4)
        // One pass over the bytes, noting whether a segment holds a `%` as it goes.
        let utf8 = path.utf8
        var start = utf8.startIndex, index = start, escaped = false
        while true {
            let atEnd = index == utf8.endIndex
            let byte = atEnd ? UInt8(ascii: "/") : utf8[index]
            if byte == UInt8(ascii: "/") {
                if start < index {
                    let part = utf8[start..<index]
                    result.append(
                        escaped
                            ? try FormFields.percentDecode(part, plusIsSpace: false, context: "path")
                            : String(decoding: part, as: UTF8.self))
                }
                if atEnd { return result }
                escaped = false
                start = utf8.index(after: index)
            } else if byte == UInt8(ascii: "%") {
                escaped = true
            }
            index = utf8.index(after: index)
        }
    }
}
