import CLLHTTP

/// One connection's request parser: llhttp (strict, Debian's node-llhttp sources) behind the C
/// shim in `Sources/CLLHTTP`, which records the head as spans of the buffer being parsed and
/// queues what it found — a head, body pieces, a request's end — for the connection to act on.
///
/// The head of one request must be parsed from one buffer: when a call ends inside a head, the
/// connection moves the bytes from `messageStart` to the front of a buffer of its own, calls
/// `rebase`, and parses what arrives next into that buffer right after them.
final class RequestParser {
    /// What one call found, in order.
    enum Event {
        case head
        case body(offset: Int, count: Int)
        case end
    }

    enum Outcome {
        /// Everything given was consumed.
        case consumed
        /// Stopped early, after an event, at this offset.
        case paused(at: Int)
        case failed(HTTPError)
    }

    private let parser: UnsafeMutablePointer<jotter_parser>

    init(maxTarget: Int, maxHead: Int) {
        parser = .allocate(capacity: 1)
        jotter_parser_init(parser, UInt32(maxTarget), UInt32(maxHead))
    }

    deinit { parser.deallocate() }

    /// Parses `base[from..<to]`, calling `handle` for each event in order. `handle` returns
    /// false to stop (the connection is closing, or waits before it may parse further): parsing
    /// stops after the events of the current step, which llhttp has consumed already — a head
    /// or a request's end ends a step, but body pieces (and the end after them) come in one, so
    /// they are all handed over (a body's consumer that asked to wait takes what was read).
    func execute(_ base: UnsafeRawPointer, from: Int, to: Int, handle: (Event) -> Bool) -> Outcome {
        var position = from
        while true {
            var consumed: UInt32 = 0
            let status = jotter_parser_execute(parser, base.assumingMemoryBound(to: CChar.self), UInt32(position), UInt32(to), &consumed)
            let count = Int(parser.pointee.event_count)
            var stopped = false
            withUnsafePointer(to: &parser.pointee.events) { events in
                events.withMemoryRebound(to: jotter_event.self, capacity: Int(JOTTER_MAX_EVENTS)) { events in
                    for index in 0..<count {
                        let event = events[index]
                        let goOn: Bool
                        switch Int32(event.kind) {
                        case Int32(JOTTER_EVENT_HEAD): goOn = handle(.head)
                        case Int32(JOTTER_EVENT_BODY): goOn = handle(.body(offset: Int(event.span.offset), count: Int(event.span.length)))
                        default: goOn = handle(.end)
                        }
                        if !goOn { stopped = true }
                    }
                }
            }
            position = Int(consumed)
            switch status {
            case HPE_OK:
                return stopped && position < to ? .paused(at: position) : .consumed
            case HPE_PAUSED:
                // Paused after a head or a request's end: go on (with no bytes left, the parser
                // may still reach the end of a request without a body).
                if stopped { return position >= to ? .consumed : .paused(at: position) }
            default:
                return .failed(error(status))
            }
        }
    }

    /// The error that stopped the parser, as Jotter answers it.
    private func error(_ status: llhttp_errno_t) -> HTTPError {
        switch Int32(parser.pointee.limit) {
        case Int32(JOTTER_LIMIT_TARGET):
            return HTTPError(.uriTooLong, detail: "the request-target is longer than \(parser.pointee.max_target) bytes", closesConnection: true)
        case Int32(JOTTER_LIMIT_HEAD):
            return HTTPError(
                .requestHeaderFieldsTooLarge,
                detail: "the request's header section is too large (at most \(parser.pointee.max_head) bytes and \(JOTTER_MAX_FIELDS) fields)",
                closesConnection: true)
        case Int32(JOTTER_LIMIT_FOLDED):
            return .badRequest("a header line starts with a space or tab (obsolete line folding is not accepted)", close: true)
        case Int32(JOTTER_LIMIT_BARE_LF):
            return .badRequest("a line ends in LF without CR (every line of a request ends in CRLF here)", close: true)
        case Int32(JOTTER_LIMIT_VERSION):
            let version = self.version
            return HTTPError(
                .httpVersionNotSupported,
                detail: version.major == 0
                    ? "a request line without an HTTP version (HTTP/0.9) is not served; only HTTP/1.0 and HTTP/1.1 are"
                    : "HTTP/\(version.major).\(version.minor) in a request line is not served; only HTTP/1.0 and HTTP/1.1 are (HTTP/2 begins with its connection preface)",
                closesConnection: true)
        default:
            break
        }
        let reason = String(cString: jotter_parser_reason(parser))
        switch status {
        case HPE_UNEXPECTED_CONTENT_LENGTH:
            // llhttp reports both with this code; only its reason tells them apart.
            return .badRequest(
                reason.contains("Duplicate")
                    ? "Content-Length is repeated" : "Content-Length and Transfer-Encoding together make the message length ambiguous",
                close: true)
        case HPE_INVALID_CONTENT_LENGTH:
            return .badRequest(
                reason.contains("Duplicate") ? "Content-Length is repeated" : "Content-Length is not a decimal number that fits 64 bits (\(reason))",
                close: true)
        case HPE_INVALID_CHUNK_SIZE:
            return .badRequest("malformed chunk size (\(reason))", close: true)
        case HPE_INVALID_HEADER_TOKEN:
            return .badRequest("invalid header field (\(reason))", close: true)
        case HPE_INVALID_METHOD:
            return .badRequest("the request method is not one this server knows (\(reason))", close: true)
        case HPE_INVALID_URL:
            return .badRequest("malformed request-target (\(reason))", close: true)
        case HPE_INVALID_VERSION:
            return HTTPError(.httpVersionNotSupported, detail: "only HTTP/1.0 and HTTP/1.1 are served here (\(reason))", closesConnection: true)
        case HPE_INVALID_TRANSFER_ENCODING where reason.contains("chunked"):
            return HTTPError(
                .notImplemented, detail: "only the 'chunked' transfer coding is supported, once and last (\(reason))", closesConnection: true)
        default:
            return .badRequest("malformed request: \(reason)", close: true)
        }
    }

    /// The method and target of a request line whose method llhttp does not know (`QUERY`,
    /// `BREW`): a valid token, so the router can answer `405` (or `404`) for it.
    func unknownMethod(_ base: UnsafeRawPointer, to: Int) -> (method: String, target: String)? {
        guard parser.pointee.llhttp.error == HPE_INVALID_METHOD.rawValue else { return nil }
        let bytes = UnsafeRawBufferPointer(start: base + messageStart, count: to - messageStart)
        guard let space = bytes.firstIndex(of: 0x20), space > 0, bytes[..<space].allSatisfy(FramingCheck.isTokenByte) else { return nil }
        let rest = bytes[(space + 1)...]
        guard let end = rest.firstIndex(where: { $0 == 0x20 || $0 == 0x0D || $0 == 0x0A }), end > rest.startIndex else { return nil }
        return (String(decoding: bytes[..<space], as: UTF8.self), String(decoding: rest[..<end], as: UTF8.self))
    }

    /// True while a head has begun and is not complete.
    var inHead: Bool { parser.pointee.in_head != 0 }

    /// Where the request being parsed began in the buffer.
    var messageStart: Int { Int(parser.pointee.message_start) }

    /// The spans of the head in progress moved `delta` bytes towards the buffer's start.
    func rebase(_ delta: Int) {
        guard delta > 0 else { return }
        jotter_parser_rebase(parser, UInt32(delta))
    }

    /// Whether the connection stays open after the request just parsed (RFC 9112 §9.3).
    var keepAlive: Bool { llhttp_should_keep_alive(&parser.pointee.llhttp) != 0 }

    /// The request just parsed has a body (a Content-Length above 0, or chunked).
    var hasBody: Bool {
        let flags = UInt32(parser.pointee.llhttp.flags)
        return flags & UInt32(F_CHUNKED.rawValue) != 0 || (flags & UInt32(F_CONTENT_LENGTH.rawValue) != 0 && parser.pointee.llhttp.content_length > 0)
    }

    var version: (major: Int, minor: Int) { (Int(parser.pointee.llhttp.http_major), Int(parser.pointee.llhttp.http_minor)) }

    /// The Content-Length of the request just parsed, read at its head (llhttp counts it down
    /// as the body is read).
    var declaredLength: Int64? {
        UInt32(parser.pointee.llhttp.flags) & UInt32(F_CONTENT_LENGTH.rawValue) != 0 ? Int64(exactly: parser.pointee.llhttp.content_length) : nil
    }

    /// The head just parsed, read from `base` (the buffer its spans point into). The field
    /// lines are copied once, as one run of bytes; each field is a pair of spans of it.
    func head(_ base: UnsafeRawPointer) -> (method: HTTPMethod, target: String, version: String, headers: HTTPHeaders) {
        func text(_ span: jotter_span) -> String {
            String(decoding: UnsafeRawBufferPointer(start: base + Int(span.offset), count: Int(span.length)), as: UTF8.self)
        }
        let count = Int(parser.pointee.field_count)
        var headers = HTTPHeaders()
        if count > 0 {
            withUnsafePointer(to: &parser.pointee.names) { names in
                withUnsafePointer(to: &parser.pointee.values) { values in
                    names.withMemoryRebound(to: jotter_span.self, capacity: Int(JOTTER_MAX_FIELDS)) { names in
                        values.withMemoryRebound(to: jotter_span.self, capacity: Int(JOTTER_MAX_FIELDS)) { values in
                            let first = names[0].offset
                            var last = names[count - 1].offset + names[count - 1].length
                            if values[count - 1].length > 0 { last = values[count - 1].offset + values[count - 1].length }
                            headers = HTTPHeaders(parsedCount: count, byteCount: Int(last - first)) { spans, bytes in
                                for index in 0..<count {
                                    // llhttp drops the whitespace before a value, not after it (RFC 9112 §5.1: OWS on both sides).
                                    var value = values[index]
                                    while value.length > 0 {
                                        let byte = base.load(fromByteOffset: Int(value.offset + value.length - 1), as: UInt8.self)
                                        guard byte == 0x20 || byte == 0x09 else { break }
                                        value.length -= 1
                                    }
                                    (spans + index).initialize(
                                        to: HTTPHeaders.Span(
                                            nameStart: names[index].offset - first, nameCount: names[index].length,
                                            valueStart: value.length > 0 ? value.offset - first : 0,
                                            valueCount: value.length))
                                }
                                bytes.copyMemory(from: base + Int(first), byteCount: Int(last - first))
                            }
                        }
                    }
                }
            }
        }
        let version = self.version
        let versionText =
            version.major == 1 && version.minor == 1
            ? "HTTP/1.1"
            : version.major == 1 && version.minor == 0
                ? "HTTP/1.0"
                : "HTTP/\(version.major).\(version.minor)"
        let method = parser.pointee.method
        return (
            HTTPMethod(UnsafeRawBufferPointer(start: base + Int(method.offset), count: Int(method.length))), text(parser.pointee.target),
            versionText, headers
        )
    }
}
