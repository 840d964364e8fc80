import Glibc

/// The headers of one `multipart/form-data` part that matter: its field name, the client's
/// file name (RFC 5987 `filename*` preferred over `filename`) and its Content-Type.
public struct MultipartPartHeaders: Sendable, Hashable {
    public var name: String
    /// The file name as sent (not yet cleaned); `nil` for a plain field.
    public var filename: String?
    public var contentType: String?
}

/// A streaming `multipart/form-data` parser (RFC 7578, RFC 2046 §5.1): bytes go in as they
/// arrive, part boundaries and data come out, and memory stays bounded by the part headers.
/// It does no I/O; `MultipartReceiver` decides where the data goes.
///
/// Part headers take RFC 5987 `filename*` (which the contract requires), unquoted values and
/// escaped quotes.
struct MultipartParser {
    enum Event {
        case begin(MultipartPartHeaders)
        case data(UnsafeRawBufferPointer)
        case end
    }

    private enum State { case preamble, afterBoundary, headers, body, epilogue }

    /// `CRLF--boundary`: what ends every part (the body starts with a virtual CRLF).
    private let delimiter: [UInt8]
    private var state = State.preamble
    /// Bytes kept from the last chunk: a possible start of the delimiter, or of a boundary line.
    private var carry: [UInt8] = [13, 10]
    private var headerBytes: [UInt8] = []
    static let maxHeaderSize = 16 << 10

    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
    }

    /// The boundary parameter of a `multipart/form-data` Content-Type; `400` when it is
    /// missing or not 1–70 characters (RFC 2046 §5.1.1).
    static func boundary(of contentType: String) throws(HTTPError) -> String {
        guard let media = MediaType(contentType), media.essence == "multipart/form-data" else {
            throw HTTPError.badRequest("the Content-Type is not multipart/form-data")
        }
        guard let boundary = media.parameters["boundary"], !boundary.isEmpty else {
            throw HTTPError.badRequest("the multipart Content-Type has no boundary parameter")
        }
        guard boundary.utf8.count <= 70, !boundary.hasSuffix(" "),
            boundary.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
        else {
            throw HTTPError.badRequest("the multipart boundary must be 1 to 70 printable ASCII characters")
        }
        return boundary
    }

    /// Feeds the next chunk of the body; `handle` gets the events it completes, in order.
    mutating func feed(
        _ chunk: UnsafeRawBufferPointer,
        _ handle: (Event) throws(HTTPError) -> Void
    ) throws(HTTPError) {
        if carry.isEmpty {
            try process(chunk, handle)
        } else {
            var window = carry
            window.append(contentsOf: chunk)
            carry = []
            var failure: HTTPError?
            window.withUnsafeBytes { bytes in
                do throws(HTTPError) { try process(bytes, handle) } catch { failure = error }
            }
            if let failure { throw failure }
        }
    }

    /// The body has ended: it must have ended with the closing boundary.
    func finish() throws(HTTPError) {
        switch state {
        case .epilogue: return
        case .preamble: throw HTTPError.badRequest("the multipart body has no boundary line (is the boundary right?)")
        case .headers:
            throw HTTPError.badRequest(
                "the multipart body ends in a part's header section: a part needs its header lines, "
                    + "a blank line, then its content")
        case .afterBoundary, .body: throw HTTPError.badRequest("the multipart body is truncated: it ends before the closing boundary")
        }
    }

    private mutating func process(
        _ window: UnsafeRawBufferPointer,
        _ handle: (Event) throws(HTTPError) -> Void
    ) throws(HTTPError) {
        var index = 0
        while index < window.count {
            switch state {
            case .preamble:
                guard let found = find(delimiter, in: window, from: index) else {
                    keepTail(of: window, from: index)
                    return
                }
                index = found + delimiter.count
                state = .afterBoundary

            case .afterBoundary:
                // "--" closes the body; otherwise optional whitespace, then CRLF, then headers.
                let rest = UnsafeRawBufferPointer(rebasing: window[index...])
                if rest.count < 2 { carry = Array(rest); return }
                if rest[0] == UInt8(ascii: "-") && rest[1] == UInt8(ascii: "-") {
                    state = .epilogue
                    return
                }
                var position = 0
                while position < rest.count, rest[position] == 0x20 || rest[position] == 0x09 { position += 1 }
                if position + 1 >= rest.count {
                    guard rest.count < 256 else { throw HTTPError.badRequest("malformed multipart boundary line") }
                    carry = Array(rest)
                    return
                }
                guard rest[position] == 13, rest[position + 1] == 10 else {
                    throw HTTPError.badRequest("malformed multipart boundary line")
                }
                index += position + 2
                state = .headers
                headerBytes = []

            case .headers:
                // Copy no more than the header limit allows (plus the blank line that ends them).
                let before = headerBytes.count
                let take = min(window.count - index, Self.maxHeaderSize + 4 - before)
                headerBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: window[index..<(index + take)]))
                let end: Int
                if headerBytes.starts(with: [13, 10]) {
                    end = 0  // no header lines at all
                } else if let found = headerBytes.withUnsafeBytes({ find([13, 10, 13, 10], in: $0, from: 0) }),
                    found <= Self.maxHeaderSize
                {
                    end = found + 2
                } else if headerBytes.count >= Self.maxHeaderSize {
                    throw HTTPError(.contentTooLarge, detail: "a multipart part's headers are larger than \(Self.maxHeaderSize) bytes")
                } else {
                    return
                }
                let headers = try Self.parseHeaders(headerBytes[..<end])
                index += end + 2 - before
                headerBytes = []
                state = .body
                try handle(.begin(headers))

            case .body:
                if let found = find(delimiter, in: window, from: index) {
                    if found > index { try handle(.data(UnsafeRawBufferPointer(rebasing: window[index..<found]))) }
                    try handle(.end)
                    index = found + delimiter.count
                    state = .afterBoundary
                } else {
                    let safe = window.count - (delimiter.count - 1)
                    if safe > index {
                        try handle(.data(UnsafeRawBufferPointer(rebasing: window[index..<safe])))
                        index = safe
                    }
                    keepTail(of: window, from: index)
                    return
                }

            case .epilogue:
                return
            }
        }
    }

    /// Keeps the bytes that could still begin a delimiter.
    private mutating func keepTail(of window: UnsafeRawBufferPointer, from index: Int) {
        let start = max(index, window.count - (delimiter.count - 1))
        carry = Array(UnsafeRawBufferPointer(rebasing: window[start...]))
    }

    /// The offset of `needle` in `haystack` at or after `index`: `memchr` for its first byte,
    /// then `memcmp` for the rest.
    private func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer, from index: Int) -> Int? {
        guard let base = haystack.baseAddress, haystack.count - index >= needle.count else { return nil }
        return needle.withUnsafeBytes { pattern -> Int? in
            var position = index
            let last = haystack.count - needle.count
            while position <= last {
                guard let hit = memchr(base + position, Int32(needle[0]), last - position + 1) else { return nil }
                let offset = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + offset, pattern.baseAddress!, needle.count) == 0 { return offset }
                position = offset + 1
            }
            return nil
        }
    }
}
