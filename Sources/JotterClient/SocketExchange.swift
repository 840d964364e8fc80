#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Glibc
import Synchronization

/// One HTTP/1.1 exchange over a plain POSIX socket, on a thread of its own: for what URLSession
/// on Linux does badly over `http://`.
///
/// - Event streams: swift-corelibs-foundation's URLSession keeps a core busy while a response
///   stays open and idle (240 CPU ticks in 3 s measured for `jotter notes watch`); this thread
///   sleeps in `poll` until bytes arrive (0 ticks).
/// - Uploads: a URLSession body stream goes out chunked, without a Content-Length, so a server
///   can refuse an upload that is too large only after reading it. Here the multipart body's
///   length, known from the file sizes, is declared with `Expect: 100-continue`: a server that
///   refuses it (`413`) answers before a byte of the body is sent.
///
/// It reports what a URLSession task reports (`TaskEvent`), and fails with the `URLError` codes
/// URLSession uses, so everything above it is shared. Cancelling the iteration wakes the thread
/// and closes the connection at once.
///
/// `https://` goes here only when the server's certificate is to be checked against other
/// authorities than the system's, or not at all (`JotterClient.ServerTrust`): then every
/// request does, over TLS from OpenSSL (`TLSConnection`), one connection each. Otherwise the
/// SDK uses URLSession for HTTPS.
final class SocketExchange: @unchecked Sendable {
    /// What to send after the head.
    enum Body {
        case none
        /// The multipart body, `length` bytes, read from its segments as it goes out.
        case segments([MultipartFormData.Segment], length: Int64)
        /// Bytes in memory, sent after the head with their Content-Length.
        case data(Data)
    }

    private let request: URLRequest
    private let extraHeaders: [String: String]
    private let body: Body
    private let idleTimeout: Double
    private let trust: JotterClient.ServerTrust
    /// Written to wake the thread out of `poll` when the iteration is cancelled.
    private let wake: (read: Int32, write: Int32)

    /// Whether `url` can go over a plain socket: `http://`, and `https://` with a trust of
    /// its own (`needsOwnTLS`).
    static func handles(_ url: URL?, trust: JotterClient.ServerTrust) -> Bool {
        url?.host != nil && (url?.scheme?.lowercased() == "http" || needsOwnTLS(url, trust: trust))
    }

    /// Whether `url` is HTTPS whose certificate URLSession cannot check as `trust` asks: every
    /// request to it goes over a socket of ours.
    static func needsOwnTLS(_ url: URL?, trust: JotterClient.ServerTrust) -> Bool {
        trust != .system && url?.scheme?.lowercased() == "https" && url?.host != nil
    }

    private init(
        request: URLRequest, extraHeaders: [String: String], body: Body, idleTimeout: Double,
        trust: JotterClient.ServerTrust
    ) {
        self.trust = trust
        self.request = request
        self.extraHeaders = extraHeaders
        self.body = body
        self.idleTimeout = idleTimeout
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        } else {
            fds = [-1, -1]
        }
        wake = (fds[0], fds[1])
    }

    deinit {
        close(wake.read)
        close(wake.write)
    }

    /// Exchanges whose thread is still running, for one client.
    final class Counter: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .acquiring) }
        func add(_ delta: Int) { count.add(delta, ordering: .acquiringAndReleasing) }
    }

    /// Starts the exchange and returns what it reports; ending the iteration early cancels it.
    static func run(
        _ request: URLRequest, headers: [String: String], body: Body = .none,
        idleTimeout: Double, trust: JotterClient.ServerTrust = .system,
        counter: Counter
    ) -> AsyncThrowingStream<TaskEvent, any Error> {
        let exchange = SocketExchange(request: request, extraHeaders: headers, body: body, idleTimeout: idleTimeout, trust: trust)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: TaskEvent.self, throwing: (any Error).self)
        continuation.onTermination = { termination in
            if case .cancelled = termination { exchange.cancel() }
        }
        counter.add(1)
        let thread = Thread {
            defer { counter.add(-1) }
            // `sendfile` to a peer that closed raises SIGPIPE (it has no MSG_NOSIGNAL): blocked on
            // this thread, it stays pending here and goes with the thread, and the call fails with EPIPE.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            do {
                try exchange.perform { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.name = "JotterClient socket"
        thread.start()
        return stream
    }

    private func cancel() {
        var byte: UInt8 = 1
        _ = Glibc.write(wake.write, &byte, 1)
    }

    // MARK: - The exchange

    private func perform(_ report: (TaskEvent) -> Void) throws {
        guard let url = request.url, let host = url.host else { throw URLError(.badURL) }
        let secure = url.scheme?.lowercased() == "https"
        let fd = try connect(host: host, port: url.port ?? (secure ? 443 : 80))
        defer { close(fd) }
        if secure {
            // The handshake blocks: bounded by the idle timeout in each direction.
            var limit = timeval(tv_sec: Int(idleTimeout), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            tls = try TLSConnection(fd: fd, host: host, trust: trust)
        }
        defer { tls = nil }
        var reader = Reader(fd: fd, exchange: self)

        var head = "\(request.httpMethod ?? "GET") \(Self.target(url)) HTTP/1.1\r\n"
        head += "Host: \(host.contains(":") ? "[\(host)]" : host)\(url.port.map { ":\($0)" } ?? "")\r\n"
        var fields = extraHeaders
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            fields = fields.filter { $0.key.lowercased() != name.lowercased() }
            fields[name] = value
        }
        for (name, value) in fields where !["host", "content-length", "transfer-encoding", "connection", "expect"].contains(name.lowercased()) {
            head += "\(name): \(value)\r\n"
        }
        if case .segments(_, let length) = body {
            head += "Content-Length: \(length)\r\nExpect: 100-continue\r\n"
        }
        if case .data(let data) = body, !data.isEmpty || !["GET", "HEAD"].contains(request.httpMethod?.uppercased() ?? "GET") {
            head += "Content-Length: \(data.count)\r\n"
        }
        head += "Connection: close\r\n\r\n"
        try send(fd, Array(head.utf8))
        if case .data(let data) = body, !data.isEmpty {
            try data.withUnsafeBytes { try send(fd, $0) }
            report(.sent(Int64(data.count)))
        }

        var response: Response?
        if case .segments(let segments, _) = body {
            // Wait (up to a second, as curl does) for `100 Continue` or a refusal before sending.
            if try reader.waitForData(seconds: 1) {
                let first = try reader.readHead()
                if first.status != 100 { response = first }
            }
            if response == nil {
                do {
                    try sendBody(fd, segments, report)
                } catch let error as URLError where error.code == .networkConnectionLost {
                    // The server answered early and closed (a refusal): read what it said.
                }
            }
        }
        if response == nil {
            repeat { response = try reader.readHead() } while response!.status == 100
        }
        let answer = response!
        guard let http = HTTPURLResponse(url: url, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: answer.headers) else {
            throw URLError(.badServerResponse)
        }
        report(.response(http))
        let method = request.httpMethod?.uppercased() ?? "GET"
        if method == "HEAD" || answer.status == 204 || answer.status == 304 { return }
        let lowered = Dictionary(answer.headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        if lowered["transfer-encoding"]?.lowercased().contains("chunked") == true {
            try reader.readChunked { report(.data($0)) }
        } else if let length = lowered["content-length"].flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }) {
            try reader.read(length) { report(.data($0)) }
        } else {
            try reader.readToEnd { report(.data($0)) }
        }
    }

    /// The path and query, as they are in the URL (percent-escapes kept).
    private static func target(_ url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var path = components?.percentEncodedPath ?? "/"
        if path.isEmpty { path = "/" }
        if let query = components?.percentEncodedQuery { path += "?" + query }
        return path
    }

    private func connect(host: String, port: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { throw URLError(.cannotFindHost) }
        defer { freeaddrinfo(list) }
        var address: UnsafeMutablePointer<addrinfo>? = first
        while let current = address {
            address = current.pointee.ai_next
            let fd = socket(current.pointee.ai_family, current.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), current.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            if Glibc.connect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 {
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            close(fd)
        }
        throw URLError(.cannotConnectToHost)
    }

    /// Waits until `fd` is ready for `events`, the idle timeout passes (`.timedOut`), or the
    /// exchange is cancelled; true when ready, false after `seconds` (if given) passed.
    fileprivate func wait(_ fd: Int32, for events: Int16, seconds: Double? = nil) throws -> Bool {
        var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        while true {
            let result = poll(&fds, 2, Int32((seconds ?? idleTimeout) * 1000))
            if result < 0 && errno == EINTR { continue }
            if fds[1].revents != 0 { throw URLError(.cancelled) }
            if result > 0 { return true }
            if seconds != nil { return false }
            throw URLError(.timedOut)
        }
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try send(fd, $0) }
    }

    /// The TLS connection over the socket, for `https://`.
    fileprivate var tls: TLSConnection?

    private func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        if let tls { return try tls.write(bytes) }
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 && errno == EINTR { continue }
            if sent < 0 && errno == EAGAIN { _ = try wait(fd, for: Int16(POLLOUT)); continue }
            guard sent > 0 else { throw URLError(.networkConnectionLost) }
            offset += sent
        }
    }

    /// The body: literal segments with `send`, files with `sendfile` (no copy through this process).
    private func sendBody(_ fd: Int32, _ segments: [MultipartFormData.Segment], _ report: (TaskEvent) -> Void) throws {
        var sent: Int64 = 0
        for segment in segments {
            switch segment {
            case .bytes(let data):
                try data.withUnsafeBytes { try send(fd, $0) }
                sent += Int64(data.count)
                report(.sent(sent))
            case .file(let url):
                let file = open(url.path, O_RDONLY | O_CLOEXEC)
                guard file >= 0 else {
                    throw JotterClientError.localFile("cannot read \(url.path): \(String(cString: strerror(errno)))")
                }
                defer { close(file) }
                if tls != nil {
                    // No sendfile through TLS: the file goes through a buffer.
                    var chunk = [UInt8](repeating: 0, count: 1 << 16)
                    while true {
                        let count = Glibc.read(file, &chunk, chunk.count)
                        if count < 0 && errno == EINTR { continue }
                        guard count >= 0 else {
                            throw JotterClientError.localFile("cannot read \(url.path): \(String(cString: strerror(errno)))")
                        }
                        if count == 0 { break }
                        try chunk.withUnsafeBytes { try send(fd, UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                        sent += Int64(count)
                        report(.sent(sent))
                    }
                    continue
                }
                while true {
                    let count = sendfile(fd, file, nil, 1 << 20)
                    if count < 0 && errno == EINTR { continue }
                    if count < 0 && errno == EAGAIN { _ = try wait(fd, for: Int16(POLLOUT)); continue }
                    if count < 0 && (errno == EPIPE || errno == ECONNRESET) { throw URLError(.networkConnectionLost) }
                    guard count >= 0 else {
                        throw JotterClientError.localFile("cannot read \(url.path): \(String(cString: strerror(errno)))")
                    }
                    if count == 0 { break }
                    sent += Int64(count)
                    report(.sent(sent))
                }
            }
        }
    }

    fileprivate struct Response {
        var status: Int
        var headers: [String: String]
    }

    /// Buffered reads from the socket, each waiting in `poll`.
    fileprivate struct Reader {
        let fd: Int32
        let exchange: SocketExchange
        private var buffer: [UInt8] = []
        private var start = 0
        private var ended = false

        init(fd: Int32, exchange: SocketExchange) {
            self.fd = fd
            self.exchange = exchange
        }

        /// True when bytes are (or the end is) available within `seconds`.
        mutating func waitForData(seconds: Double) throws -> Bool {
            if start < buffer.count || exchange.tls?.hasBuffered == true { return true }
            return try exchange.wait(fd, for: Int16(POLLIN), seconds: seconds)
        }

        /// Reads more into the buffer; false at the end of the stream.
        private mutating func fill() throws -> Bool {
            if ended { return false }
            if start > 0 && start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                if exchange.tls?.hasBuffered != true { _ = try exchange.wait(fd, for: Int16(POLLIN)) }
                let count =
                    try exchange.tls.map { tls in try chunk.withUnsafeMutableBytes { try tls.read($0.baseAddress!, $0.count) } }
                    ?? recv(fd, &chunk, chunk.count, 0)
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if count < 0 && errno == ECONNRESET { ended = true; return false }
                guard count >= 0 else { throw URLError(.networkConnectionLost) }
                if count == 0 { ended = true; return false }
                buffer += chunk[..<count]
                return true
            }
        }

        /// One line without its CRLF.
        private mutating func line() throws -> String {
            while true {
                if let end = buffer[start...].firstIndex(of: 0x0A) {
                    var text = buffer[start..<end]
                    if text.last == 0x0D { text = text.dropLast() }
                    start = end + 1
                    return String(decoding: text, as: UTF8.self)
                }
                guard buffer.count - start < 1 << 16 else { throw URLError(.badServerResponse) }
                guard try fill() else { throw URLError(.networkConnectionLost) }
            }
        }

        /// The status line and headers.
        mutating func readHead() throws -> Response {
            let status = try line()
            let words = status.split(separator: " ", maxSplits: 2)
            guard words.count >= 2, words[0].hasPrefix("HTTP/1."), let code = Int(words[1]) else { throw URLError(.badServerResponse) }
            var headers: [String: String] = [:]
            while true {
                let field = try line()
                if field.isEmpty { break }
                guard let colon = field.firstIndex(of: ":") else { throw URLError(.badServerResponse) }
                let name = String(field[..<colon]), value = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers[name] = headers[name].map { $0 + ", " + value } ?? value
            }
            return Response(status: code, headers: headers)
        }

        /// Hands over what is buffered (at most `limit` bytes); false when nothing is left.
        private mutating func take(upTo limit: Int64, _ deliver: (Data) -> Void) throws -> Int64 {
            if start == buffer.count { guard try fill() else { return 0 } }
            let count = Int(min(Int64(buffer.count - start), limit))
            deliver(Data(buffer[start..<(start + count)]))
            start += count
            return Int64(count)
        }

        mutating func read(_ length: Int64, _ deliver: (Data) -> Void) throws {
            var remaining = length
            while remaining > 0 {
                let count = try take(upTo: remaining, deliver)
                guard count > 0 else { throw URLError(.networkConnectionLost) }
                remaining -= count
            }
        }

        mutating func readToEnd(_ deliver: (Data) -> Void) throws {
            while try take(upTo: .max, deliver) > 0 {}
        }

        mutating func readChunked(_ deliver: (Data) -> Void) throws {
            while true {
                let sizeLine = try line()
                guard let size = Int64(sizeLine.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) ?? "", radix: 16), size >= 0 else {
                    throw URLError(.badServerResponse)
                }
                if size == 0 {
                    while try !line().isEmpty {}  // trailers
                    return
                }
                try read(size, deliver)
                guard try line().isEmpty else { throw URLError(.badServerResponse) }
            }
        }
    }
}

#endif
