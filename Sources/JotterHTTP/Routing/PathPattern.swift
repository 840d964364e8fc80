/// A route path such as `/notes/:id/content`, matched segment by segment.
struct PathPattern: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    let segments: [Segment]
    /// The pattern as registered.
    let text: String

    init(_ path: String) {
        text = path
        segments = path.split(separator: "/").map { part in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(String(part))
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
                    result.append(escaped ? try FormFields.percentDecode(part, plusIsSpace: false, context: "path")
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
