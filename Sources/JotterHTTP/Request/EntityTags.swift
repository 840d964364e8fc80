/// The value of `If-Match` or `If-None-Match` (RFC 9110 §13.1): `*` or a list of entity tags.
///
/// ```swift
/// let condition = EntityTagCondition(#"W/"2", "3""#)
/// condition.matches(#""3""#, weak: false)   // true
/// ```
public enum EntityTagCondition: Sendable, Hashable {
    case any
    /// The listed tags, each with whether it was weak (`W/"…"`). Malformed members are dropped,
    /// so they never match.
    case tags([(weak: Bool, tag: String)])

    public init(_ header: String) {
        if header.trimmingASCIISpaces() == "*" {
            self = .any
            return
        }
        var tags: [(weak: Bool, tag: String)] = []
        for member in header.split(separator: ",") {
            var text = member.trimmingASCIISpaces()
            let weak = text.hasPrefix("W/")
            if weak { text = text.dropFirst(2) }
            guard text.count >= 2, text.first == "\"", text.last == "\"", !text.dropFirst().dropLast().contains("\"") else { continue }
            tags.append((weak: weak, tag: String(text)))
        }
        self = .tags(tags)
    }

    /// Whether `etag` (a quoted strong tag such as `"3"`) matches: strong comparison for
    /// `If-Match`, weak for `If-None-Match`.
    public func matches(_ etag: String, weak: Bool) -> Bool {
        switch self {
        case .any: true
        case .tags(let tags): tags.contains { $0.tag == etag && (weak || !$0.weak) }
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.any, .any): true
        case (.tags(let a), .tags(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.weak == $1.weak && $0.tag == $1.tag }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .any: hasher.combine(0)
        case .tags(let tags): for tag in tags { hasher.combine(tag.weak); hasher.combine(tag.tag) }
        }
    }
}
