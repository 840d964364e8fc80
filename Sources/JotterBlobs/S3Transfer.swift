import CCurl
import Synchronization

/// One S3 answer: status, headers (names lower-cased), and the body unless it went to a sink.
struct S3Answer {
    var status = 0
    var headers: [String: String] = [:]
    var body: [UInt8] = []

    func header(_ name: String) -> String? { headers[name] }

    /// The whole object's size: from `Content-Range: bytes a-b/SIZE` on a 206, else Content-Length.
    var totalSize: Int64? {
        if let range = headers["content-range"], let slash = range.lastIndex(of: "/") {
            return Int64(range[range.index(after: slash)...])
        }
        return headers["content-length"].flatMap { Int64($0) }
    }

    /// Throws the error a non-2xx status stands for, with S3's error code and message.
    func check() throws {
        guard !(200..<300).contains(status) else { return }
        let code = XMLText.values(of: "Code", in: body).first ?? ""
        let message = XMLText.values(of: "Message", in: body).first ?? String(decoding: body.prefix(200), as: UTF8.self)
        if status == 403 { throw BlobError.accessDenied(code.isEmpty ? message : "\(code): \(message)") }
        throw BlobError.server(status: status, code: code, message: message)
    }
}

/// libcurl easy handles kept for reuse: a handle keeps its connections (and TLS sessions) open
/// between requests, so consecutive requests to the bucket skip the TCP and TLS handshakes.
final class CurlHandles: @unchecked Sendable {
    // @unchecked: the pointers are only handed out and taken back under `lock`; a handle is
    // used by one transfer at a time.
    private struct Handle: @unchecked Sendable { let pointer: UnsafeMutableRawPointer }
    private let lock = Mutex<[Handle]>([])
    private let keep: Int

    init(keep: Int) { self.keep = keep }

    /// An idle handle (reset to defaults, its connection cache kept), or a new one.
    func take() throws -> UnsafeMutableRawPointer {
        if let handle = lock.withLock({ $0.popLast() })?.pointer {
            curl_easy_reset(handle)
            return handle
        }
        guard let handle = curl_easy_init() else { throw BlobError.transport("curl_easy_init failed") }
        return handle
    }

    /// Gives `handle` back; past `keep` idle ones it is closed.
    func give(_ handle: UnsafeMutableRawPointer) {
        let kept = lock.withLock { idle -> Bool in
            guard idle.count < keep else { return false }
            idle.append(Handle(pointer: handle))
            return true
        }
        if !kept { curl_easy_cleanup(handle) }
    }

    deinit {
        for handle in lock.withLock({ $0 }) { curl_easy_cleanup(handle.pointer) }
    }
}

/// One request on a libcurl easy handle, signed by libcurl with AWS SigV4.
final class S3Transfer {
    private let handle: UnsafeMutableRawPointer
    private let handles: CurlHandles
    private let method: String
    private let body: [UInt8]?
    private let sink: ((UnsafeRawBufferPointer) throws -> Void)?
    /// Called once with a 2xx answer's status and headers, before its first body byte.
    private let opened: ((S3Answer) throws -> Void)?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var answer = S3Answer()
    private var uploaded = 0
    private var sinkError: (any Error)?
    /// Whether any byte reached the sink (a transfer that did cannot be tried again).
    private(set) var delivered = false
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    init(
        configuration: S3BlobStore.Configuration, handles: CurlHandles, method: String, url: String, headers: [String],
        body: [UInt8]?, opened: ((S3Answer) throws -> Void)? = nil, sink: ((UnsafeRawBufferPointer) throws -> Void)?
    ) throws {
        handle = try handles.take()
        self.handles = handles
        self.method = method
        self.body = body
        self.opened = opened
        self.sink = sink
        setString(CURLOPT_URL, url)
        setString(CURLOPT_AWS_SIGV4, "aws:amz:\(configuration.region):s3")
        setString(CURLOPT_USERNAME, configuration.accessKey)
        setString(CURLOPT_PASSWORD, configuration.secretKey)
        jotter_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        jotter_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, configuration.connectTimeoutSeconds)
        // A transfer that moves under 1 byte/s for that long fails instead of hanging.
        jotter_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        jotter_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, configuration.connectTimeoutSeconds)
        // (No "Expect:" to turn 100-continue off: libcurl 7.88 would sign the empty header it then
        // does not send.)
        for header in headers { headerList = curl_slist_append(headerList, header) }
        jotter_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headerList))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        jotter_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
        switch method {
        case "HEAD":
            jotter_curl_setopt_long(handle, CURLOPT_NOBODY, 1)
        case "PUT":
            jotter_curl_setopt_long(handle, CURLOPT_UPLOAD, 1)
            jotter_curl_setopt_off(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(body?.count ?? 0))
        case "POST":
            jotter_curl_setopt_long(handle, CURLOPT_POST, 1)
        case "GET":
            break
        default:
            setString(CURLOPT_CUSTOMREQUEST, method)
        }
    }

    deinit {
        // The handle keeps pointers to the header list and the error buffer until reset.
        curl_easy_reset(handle)
        curl_slist_free_all(headerList)
        handles.give(handle)
        errorBuffer.deallocate()
    }

    /// libcurl copies string options, so the C string need only live for the call.
    private func setString(_ option: CURLoption, _ value: String) {
        jotter_curl_setopt_string(handle, option, value)
    }

    /// Runs the request to its end; a sink's error is rethrown, a transport failure is `.transport`.
    func perform() throws -> S3Answer {
        attach()
        let code: CURLcode = withExtendedLifetime(body) {
            if method == "POST" {
                // POST bodies (small XML) are handed over whole; libcurl copies nothing.
                let bytes = body ?? []
                return bytes.withUnsafeBytes { raw in
                    jotter_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(raw.count))
                    jotter_curl_setopt_pointer(
                        handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
                    return curl_easy_perform(handle)
                }
            }
            return curl_easy_perform(handle)
        }
        return try finish(code)
    }

    /// The easy handle, for a multi handle to drive (`attach` first, `finish` when it is done).
    /// Only for transfers without a POST body.
    var easyHandle: UnsafeMutableRawPointer { handle }

    /// Points libcurl's callbacks at this transfer (which must outlive the transfer's run).
    func attach() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        jotter_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        jotter_curl_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION) { buffer, size, count, context in
            let transfer = Unmanaged<S3Transfer>.fromOpaque(context!).takeUnretainedValue()
            return transfer.received(header: UnsafeRawBufferPointer(start: buffer, count: size * count)) ? size * count : 0
        }
        jotter_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        jotter_curl_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION) { buffer, size, count, context in
            let transfer = Unmanaged<S3Transfer>.fromOpaque(context!).takeUnretainedValue()
            return transfer.received(body: UnsafeRawBufferPointer(start: buffer, count: size * count))
        }
        jotter_curl_setopt_pointer(handle, CURLOPT_READDATA, context)
        jotter_curl_setopt_data_callback(handle, CURLOPT_READFUNCTION) { buffer, size, count, context in
            let transfer = Unmanaged<S3Transfer>.fromOpaque(context!).takeUnretainedValue()
            return transfer.send(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
        }
    }

    /// The answer once libcurl ended the transfer with `code`: a sink's or `opened`'s error is
    /// rethrown, a transport failure is `.transport`.
    func finish(_ code: CURLcode) throws -> S3Answer {
        if let sinkError { throw sinkError }
        guard code == CURLE_OK else {
            let detail = String(cString: errorBuffer)
            throw BlobError.transport(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
        var status = 0
        jotter_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        answer.status = status
        return answer
    }

    /// False stops the transfer (`opened` threw).
    private func received(header line: UnsafeRawBufferPointer) -> Bool {
        let text = String(decoding: line, as: UTF8.self).trimmingSuffixNewlines()
        if text.hasPrefix("HTTP/") {
            answer.headers = [:]  // a new answer (after 100 Continue, or a redirect)
            return true
        }
        if text.isEmpty {
            // The end of a header section: a final 2xx answer is open.
            var status = 0
            jotter_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
            if let opened, (200..<300).contains(status), !delivered {
                answer.status = status
                delivered = true
                do { try opened(answer) } catch { sinkError = error; return false }
            }
            return true
        }
        guard let colon = text.firstIndex(of: ":") else { return true }
        let name = text[..<colon].lowercased()
        let value = text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
        answer.headers[name] = String(value)
        return true
    }

    /// What the write callback answers: all taken, 0 to stop (the sink threw), or libcurl's
    /// pause (the sink threw `SinkFull`: the same bytes come again once the transfer is resumed).
    private func received(body bytes: UnsafeRawBufferPointer) -> Int {
        var status = 0
        jotter_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        if let sink, (200..<300).contains(status) {
            delivered = true
            do { try sink(bytes) } catch is SinkFull { return S3Transfer.pause } catch { sinkError = error; return 0 }
        } else if answer.body.count < 1 << 20 {
            answer.body.append(contentsOf: bytes)
        }
        return bytes.count
    }

    /// `CURL_WRITEFUNC_PAUSE` (a macro Swift does not import).
    static let pause = 0x1000_0001

    /// Thrown by a sink that cannot take the bytes now: the transfer pauses (only where a multi
    /// handle drives it, which resumes it with `curl_easy_pause`).
    struct SinkFull: Error {}

    private func send(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let body else { return 0 }
        let n = min(buffer.count, body.count - uploaded)
        body.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + uploaded, byteCount: n) }
        uploaded += n
        return n
    }
}

extension String {
    func trimmingSuffixNewlines() -> String {
        var text = self
        while let last = text.last, last == "\r" || last == "\n" || last == "\r\n" { text.removeLast() }
        return text
    }
}

/// The few XML reads S3 answers need: the text of `<Name>…</Name>` elements, entities decoded.
enum XMLText {
    static func elements(_ name: String, in bytes: [UInt8]) -> [[UInt8]] {
        let open = Array("<\(name)>".utf8), close = Array("</\(name)>".utf8)
        var found: [[UInt8]] = []
        var index = 0
        while let start = find(open, in: bytes, from: index) {
            let contentStart = start + open.count
            guard let end = find(close, in: bytes, from: contentStart) else { break }
            found.append(Array(bytes[contentStart..<end]))
            index = end + close.count
        }
        return found
    }

    static func values(of name: String, in bytes: [UInt8]) -> [String] {
        elements(name, in: bytes).map { unescaped(String(decoding: $0, as: UTF8.self)) }
    }

    static func escaped(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
    }

    static func unescaped(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacing("&quot;", with: "\"").replacing("&apos;", with: "'").replacing("&lt;", with: "<")
            .replacing("&gt;", with: ">").replacing("&#34;", with: "\"").replacing("&amp;", with: "&")
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard needle.count <= bytes.count else { return nil }
        var index = start
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0] && bytes[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
