/// A `Range: bytes=…` request header against a representation of `size` bytes (RFC 9110 §14).
/// Only a single range is served; several ranges are answered with the whole content, which
/// RFC 9110 allows.
///
/// ```swift
/// ByteRange("bytes=0-99", size: 1000)    // .partial(0...99)
/// ByteRange("bytes=-10", size: 1000)     // .partial(990...999)
/// ByteRange("bytes=2000-", size: 1000)   // .unsatisfiable
/// ```
public enum ByteRange: Sendable, Hashable {
    case full
    case partial(ClosedRange<UInt64>)
    case unsatisfiable

    public init(_ header: String?, size: UInt64) {
        guard let header else { self = .full; return }
        let text = header.trimmingASCIISpaces()
        guard text.lowercased().hasPrefix("bytes=") else { self = .full; return }  // unknown unit: ignore
        // A list whose empty elements are ignored (RFC 9110 §5.6.1.2): `bytes=0-9,` is one range.
        let ranges = text.dropFirst(6).split(separator: ",").map { $0.trimmingASCIISpaces() }.filter { !$0.isEmpty }
        guard ranges.count == 1, let spec = ranges.first else { self = .full; return }
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { $0.trimmingASCIISpaces() }
        guard parts.count == 2 else { self = .full; return }
        let digits = { (text: Substring) in !text.isEmpty && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        if parts[0].isEmpty {
            // bytes=-N: the last N bytes.
            guard digits(parts[1]), let suffix = UInt64(parts[1]) else { self = .full; return }
            guard suffix > 0, size > 0 else { self = .unsatisfiable; return }
            self = .partial((size - min(suffix, size))...(size - 1))
            return
        }
        guard digits(parts[0]), let first = UInt64(parts[0]) else { self = .full; return }
        guard first < size else { self = .unsatisfiable; return }
        if parts[1].isEmpty {
            self = .partial(first...(size - 1))
        } else {
            guard digits(parts[1]), let last = UInt64(parts[1]), last >= first else { self = .full; return }
            self = .partial(first...min(last, size - 1))
        }
    }
}
