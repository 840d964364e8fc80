import CNGHTTP2
import Glibc

/// One HTTP/2 connection (RFC 9113) on its event loop. libnghttp2 does the framing, HPACK, flow
/// control and stream states; each stream runs its request through a `RequestLifecycle` exactly
/// as an HTTP/1.1 request does — the same routes, middleware, body policies, limits, later
/// replies and streaming bodies — and its answer goes out as HEADERS and DATA frames under the
/// peer's windows.
///
/// It begins as an `HTTP1Connection` that hands over: after a TLS handshake that chose `h2` by
/// ALPN, or when a plain connection starts with the client preface (prior knowledge; no
/// `Upgrade: h2c`). Bytes go in through `nghttp2_session_mem_recv` and come out of
/// `nghttp2_session_mem_send` into `output`, written as the socket takes them. Loop thread only.
final class HTTP2Connection: LoopConnection {
    /// One request and its answer.
    final class Stream {
        let id: Int32
        var method = ""
        var path = ""
        var authority = ""
        var headers = HTTPHeaders()
        var cookies: [String] = []
        var headerBytes = 0
        /// The header section is complete (later HEADERS are trailers).
        var headComplete = false
        var lifecycle: RequestLifecycle?
        var isHead = false
        var hasBody = false
        var bodyStarted: UInt64 = 0
        var bodyBytes = 0
        /// The answer was submitted before the body ended: the rest of the body is dropped.
        var discarding = false
        /// A later reply, or a step on the route's executor (`awayAtHead`: its head's), is awaited.
        var waiting = false
        var awayAtHead = false
        /// Body bytes that arrived while the head's step was away, given to the body once it is back.
        var held: [UInt8] = []
        /// The client ended the stream (END_STREAM seen).
        var ended = false
        var answered = false
        var completed = false
        var source = Source.none
        var position = 0
        var status = 0
        var bodyLength = 0
        /// The data provider returned `NGHTTP2_ERR_DEFERRED`: a wake resumes it.
        var deferred = false
        var waker: ConnectionWaker?

        init(id: Int32) { self.id = id }
    }

    enum Source {
        case none
        case bytes([UInt8])
        case file(fd: Int32, offset: Int, remaining: Int)
        case stream(any StreamingBody)
    }

    unowned let loop: EventLoop
    private var io: ConnectionIO
    let token: UInt64
    let address: String
    let opened: UInt64
    private var server: HTTPServer { loop.server }
    private var session: OpaquePointer?
    private var streams: [Int32: Stream] = [:]
    /// Frames nghttp2 made that the socket has not taken yet.
    private var output: [UInt8] = []
    private var outputSent = 0
    private var interest: UInt32 = Epoll.input
    private var closed = false
    private var quiescing = false
    private var readWantsWrite = false
    /// Streams whose body consumer is behind (back-pressure): the connection reads nothing more
    /// until each has called back.
    private var pausedStreams: Set<Int32> = []
    private var lastActivity: UInt64
    /// When the last stream ended (or the connection began): an HTTP/2 connection with no
    /// stream open is held to the header deadline, as an idle HTTP/1.1 connection is.
    private var idleSince: UInt64?

    /// The client connection preface (RFC 9113 §3.4).
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let maxConcurrentStreams: UInt32 = 100
    static let initialWindow: UInt32 = 1 << 20
    static let connectionWindow: Int32 = 16 << 20
    /// Bytes of one stream's header list (names, values, 32 per field) before it is reset.
    static let maxHeaderList = 64 << 10

    init(loop: EventLoop, io: ConnectionIO, token: UInt64, address: String, opened: UInt64) {
        self.loop = loop
        self.io = io
        self.token = token
        self.address = address
        self.opened = opened
        let now = Clock.microseconds()
        lastActivity = now
        idleSince = now
        loop.server.counters.http2Connections.add(1, ordering: .relaxed)
    }

    /// How the first bytes of a connection stand to the HTTP/2 client preface.
    enum PrefaceMatch {
        /// They begin it (at least its first 4 bytes, `PRI `): HTTP/2 with prior knowledge.
        case begun
        /// Fewer than 4 bytes, all of the preface so far: too early to tell.
        case undecided
        /// Not the preface.
        case absent
    }

    /// Whether `bytes` begin an HTTP/2 client preface.
    static func preface(in bytes: UnsafeRawBufferPointer) -> PrefaceMatch {
        let count = min(bytes.count, preface.count)
        for index in 0..<count where bytes[index] != preface[index] { return .absent }
        return bytes.count >= 4 ? .begun : .undecided
    }

    /// Starts the session: our SETTINGS, then `bytes` already read (the preface, perhaps more).
    func start(with bytes: UnsafeRawBufferPointer) {
        let user = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_server_new2(&session, HTTP2Callbacks.shared.callbacks, user, HTTP2Callbacks.shared.option) == 0 else {
            finishClose()
            return
        }
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: Self.maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: Self.initialWindow),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(Self.maxHeaderList)),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Self.connectionWindow)
        if bytes.count > 0, !feed(bytes) { return }
        setInterest(Epoll.input)
        readable()
    }

    // MARK: - Events

    func handle(events: UInt32) {
        if events & (Epoll.error | Epoll.hangUp) != 0 && events & Epoll.input == 0 {
            abort(.clientAbort)
            return
        }
        if events & Epoll.output != 0 {
            flush()
            if readWantsWrite, !closed {
                readWantsWrite = false
                readable()
            }
        }
        if !closed, events & Epoll.input != 0 { readable() }
    }

    func readAgain() {
        guard !closed else { return }
        readable()
    }

    private func readable() {
        var rounds = 0
        while !closed, pausedStreams.isEmpty, rounds < 16 {
            rounds += 1
            let buffer = loop.readBuffer
            let count = io.receive(buffer.baseAddress!, buffer.count)
            if count == 0 {
                abort(streams.isEmpty ? .sent : .clientAbort)
                return
            }
            if count == ConnectionIO.readWantsWrite {
                readWantsWrite = true
                setInterest(interest | Epoll.output)
                break
            }
            if count == ConnectionIO.wouldBlock { break }
            if count < 0 {
                abort(.readError)
                return
            }
            lastActivity = Clock.microseconds()
            guard feed(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count)) else { return }
            if count < buffer.count, !io.holdsBytes { break }
        }
        if !closed, rounds == 16, io.holdsBytes { loop.post(.read(token)) }
        flush()
    }

    /// Hands bytes to nghttp2, whose callbacks run the streams; false when the connection ended
    /// (a protocol error or a flood: nghttp2's GOAWAY goes out first when it made one).
    private func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let session else { return false }
        let result = nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        if result < 0 {
            if result == Int(NGHTTP2_ERR_FLOODED.rawValue) || result == Int(NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue) {
                server.log.info("HTTP/2 connection from \(address) closed: \(String(cString: nghttp2_strerror(Int32(result))))")
            }
            flush()
            abort(.error)
            return false
        }
        return true
    }

    func resume(stream id: Int32, _ render: () throws -> Response) {
        guard let stream = streams[id], stream.waiting, let lifecycle = stream.lifecycle else { return }
        stream.waiting = false
        answer(stream, lifecycle.resume(render))
        flush()
    }

    func streamWoken(stream id: Int32) {
        guard let stream = streams[id] else { return }
        stream.waker?.woken()
        guard stream.deferred, let session else { return }
        stream.deferred = false
        nghttp2_session_resume_data(session, id)
        flush()
    }

    var waitingForHeadSince: UInt64? { streams.isEmpty ? idleSince : nil }

    func quiesce() {
        guard !quiescing, let session else { return }
        quiescing = true
        // GOAWAY: streams already begun are finished; streams end their bodies (isStopping).
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                              NGHTTP2_NO_ERROR.rawValue, nil, 0)
        for stream in streams.values where stream.deferred {
            stream.deferred = false
            nghttp2_session_resume_data(session, stream.id)
        }
        flush()
    }

    func check(now: UInt64) {
        let configuration = server.configuration
        if let idleSince, streams.isEmpty, now >= idleSince + UInt64(configuration.headerTimeout * 1_000_000),
           loop.deadlinePassed(idleSince + UInt64(configuration.headerTimeout * 1_000_000), unread: { io.hasUnreadBytes }) {
            goAway()
            return
        }
        if configuration.minimumBodyRate > 0, let session {
            let grace = UInt64(configuration.headerTimeout * 1_000_000)
            for stream in streams.values where stream.hasBody && !stream.waiting && !stream.answered && stream.lifecycle != nil
                && !pausedStreams.contains(stream.id) {
                if now >= stream.bodyStarted + grace,
                   UInt64(stream.bodyBytes) * 1_000_000 < UInt64(configuration.minimumBodyRate) * (now - stream.bodyStarted) {
                    server.counters.slowBodies.add(1, ordering: .relaxed)
                    nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
                }
            }
        }
        let streaming = !pausedStreams.isEmpty || streams.values.contains { $0.deferred || $0.waiting }
        let idleDeadline = lastActivity + UInt64(configuration.idleTimeout) * 1_000_000
        if !streaming, now >= idleDeadline, loop.deadlinePassed(idleDeadline, unread: { io.hasUnreadBytes }) {
            server.counters.timedOut.add(1, ordering: .relaxed)
            abort(.timeout)
            return
        }
        flush()
    }

    /// No stream open for too long: GOAWAY, then close.
    private func goAway() {
        if let session {
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                                  NGHTTP2_NO_ERROR.rawValue, nil, 0)
        }
        flush()
        finishClose()
    }

    // MARK: - Streams (called from nghttp2's callbacks)

    fileprivate func beginStream(_ id: Int32) {
        let stream = Stream(id: id)
        streams[id] = stream
        idleSince = nil
    }

    /// One header field; false resets the stream (its header list is too large).
    fileprivate func field(_ id: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        guard let stream = streams[id] else { return true }
        stream.headerBytes += name.count + value.count + 32
        if stream.headerBytes > Self.maxHeaderList { return false }
        if stream.headComplete { return true }  // trailers: not used
        let value = String(decoding: value, as: UTF8.self)
        if name.first == UInt8(ascii: ":") {
            switch String(decoding: name, as: UTF8.self) {
            case ":method": stream.method = value
            case ":path": stream.path = value
            case ":authority": stream.authority = value
            default: break  // :scheme — checked by nghttp2
            }
            return true
        }
        let name = String(decoding: name, as: UTF8.self)
        if name == "cookie" {
            stream.cookies.append(value)  // RFC 9113 §8.2.3: joined with "; "
        } else {
            stream.headers.add(name, value)
        }
        return true
    }

    fileprivate func headersReceived(_ id: Int32, endStream: Bool) {
        guard let stream = streams[id] else { return }
        if stream.headComplete {
            if endStream { bodyComplete(stream) }  // trailers end the body
            return
        }
        stream.headComplete = true
        if !stream.cookies.isEmpty { stream.headers.add("cookie", stream.cookies.joined(separator: "; ")) }
        if stream.headers["Host"] == nil, !stream.authority.isEmpty { stream.headers.add("host", stream.authority) }
        let interim = InterimSink(loop: loop) { [weak self, weak stream] status, headers in
            guard let self, let stream, !closed, !stream.answered, let session else { return false }
            return submitHeaders(session, stream.id, status: status.code, headers: headers, endStream: false)
        }
        let lifecycle = RequestLifecycle(router: server.router, limits: server.limits, target: stream.path, remoteAddress: address,
                                         interim: interim)
        server.inFlight.add(1, ordering: .relaxed)
        stream.lifecycle = lifecycle
        stream.isHead = stream.method == "HEAD"
        stream.hasBody = !endStream
        stream.bodyStarted = Clock.microseconds()
        headActed(stream, lifecycle.headerComplete(method: stream.method, version: "HTTP/2.0", headers: stream.headers, bodyFollows: !endStream))
        if endStream { bodyComplete(stream) }
    }

    /// Carries out the action of a stream's head.
    private func headActed(_ stream: Stream, _ action: RequestLifecycle.Action) {
        switch action {
        case .proceed:
            if stream.hasBody, stream.lifecycle?.isRefused == false, let expect = stream.headers["Expect"],
               HTTPHeaders.equal(expect, "100-continue"), let session {
                _ = submitHeaders(session, stream.id, status: 100, headers: HTTPHeaders(), endStream: false)
            }
        case .respond(let response):
            if stream.hasBody { stream.discarding = true }
            answer(stream, response)
        case .wait(let later):
            if stream.hasBody { stream.discarding = true }
            startLater(stream, later)
        case .close:
            reset(stream)
        case .elsewhere:
            goAway(stream, atHead: true)
        }
    }

    /// The stream's next step runs on its route's executor. Away at its head, the connection
    /// reads no more (as for a paused body) and keeps the stream's DATA already read for it.
    private func goAway(_ stream: Stream, atHead: Bool) {
        guard let lifecycle = stream.lifecycle else { return }
        stream.waiting = true
        stream.awayAtHead = atHead
        if atHead, stream.hasBody { pausedStreams.insert(stream.id) }
        let loop = self.loop, token = self.token, id = stream.id, away = RequestLifecycle.Away(lifecycle)
        lifecycle.goAway { loop.post(.landed(token, stream: id, away)) }
    }

    func landed(stream id: Int32, _ lifecycle: RequestLifecycle) -> Bool {
        guard !closed, let stream = streams[id], stream.waiting, stream.lifecycle === lifecycle else { return false }
        stream.waiting = false
        let action = lifecycle.landed()
        if stream.awayAtHead {
            stream.awayAtHead = false
            stream.bodyStarted = Clock.microseconds()
            let paused = pausedStreams.remove(id) != nil  // before the held bytes, which may pause it again
            headActed(stream, action)
            if !stream.held.isEmpty {
                let held = stream.held
                stream.held = []
                held.withUnsafeBytes { data(id, $0) }
            }
            if stream.ended { bodyComplete(stream) }
            if paused, pausedStreams.isEmpty { readable() }
        } else {
            bodyActed(stream, action)
        }
        flush()
        return true
    }

    fileprivate func data(_ id: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let stream = streams[id], let lifecycle = stream.lifecycle, !stream.discarding, !stream.answered else { return }
        if stream.waiting, stream.awayAtHead {
            stream.held.append(contentsOf: bytes)
            return
        }
        stream.bodyBytes += bytes.count
        switch lifecycle.receive(bytes) {
        case .proceed:
            let loop = self.loop, token = self.token
            if lifecycle.bodyMustWait(then: { loop.post(.bodyReady(token, stream: id)) }) { pausedStreams.insert(id) }
        case .respond(let response):
            stream.discarding = true
            answer(stream, response)
        case .close, .wait, .elsewhere: reset(stream)
        }
    }

    func bodyReady(stream id: Int32) {
        guard pausedStreams.remove(id) != nil, pausedStreams.isEmpty, !closed else { return }
        lastActivity = Clock.microseconds()
        readable()
    }

    fileprivate func bodyEnded(_ id: Int32) {
        guard let stream = streams[id] else { return }
        bodyComplete(stream)
    }

    private func bodyComplete(_ stream: Stream) {
        stream.ended = true
        guard let lifecycle = stream.lifecycle, !stream.discarding, !stream.answered, !stream.waiting else { return }
        bodyActed(stream, lifecycle.bodyComplete())
    }

    /// Carries out the action of a stream's end.
    private func bodyActed(_ stream: Stream, _ action: RequestLifecycle.Action) {
        switch action {
        case .respond(let response): answer(stream, response)
        case .wait(let later): startLater(stream, later)
        case .close: reset(stream)
        case .proceed: break
        case .elsewhere: goAway(stream, atHead: false)
        }
    }

    private func startLater(_ stream: Stream, _ later: Later) {
        stream.waiting = true
        let loop = self.loop
        let token = self.token
        let id = stream.id
        later.start { render in loop.post(.resume(token, stream: id, render)) }
    }

    private func reset(_ stream: Stream) {
        guard let session else { return }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_INTERNAL_ERROR.rawValue)
    }

    /// A frame went out; the one that ends a stream's answer completes its request.
    fileprivate func frameSent(_ id: Int32, endStream: Bool) {
        guard endStream, let stream = streams[id], stream.answered else { return }
        complete(stream, outcome: .sent)
        // Answered before its body ended (a refusal): the client may stop sending (RFC 9113 §8.1).
        if stream.discarding, let session {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_NO_ERROR.rawValue)
        }
    }

    fileprivate func streamClosed(_ id: Int32) {
        if pausedStreams.remove(id) != nil, pausedStreams.isEmpty { loop.post(.read(token)) }
        guard let stream = streams.removeValue(forKey: id) else { return }
        complete(stream, outcome: .clientAbort)
        release(stream)
        if streams.isEmpty { idleSince = Clock.microseconds() }
    }

    private func complete(_ stream: Stream, outcome: CompletedExchange.Outcome) {
        guard !stream.completed, let lifecycle = stream.lifecycle else { return }
        stream.completed = true
        let sent = outcome == .sent
        lifecycle.completed(status: sent || stream.answered ? stream.status : 0, bytesSent: sent ? stream.bodyLength : stream.position,
                            outcome: outcome)
        server.inFlight.subtract(1, ordering: .releasing)
    }

    /// What a stream still holds: a file, a streaming body, its waker.
    private func release(_ stream: Stream) {
        switch stream.source {
        case .file(let fd, _, _): close(fd)
        case .stream(let body): body.finish()
        default: break
        }
        stream.source = .none
        stream.waker?.close()
        stream.waker = nil
    }

    // MARK: - Answers

    private func answer(_ stream: Stream, _ response: Response) {
        guard let session, !stream.answered else { return }
        stream.answered = true
        let status = response.status.code
        stream.status = status
        let bodyAllowed = status >= 200 && status != 204 && status != 304
        var length: UInt64?
        switch response.payload {
        case .bytes:
            length = UInt64(response.body.count)
            if bodyAllowed, !stream.isHead, !response.body.isEmpty { stream.source = .bytes(response.body) }
        case .file(let fd, let offset, let count):
            length = count
            if bodyAllowed, !stream.isHead, count > 0 { stream.source = .file(fd: fd, offset: Int(offset), remaining: Int(count)) } else { close(fd) }
        case .stream(let body, let count, _):
            length = count
            if bodyAllowed, !stream.isHead {
                stream.source = .stream(body)
                let waker = ConnectionWaker(loop: loop, token: token, stream: stream.id)
                stream.waker = waker
                body.start(waker: waker)
            } else {
                body.finish()
            }
        }
        stream.bodyLength = Int(length ?? 0)
        var block = HeaderBlock(status: status, headers: response.headers)
        block.append(Self.dateName, loop.date.value.utf8)
        block.append(Self.noSniffName, Self.noSniff)
        if bodyAllowed, let length {
            var digits: [UInt8] = []
            ResponseHead.appendDecimal(length, to: &digits)
            block.append(Self.contentLengthName, digits)
        }
        if case .none = stream.source {
            _ = block.submit(session, stream.id, provider: nil)
        } else {
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: http2ReadBody)
            _ = block.submit(session, stream.id, provider: &provider)
        }
    }

    private static let dateName = Array("date".utf8), noSniffName = Array("x-content-type-options".utf8)
    private static let noSniff = Array("nosniff".utf8), contentLengthName = Array("content-length".utf8)

    /// Fields HTTP/2 forbids (RFC 9113 §8.2.2).
    @inline(__always) static func connectionSpecific(_ name: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 7: HTTPHeaders.equal(name, "upgrade")
        case 10: HTTPHeaders.equal(name, "keep-alive")
        case 16: HTTPHeaders.equal(name, "proxy-connection")
        default: false
        }
    }

    private func submitHeaders(_ session: OpaquePointer, _ id: Int32, status: Int, headers: HTTPHeaders, endStream: Bool) -> Bool {
        HeaderBlock(status: status, headers: headers).submit(session, id, provider: nil, interim: true)
    }

    /// `:status` and the fields of an answer, names lowercased, laid end to end in one buffer
    /// that nghttp2 copies from (HPACK), with no string per field.
    private struct HeaderBlock {
        var bytes: [UInt8] = []
        /// name start, name length, value start, value length.
        var spans: [(Int, Int, Int, Int)] = []

        /// `:status` and the handler's fields but those the engine owns or HTTP/2 forbids.
        init(status: Int, headers: HTTPHeaders) {
            bytes.reserveCapacity(256)
            spans.reserveCapacity(headers.count + 4)
            var digits: [UInt8] = []
            ResponseHead.appendDecimal(status, to: &digits)
            append(HeaderBlock.statusName, digits)
            headers.forEachField { name, value in
                if !ResponseHead.engineOwned(name), !HTTP2Connection.connectionSpecific(name) {
                    let nameStart = bytes.count
                    for byte in name { bytes.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) }
                    let valueStart = bytes.count
                    bytes.append(contentsOf: value)
                    spans.append((nameStart, valueStart - nameStart, valueStart, bytes.count - valueStart))
                }
                return true
            }
        }

        static let statusName = Array(":status".utf8)

        /// Appends a field whose name is lowercase already.
        mutating func append(_ name: [UInt8], _ value: some Sequence<UInt8>) {
            let nameStart = bytes.count
            bytes.append(contentsOf: name)
            let valueStart = bytes.count
            bytes.append(contentsOf: value)
            spans.append((nameStart, name.count, valueStart, bytes.count - valueStart))
        }

        /// Submits the block: a final answer (with its body's provider), or a 1xx.
        consuming func submit(_ session: OpaquePointer, _ id: Int32, provider: UnsafePointer<nghttp2_data_provider>?, interim: Bool = false) -> Bool {
            let spans = spans
            return bytes.withUnsafeMutableBufferPointer { buffer -> Bool in
                let base = buffer.baseAddress!
                var list = spans.map { span in
                    nghttp2_nv(name: base + span.0, value: base + span.2, namelen: span.1, valuelen: span.3,
                               flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
                }
                if interim {
                    return nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, nil, &list, list.count, nil) >= 0
                }
                return nghttp2_submit_response(session, id, &list, list.count, provider) == 0
            }
        }
    }

    /// nghttp2 asks for up to `length` bytes of a stream's answer.
    fileprivate func readBody(_ id: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                              flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let stream = streams[id] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let eof = NGHTTP2_DATA_FLAG_EOF.rawValue
        switch stream.source {
        case .none:
            flags.pointee |= eof
            return 0
        case .bytes(let body):
            let count = min(length, body.count - stream.position)
            body.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + stream.position, byteCount: count)
            }
            stream.position += count
            if stream.position == body.count { flags.pointee |= eof }
            return count
        case .file(let fd, let offset, let total):
            let count = pread(fd, buffer, min(length, total - stream.position), off_t(offset + stream.position))
            guard count > 0 else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }  // shorter than announced
            stream.position += count
            if stream.position >= total { flags.pointee |= eof }
            return count
        case .stream(let body):
            if server.isStopping {
                flags.pointee |= eof
                return 0
            }
            switch body.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: length), at: UInt64(stream.position)) {
            case .bytes(let count) where count > 0:
                stream.position += count
                return count
            case .bytes, .wait:
                stream.deferred = true
                return Int(NGHTTP2_ERR_DEFERRED.rawValue)
            case .end:
                flags.pointee |= eof
                return 0
            case .failed:
                return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
            }
        }
    }

    // MARK: - Writing

    private func flush() {
        guard !closed, let session else { return }
        while true {
            if outputSent == output.count {
                output.removeAll()  // an idle connection keeps no buffer
                outputSent = 0
                while output.count < 64 << 10 {
                    var data: UnsafePointer<UInt8>?
                    let count = nghttp2_session_mem_send(session, &data)
                    if count < 0 {
                        abort(.error)
                        return
                    }
                    if count == 0 { break }
                    output.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
                }
                if output.isEmpty { break }
            }
            let written = output.withUnsafeBytes { bytes in io.transmit(bytes.baseAddress! + outputSent, bytes.count - outputSent) }
            if written == ConnectionIO.wouldBlock {
                setInterest((pausedStreams.isEmpty ? Epoll.input : 0) | Epoll.output)
                return
            }
            if written < 0 {
                abort(.clientAbort)
                return
            }
            lastActivity = Clock.microseconds()
            outputSent += written
        }
        let input = pausedStreams.isEmpty ? Epoll.input : 0
        setInterest(readWantsWrite ? input | Epoll.output : input)
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            finishClose()
        } else if quiescing, streams.isEmpty {
            finishClose()
        }
    }

    private func setInterest(_ events: UInt32) {
        guard !closed, events != interest else { return }
        interest = events
        loop.setInterest(io.fd, token: token, events)
    }

    // MARK: - The end

    func abort(_ outcome: CompletedExchange.Outcome) {
        guard !closed else { return }
        for stream in streams.values {
            complete(stream, outcome: outcome)
            release(stream)
        }
        streams = [:]
        finishClose()
    }

    private func finishClose() {
        guard !closed else { return }
        for stream in streams.values {
            complete(stream, outcome: .clientAbort)
            release(stream)
        }
        streams = [:]
        closed = true
        server.counters.http2Connections.subtract(1, ordering: .relaxed)
        if let session {
            self.session = nil
            nghttp2_session_del(session)
        }
        io.close()
        loop.forget(self)
    }
}

// MARK: - nghttp2's callbacks

/// The callbacks and options every HTTP/2 session shares, made once.
final class HTTP2Callbacks: @unchecked Sendable {
    static let shared = HTTP2Callbacks()
    let callbacks: OpaquePointer
    let option: OpaquePointer

    private init() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        self.callbacks = callbacks!
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, { _, frame, user in
            guard let frame, let user, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
                  frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
            HTTP2Connection.from(user).beginStream(frame.pointee.hd.stream_id)
            return 0
        })
        nghttp2_session_callbacks_set_on_header_callback(callbacks, { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let user, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            let accepted = HTTP2Connection.from(user).field(frame.pointee.hd.stream_id,
                                                            name: UnsafeRawBufferPointer(start: name, count: nameLength),
                                                            value: UnsafeRawBufferPointer(start: value, count: valueLength))
            return accepted ? 0 : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        })
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, { _, frame, user in
            guard let frame, let user else { return 0 }
            let connection = HTTP2Connection.from(user)
            let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            switch UInt32(frame.pointee.hd.type) {
            case NGHTTP2_HEADERS.rawValue: connection.headersReceived(frame.pointee.hd.stream_id, endStream: endStream)
            case NGHTTP2_DATA.rawValue where endStream: connection.bodyEnded(frame.pointee.hd.stream_id)
            default: break
            }
            return 0
        })
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, { _, _, id, data, length, user in
            guard let user else { return 0 }
            HTTP2Connection.from(user).data(id, UnsafeRawBufferPointer(start: data, count: length))
            return 0
        })
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, { _, frame, user in
            guard let frame, let user else { return 0 }
            let type = UInt32(frame.pointee.hd.type)
            guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue else { return 0 }
            HTTP2Connection.from(user).frameSent(frame.pointee.hd.stream_id,
                                                 endStream: frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0)
            return 0
        })
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, { _, id, _, user in
            guard let user else { return 0 }
            HTTP2Connection.from(user).streamClosed(id)
            return 0
        })

        var option: OpaquePointer?
        nghttp2_option_new(&option)
        self.option = option!
        // Protections (the defaults of nghttp2 1.57+, set here explicitly): at most 1,000
        // queued acknowledgements (SETTINGS/PING floods), rapid reset (CVE-2023-44487) at a
        // burst of 1,000 then 33 streams a second, 8 CONTINUATION frames per header block.
        nghttp2_option_set_max_outbound_ack(option, 1000)
        nghttp2_option_set_stream_reset_rate_limit(option, 1000, 33)
        nghttp2_option_set_max_continuations(option, 8)
        nghttp2_option_set_max_settings(option, 32)
    }
}

/// nghttp2's data source callback: a stream's answer body.
private let http2ReadBody: nghttp2_data_source_read_callback = { _, id, buffer, length, flags, _, user in
    guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
    return HTTP2Connection.from(user).readBody(id, into: buffer, length: length, flags: flags)
}

extension HTTP2Connection {
    fileprivate static func from(_ user: UnsafeMutableRawPointer) -> HTTP2Connection {
        Unmanaged<HTTP2Connection>.fromOpaque(user).takeUnretainedValue()
    }
}
