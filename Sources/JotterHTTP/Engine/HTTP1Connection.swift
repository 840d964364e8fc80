import CEngine
import Glibc

/// One HTTP/1.1 connection on its event loop: reads requests with `RequestParser`, runs each
/// through its `RequestLifecycle`, and writes the answers in request order (pipelining).
///
/// Reading stops while a request waits for a later reply, while a streaming answer is being
/// sent, and while more than `outputHighWater` bytes of answers wait for the client to read
/// them; bytes already read are kept (`stash`) and parsed when the connection may go on.
///
/// On an HTTPS listener every read and write goes through the connection's OpenSSL session
/// (`tls`) once its handshake is done; files are then read into the loop's stream buffer and
/// written through it, as TLS cannot `sendfile`. Loop thread only.
final class HTTP1Connection: LoopConnection {
    /// One answer being written.
    struct Outgoing {
        var bytes: [UInt8]
        /// The body array of a bytes response, written after `bytes` in the same `writev`.
        var body: [UInt8]
        var sent = 0
        var file: (fd: Int32, offset: Int, remaining: Int)?
        var stream: StreamState?
        let lifecycle: RequestLifecycle?
        let status: Int
        var bodyBytes = 0
        let closeAfter: Bool
    }

    final class StreamState {
        let body: any StreamingBody
        let chunked: Bool
        let blockSize: Int
        var position: UInt64 = 0
        /// Bytes read from the body that the socket did not take yet.
        var pending: [UInt8] = []
        var pendingSent = 0
        var waiting = false
        var ended = false
        var finished = false
        init(body: any StreamingBody, chunked: Bool, blockSize: Int) {
            self.body = body
            self.chunked = chunked
            self.blockSize = blockSize
        }
    }

    unowned let loop: EventLoop
    private var io: ConnectionIO
    var fd: Int32 { io.fd }
    let token: UInt64
    let address: String
    let opened: UInt64
    private var server: HTTPServer { loop.server }
    private let parser: RequestParser
    /// Unparsed bytes kept between reads: a head in progress (from offset 0) or what followed
    /// a request the connection must answer first.
    private var stash: UnsafeMutableRawPointer?
    private var stashCapacity = 0
    private var stashStart = 0
    private var stashEnd = 0
    /// The stash holds a head in progress whose spans point into it.
    private var stashHoldsHead = false
    /// The request being read or awaited, until its answer is queued.
    private var request: RequestLifecycle?
    /// The request whose interim responses may still be sent (until its answer is queued).
    private var currentRequest: RequestLifecycle?
    private var requestIsHead = false
    private var requestHTTP10 = false
    private var requestHasBody = false
    /// A later reply is awaited for `request`.
    private var waiting = false
    /// The answer was queued before the body was read: what follows is dropped, then the
    /// connection closes.
    private var discarding = false
    private var queue: [Outgoing] = []
    private var queuedBytes = 0
    private var interest: UInt32 = Epoll.input
    private var closed = false
    /// After the last answer of a connection that closes: the write side is shut, reads are
    /// dropped until the client closes or this time passes.
    private var lingerUntil: UInt64?
    /// Bytes dropped while lingering before the connection is closed anyway (a client still
    /// sending a refused body is not read to its end).
    private var lingerBudget = 256 << 10
    /// When the connection began waiting for a request's header section (opened, or the last
    /// request ended); nil while a request is being read or served.
    private(set) var waitingForHeadSince: UInt64?
    private var bodyStarted: UInt64 = 0
    /// The body's consumer is behind (`RequestLifecycle.bodyMustWait`): nothing more is read
    /// until it calls back; since when.
    private var bodyPausedSince: UInt64?
    private var bodyBytes = 0
    private var lastActivity: UInt64
    private var waker: ConnectionWaker?
    private var handshaking: Bool
    private var handshakeStarted = false
    /// The last TLS read could not go on until the socket takes bytes (a record OpenSSL must send).
    private var readWantsWrite = false
    /// Nothing but the start of the HTTP/2 preface has been read: `PRI * HTTP/2.0…` makes this
    /// an HTTP/2 connection with prior knowledge (RFC 9113 §3.3).
    private var mayBeHTTP2 = true

    static let outputHighWater = 1 << 20
    static let stashHeadCapacity = 16 << 10

    init(loop: EventLoop, fd: Int32, token: UInt64, address: String, tls: UnsafeMutableRawPointer? = nil) {
        self.loop = loop
        io = ConnectionIO(fd: fd, tls: tls)
        self.token = token
        self.address = address
        handshaking = tls != nil
        let now = Clock.microseconds()
        opened = now
        lastActivity = now
        waitingForHeadSince = now
        parser = RequestParser(maxTarget: FramingCheck.maxTargetLength, maxHead: FramingCheck.maxParsedHead)
    }

    deinit { stash?.deallocate() }

    // MARK: - Events

    func handle(events: UInt32) {
        if events & (Epoll.error | Epoll.hangUp) != 0 && events & Epoll.input == 0 {
            abort(.clientAbort)
            return
        }
        if handshaking {
            continueHandshake()
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

    /// The TLS handshake, as far as the socket allows. A client that sends plain HTTP to the
    /// HTTPS port gets a plain `400` saying so.
    private func continueHandshake() {
        guard let tls = io.tls else { return }
        if lingerUntil != nil {
            readable()
            return
        }
        if !handshakeStarted {
            // The first byte of a TLS connection starts a handshake record (22); a letter starts a
            // plain HTTP request line.
            var first: UInt8 = 0
            let peeked = recv(fd, &first, 1, Int32(MSG_PEEK))
            if peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EINTR) {
                finishClose()  // closed (or failed) before a byte: nothing was asked
                return
            }
            if peeked < 0 { return }  // nothing to read yet
            if first != 0x16 {
                jotter_tls_free(tls)
                io.tls = nil
                handshaking = false
                refuseMalformed(HTTPError(.badRequest, detail: "this port serves HTTPS: send the request to https://", closesConnection: true))
                return
            }
            handshakeStarted = true
        }
        switch jotter_tls_handshake(tls) {
        case 0:
            handshaking = false
            lastActivity = Clock.microseconds()
            if io.negotiatedProtocol == "h2" {
                handOff(bytes: UnsafeRawBufferPointer(start: nil, count: 0))
                return
            }
            setInterest(Epoll.input)
            readable()
        case Int(JOTTER_TLS_WANT_READ):
            setInterest(Epoll.input)
        case Int(JOTTER_TLS_WANT_WRITE):
            setInterest(Epoll.output)
        default:
            // A failed or abandoned handshake: nothing was asked, nothing is logged as a request.
            finishClose()
        }
    }

    /// A later reply is ready.
    func resume(stream: Int32, _ render: () throws -> Response) {
        guard waiting, let request else { return }
        waiting = false
        let response = request.resume(render)
        answer(response)
        continueInput()
    }

    /// The body's consumer caught up: what was kept is parsed, and reading resumes. The pause
    /// does not count against the body's minimum rate, nor as idle time.
    func bodyReady(stream: Int32) {
        guard let since = bodyPausedSince else { return }
        bodyPausedSince = nil
        let now = Clock.microseconds()
        bodyStarted += now - since
        lastActivity = now
        continueInput()
    }

    /// A streaming body has something for us.
    func streamWoken(stream: Int32) {
        waker?.woken()
        guard let stream = queue.first?.stream, stream.waiting else { return }
        stream.waiting = false
        flush()
    }

    /// The server stops: a connection waiting for a request closes; streams end.
    func quiesce() {
        if request == nil, queue.isEmpty, !stashHoldsHead {
            abort(.shutdown)
            return
        }
        if let stream = queue.first?.stream, stream.waiting {
            stream.waiting = false
            flush()
        }
    }

    /// The sweep: deadlines.
    func check(now: UInt64) {
        let configuration = server.configuration
        if let lingerUntil {
            if now >= lingerUntil { finishClose() }
            return
        }
        if let since = waitingForHeadSince, queue.isEmpty, now >= since + UInt64(configuration.headerTimeout * 1_000_000),
           loop.deadlinePassed(since + UInt64(configuration.headerTimeout * 1_000_000), unread: { io.hasUnreadBytes }) {
            server.counters.timedOut.add(1, ordering: .relaxed)
            abort(.timeout)
            return
        }
        if bodyPausedSince != nil { return }  // the server is behind, not the client
        if request != nil, !waiting, requestHasBody, configuration.minimumBodyRate > 0 {
            let grace = UInt64(configuration.headerTimeout * 1_000_000)
            if now >= bodyStarted + grace, UInt64(bodyBytes) * 1_000_000 < UInt64(configuration.minimumBodyRate) * (now - bodyStarted) {
                server.counters.slowBodies.add(1, ordering: .relaxed)
                abort(.timeout)
                return
            }
        }
        let streamWaiting = queue.first?.stream?.waiting == true
        let idleDeadline = lastActivity + UInt64(configuration.idleTimeout) * 1_000_000
        if !waiting, !streamWaiting, now >= idleDeadline, loop.deadlinePassed(idleDeadline, unread: { io.hasUnreadBytes }) {
            abort(.timeout)
        }
    }

    // MARK: - Reading

    private func readable() {
        if lingerUntil != nil {
            // What a closing client still sends is dropped unread (TLS records included).
            let count = recv(fd, loop.readBuffer.baseAddress, loop.readBuffer.count, 0)
            if count > 0 { lingerBudget -= count }
            if count == 0 || lingerBudget <= 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { finishClose() }
            return
        }
        var rounds = 0
        while !closed, mayParse, rounds < 16 {
            rounds += 1
            if stashEnd > stashStart, !stashHoldsHead {
                processStash()
                continue
            }
            let target: UnsafeMutableRawPointer
            let room: Int
            if stashHoldsHead {
                ensureStash(capacity: Self.stashHeadCapacity)
                target = stash! + stashEnd
                room = stashCapacity - stashEnd
                if room == 0 {
                    refuseMalformed(HTTPError(.requestHeaderFieldsTooLarge, detail: "the request's header section is too large", closesConnection: true))
                    return
                }
            } else {
                target = loop.readBuffer.baseAddress!
                room = loop.readBuffer.count
            }
            let count = io.receive(target, room)
            if count == 0 {
                peerClosed()
                return
            }
            if count == ConnectionIO.readWantsWrite {
                readWantsWrite = true
                setInterest(interest | Epoll.output)
                return
            }
            if count == ConnectionIO.wouldBlock { return }
            if count < 0 {
                abort(.readError)
                return
            }
            lastActivity = Clock.microseconds()
            if discarding { continue }
            if mayBeHTTP2 {
                let bytes = stashHoldsHead ? UnsafeRawBufferPointer(start: stash!, count: stashEnd + count)
                    : UnsafeRawBufferPointer(start: target, count: count)
                if HTTP2Connection.startsWithPreface(bytes) {
                    handOff(bytes: bytes)
                    return
                }
                mayBeHTTP2 = false
            }
            if stashHoldsHead {
                let from = stashEnd
                stashEnd += count
                process(UnsafeRawPointer(stash!), from: from, to: stashEnd, inStash: true)
            } else {
                process(UnsafeRawPointer(loop.readBuffer.baseAddress!), from: 0, to: count, inStash: false)
            }
            if count < room, !tlsHoldsBytes { return }
        }
        if tlsHoldsBytes, !closed, mayParse { loop.post(.read(token)) }
        updateInterest()
    }

    /// OpenSSL holds decrypted bytes the socket will not announce again.
    private var tlsHoldsBytes: Bool { io.holdsBytes }

    /// Reading again without an event: bytes OpenSSL holds (`EventLoop.Task.read`).
    func readAgain() {
        guard !closed, !handshaking else { return }
        readable()
    }

    /// Whether the next request may be parsed now.
    private var mayParse: Bool {
        !waiting && !discarding && bodyPausedSince == nil && queue.first?.stream == nil && queuedBytes < Self.outputHighWater
    }

    private func processStash() {
        let from = stashStart
        process(UnsafeRawPointer(stash!), from: from, to: stashEnd, inStash: true)
    }

    /// Parses `base[from..<to]`; keeps what could not be parsed yet.
    private func process(_ base: UnsafeRawPointer, from: Int, to: Int, inStash: Bool) {
        // An answer written from inside the parse must not parse again (the stash it would read
        // is the one being parsed): the parse goes on by itself once the answer is out.
        parsing = true
        defer { parsing = false }
        let outcome = parser.execute(base, from: from, to: to) { event in
            switch event {
            case .head: headComplete(base)
            case .body(let offset, let count): bodyReceived(UnsafeRawBufferPointer(start: base + offset, count: count))
            case .end: requestComplete()
            }
            return !closed && (mayParse || requestInBody)
        }
        guard !closed else { return }
        switch outcome {
        case .failed(let error):
            if let line = parser.unknownMethod(base, to: to) {
                refuseMalformed(server.router.refusal(method: line.method, target: line.target) ?? error, target: line.target)
            } else {
                refuseMalformed(error)
            }
        case .paused(let position):
            keep(base, from: position, to: to, inStash: inStash, head: false)
        case .consumed:
            if parser.inHead {
                keep(base, from: parser.messageStart, to: to, inStash: inStash, head: true)
            } else {
                stashStart = 0
                stashEnd = 0
                stashHoldsHead = false
                releaseStashIfLarge()
            }
        }
    }

    private var requestInBody: Bool { request != nil && !waiting && requestHasBody && !discarding && bodyPausedSince == nil }

    /// Keeps `base[from..<to]` at the front of the stash; `head`: they are a head in progress.
    private func keep(_ base: UnsafeRawPointer, from: Int, to: Int, inStash: Bool, head: Bool) {
        let count = to - from
        if inStash {
            if head || from > 0 {
                memmove(stash!, stash! + from, count)
            }
        } else {
            ensureStash(capacity: max(count, head ? Self.stashHeadCapacity : count))
            memcpy(stash!, base + from, count)
        }
        if head { parser.rebase(from) }
        stashStart = 0
        stashEnd = count
        stashHoldsHead = head
    }

    private func ensureStash(capacity: Int) {
        guard stashCapacity < capacity else { return }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        if let stash {
            if stashEnd > stashStart { memcpy(grown + stashStart, stash + stashStart, stashEnd - stashStart) }
            stash.deallocate()
        }
        stash = grown
        stashCapacity = capacity
    }

    private func releaseStashIfLarge() {
        // An idle connection keeps no buffer.
        if let stash, stashEnd == 0 {
            stash.deallocate()
            self.stash = nil
            stashCapacity = 0
        }
    }

    /// Parsing may go on again: what was kept is parsed, and reading resumes.
    private func continueInput() {
        guard !closed else { return }
        if !parsing, mayParse, stashEnd > stashStart, !stashHoldsHead {
            processStash()
        }
        guard !closed else { return }
        // epoll is level-triggered: bytes waiting in the socket are reported again; those
        // OpenSSL already decrypted are not.
        if mayParse, tlsHoldsBytes { loop.post(.read(token)) }
        updateInterest()
    }

    // MARK: - Requests

    private func headComplete(_ base: UnsafeRawPointer) {
        mayBeHTTP2 = false
        let parsed = parser.head(base)
        let http10 = parsed.version == "HTTP/1.0"
        // RFC 9110 §15.2: no 1xx to an HTTP/1.0 client.
        let interim = http10 ? nil : InterimSink(loop: loop) { [weak self] status, headers in
            guard let self, !closed, request != nil, request === currentRequest else { return false }
            queueRaw(ResponseHead.interim(status, headers: headers))
            return true
        }
        let lifecycle = RequestLifecycle(router: server.router, limits: server.limits, target: parsed.target, remoteAddress: address,
                                         interim: interim)
        currentRequest = lifecycle
        server.inFlight.add(1, ordering: .relaxed)
        request = lifecycle
        waitingForHeadSince = nil
        requestIsHead = parsed.method == "HEAD"
        requestHTTP10 = parsed.version == "HTTP/1.0"
        requestHasBody = parser.hasBody
        bodyStarted = Clock.microseconds()
        bodyBytes = 0
        // Known at the head: a request that ends there may be answered before its end is parsed.
        if !parser.keepAlive { closeAfterAnswers = true }
        headActed(lifecycle.headerComplete(method: parsed.method, version: parsed.version, headers: parsed.headers), lifecycle)
    }

    /// Carries out the action of a request's head.
    private func headActed(_ action: RequestLifecycle.Action, _ lifecycle: RequestLifecycle) {
        switch action {
        case .proceed:
            if requestHasBody, !requestHTTP10, !lifecycle.isRefused,
               let expect = lifecycle.head?.headers["Expect"], HTTPHeaders.equal(expect, "100-continue") {
                queueRaw(ResponseHead.interim(.continue, headers: HTTPHeaders()))
            }
        case .respond(let response):
            if requestHasBody { discarding = true }
            answer(response)
        case .close:
            abort(.error)
        case .wait(let later):
            if requestHasBody { discarding = true }
            startLater(later)
        case .elsewhere:
            goAway(lifecycle, atHead: true)
        }
    }

    private func bodyReceived(_ chunk: UnsafeRawBufferPointer) {
        guard let request, !discarding else { return }
        bodyBytes += chunk.count
        switch request.receive(chunk) {
        case .proceed:
            let loop = self.loop, token = self.token
            if request.bodyMustWait(then: { loop.post(.bodyReady(token, stream: 0)) }) {
                bodyPausedSince = Clock.microseconds()
            }
        case .respond(let response):
            discarding = true
            answer(response)
        case .close, .wait, .elsewhere: abort(.error)
        }
    }

    private func requestComplete() {
        guard let request, !discarding else { return }
        if !parser.keepAlive { closeAfterAnswers = true }
        bodyActed(request.bodyComplete(), request)
    }

    /// Carries out the action of a request's end.
    private func bodyActed(_ action: RequestLifecycle.Action, _ lifecycle: RequestLifecycle) {
        switch action {
        case .respond(let response): answer(response)
        case .wait(let later): startLater(later)
        case .close: abort(.error)
        case .proceed: break
        case .elsewhere: goAway(lifecycle, atHead: false)
        }
    }

    private var closeAfterAnswers = false
    /// The step away (`waiting`) began at the request's head, not at its end.
    private var awayAtHead = false

    /// The request's next step runs on its route's executor: nothing more of it is read meanwhile.
    private func goAway(_ lifecycle: RequestLifecycle, atHead: Bool) {
        waiting = true
        awayAtHead = atHead
        let loop = self.loop, token = self.token, away = RequestLifecycle.Away(lifecycle)
        lifecycle.goAway { loop.post(.landed(token, stream: 0, away)) }
    }

    /// Back from the executor: its action, where the request was, and reading goes on.
    func landed(stream: Int32, _ lifecycle: RequestLifecycle) -> Bool {
        guard waiting, !closed, request === lifecycle else { return false }
        waiting = false
        let action = lifecycle.landed()
        if awayAtHead {
            // The time away is the server's: the body's rate counts from now.
            bodyStarted = Clock.microseconds()
            lastActivity = bodyStarted
            if discarding, case .proceed = action {
                abort(.clientAbort)  // the client went away before its body could be read
                return true
            }
            headActed(action, lifecycle)
        } else {
            bodyActed(action, lifecycle)
        }
        continueInput()
        return true
    }

    private func startLater(_ later: Later) {
        waiting = true
        let loop = self.loop
        let token = self.token
        later.start { render in loop.post(.resume(token, stream: 0, render)) }
    }

    /// A head that could not be parsed: answered through the router's middleware; the
    /// connection closes after it.
    private func refuseMalformed(_ error: HTTPError, target: String = "") {
        let lifecycle = request ?? {
            server.inFlight.add(1, ordering: .relaxed)
            return RequestLifecycle(router: server.router, limits: server.limits, target: target, remoteAddress: address)
        }()
        request = lifecycle
        waitingForHeadSince = nil
        discarding = true
        waiting = false
        if case .respond(let response) = lifecycle.malformed(error) {
            answer(response)
        } else {
            abort(.error)
        }
    }

    // MARK: - Answers

    /// Queues the answer of `request` and starts writing it.
    private func answer(_ original: Response) {
        guard let lifecycle = request else { return }
        request = nil
        let response = original
        let closing = closeAfterAnswers || discarding || loop.quiescing || server.isStopping
            || response.headers["Connection"].map { HTTPHeaders.equal($0, "close") } == true
        let status = response.status.code
        let bodyAllowed = status >= 200 && status != 204 && status != 304
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + (response.payload.isBytes && !requestIsHead ? response.body.count : 0))
        var outgoing: Outgoing
        switch response.payload {
        case .bytes:
            ResponseHead.write(response, framing: bodyAllowed ? .length(UInt64(response.body.count)) : .none, keepAlive: !closing,
                               http10: requestHTTP10, date: loop.date, into: &bytes)
            let body = bodyAllowed && !requestIsHead ? response.body : []
            // A small body goes in the head's array; a large one is written from its own.
            var separate: [UInt8] = []
            if body.count <= 4096 { bytes.append(contentsOf: body) } else { separate = body }
            outgoing = Outgoing(bytes: bytes, body: separate, lifecycle: lifecycle, status: status, bodyBytes: body.count, closeAfter: closing)
        case .file(let fileFD, let offset, let length):
            ResponseHead.write(response, framing: .length(length), keepAlive: !closing, http10: requestHTTP10, date: loop.date, into: &bytes)
            outgoing = Outgoing(bytes: bytes, body: [], lifecycle: lifecycle, status: status, bodyBytes: Int(length), closeAfter: closing)
            if requestIsHead || length == 0 { close(fileFD) } else { outgoing.file = (fileFD, Int(offset), Int(length)) }
        case .stream(let body, let length, let blockSize):
            let chunked = length == nil && !requestHTTP10
            let closes = closing || (length == nil && requestHTTP10)
            let framing: ResponseHead.Framing = !bodyAllowed ? .none : length.map { .length($0) } ?? (chunked ? .chunked : .closeDelimited)
            ResponseHead.write(response, framing: framing, keepAlive: !closes, http10: requestHTTP10, date: loop.date, into: &bytes)
            outgoing = Outgoing(bytes: bytes, body: [], lifecycle: lifecycle, status: status, closeAfter: closes)
            if requestIsHead || !bodyAllowed {
                body.finish()
            } else {
                let state = StreamState(body: body, chunked: chunked, blockSize: min(blockSize, 64 << 10))
                outgoing.stream = state
                let waker = ConnectionWaker(loop: loop, token: token, stream: 0)
                self.waker = waker
                body.start(waker: waker)
            }
        }
        if closing { closeAfterAnswers = true }
        queuedBytes += outgoing.bytes.count + outgoing.body.count
        queue.append(outgoing)
        flush()
    }

    /// Bytes that are not an answer of their own (an interim response).
    private func queueRaw(_ bytes: [UInt8]) {
        queuedBytes += bytes.count
        queue.append(Outgoing(bytes: bytes, body: [], lifecycle: nil, status: 0, closeAfter: false))
        flush()
    }

    // MARK: - Writing

    private enum Progress { case done, blocked, waiting, failed }

    private func flush() {
        while !closed, !queue.isEmpty {
            switch writeFront() {
            case .done:
                let finished = queue.removeFirst()
                queuedBytes -= finished.bytes.count + finished.body.count
                if let lifecycle = finished.lifecycle { complete(lifecycle, status: finished.status, bytes: finished.bodyBytes, outcome: .sent) }
                if finished.stream != nil { waker?.close(); waker = nil }
                if finished.closeAfter {
                    closeGracefully()
                    return
                }
                if queue.isEmpty {
                    if request == nil { waitingForHeadSince = Clock.microseconds() }
                    continueInputSoon()
                }
            case .blocked:
                want(write: true)
                return
            case .waiting:
                want(write: false)
                return
            case .failed:
                abort(.clientAbort)
                return
            }
        }
        want(write: false)
    }

    private var inputPending = false
    /// `process` is under way: the parser is not entered again.
    private var parsing = false

    /// After an answer went out: reading resumes (outside of `flush`, which `process` calls).
    private func continueInputSoon() {
        guard !inputPending else { return }
        inputPending = true
        defer { inputPending = false }
        if !waiting, request == nil { continueInput() }
    }

    private func writeFront() -> Progress {
        var front = queue[0]
        defer { if !closed, !queue.isEmpty { queue[0] = front } }
        let total = front.bytes.count + front.body.count
        if front.sent < total {
            let written = front.bytes.withUnsafeBytes { head in
                front.body.withUnsafeBytes { body in
                    if front.sent < head.count {
                        return io.transmit(UnsafeRawBufferPointer(rebasing: head[front.sent...]), body)
                    }
                    return io.transmit(UnsafeRawBufferPointer(rebasing: body[(front.sent - head.count)...]), UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
            if written < 0 { return written == -1 ? .blocked : .failed }
            lastActivity = Clock.microseconds()
            front.sent += written
            if front.sent < total { return .blocked }
        }
        if var file = front.file {
            while file.remaining > 0 {
                let sent = io.transmit(file: file.fd, offset: file.offset, count: min(file.remaining, 1 << 20), buffer: loop.streamBuffer)
                if sent < 0 {
                    front.file = file
                    return sent == -1 ? .blocked : .failed
                }
                if sent == 0 { front.file = file; return .failed }  // the file is shorter than announced
                lastActivity = Clock.microseconds()
                file.offset += sent
                file.remaining -= sent
            }
            close(file.fd)
            front.file = nil
        }
        if let stream = front.stream {
            return writeStream(stream)
        }
        return .done
    }

    private func writeStream(_ stream: StreamState) -> Progress {
        while true {
            if stream.pendingSent < stream.pending.count {
                let written = stream.pending.withUnsafeBytes { bytes in
                    io.transmit(bytes.baseAddress! + stream.pendingSent, bytes.count - stream.pendingSent)
                }
                if written < 0 { return written == -1 ? .blocked : .failed }
                lastActivity = Clock.microseconds()
                stream.pendingSent += written
                if stream.pendingSent < stream.pending.count { return .blocked }
                stream.pending = []
                stream.pendingSent = 0
            }
            if stream.ended {
                finishStream(stream)
                return .done
            }
            // Room in front of the data for a chunk's size line, and after it for its CRLF.
            let buffer = loop.streamBuffer
            let prefix = stream.chunked ? 10 : 0
            let room = min(stream.blockSize, buffer.count - prefix - 7)
            let read: StreamRead = server.isStopping ? .end
                : stream.body.read(into: UnsafeMutableRawBufferPointer(start: buffer.baseAddress! + prefix, count: room), at: stream.position)
            var start = prefix
            var end = prefix
            switch read {
            case .bytes(let count):
                guard count > 0 else { stream.waiting = true; return .waiting }
                stream.position += UInt64(count)
                end = prefix + count
                if stream.chunked {
                    var size: [UInt8] = []
                    appendHex(count, to: &size)
                    size.append(0x0D); size.append(0x0A)
                    start = prefix - size.count
                    size.withUnsafeBytes { (buffer.baseAddress! + start).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                    buffer[end] = 0x0D; buffer[end + 1] = 0x0A
                    end += 2
                }
            case .wait:
                stream.waiting = true
                return .waiting
            case .end:
                stream.ended = true
                if stream.chunked {
                    let last: StaticString = "0\r\n\r\n"
                    (buffer.baseAddress! + start).copyMemory(from: last.utf8Start, byteCount: 5)
                    end = start + 5
                }
            case .failed:
                finishStream(stream)
                return .failed
            }
            guard end > start else { continue }
            let written = io.transmit(buffer.baseAddress! + start, end - start)
            if written == -2 { return .failed }
            let taken = max(0, written)
            if taken > 0 { lastActivity = Clock.microseconds() }
            if taken < end - start {
                stream.pending = Array(UnsafeRawBufferPointer(start: buffer.baseAddress! + start + taken, count: end - start - taken))
                stream.pendingSent = 0
                return .blocked
            }
        }
    }

    private func finishStream(_ stream: StreamState) {
        guard !stream.finished else { return }
        stream.finished = true
        stream.body.finish()
    }

    private func appendHex(_ value: Int, to bytes: inout [UInt8]) {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var shift = (Int.bitWidth - value.leadingZeroBitCount + 3) / 4 * 4
        if shift == 0 { bytes.append(0x30); return }
        while shift > 0 {
            shift -= 4
            bytes.append(digits[(value >> shift) & 0xF])
        }
    }

    private func want(write: Bool) {
        var events: UInt32 = 0
        if write || readWantsWrite { events |= Epoll.output }
        if lingerUntil != nil || mayParse || requestInBody { events |= Epoll.input }
        setInterest(events)
    }

    private func updateInterest() {
        let writing = interest & Epoll.output != 0
        want(write: writing)
    }

    private func setInterest(_ events: UInt32) {
        guard !closed, events != interest else { return }
        interest = events
        loop.setInterest(fd, token: token, events)
    }

    // MARK: - The end

    /// This connection speaks HTTP/2 from here: its socket, session and the bytes read so far go
    /// to an `HTTP2Connection` under the same token; this object lets go without closing.
    private func handOff(bytes: UnsafeRawBufferPointer) {
        closed = true
        let successor = HTTP2Connection(loop: loop, io: io, token: token, address: address, opened: opened)
        loop.replace(token: token, with: successor)
        successor.start(with: bytes)
    }

    private func complete(_ lifecycle: RequestLifecycle, status: Int, bytes: Int, outcome: CompletedExchange.Outcome) {
        lifecycle.completed(status: status, bytesSent: bytes, outcome: outcome)
        server.inFlight.subtract(1, ordering: .releasing)
    }

    private func peerClosed() {
        if request == nil, queue.isEmpty {
            finishClose()
        } else if request != nil, !waiting, !discarding {
            abort(.clientAbort)  // the client hung up inside a request
        } else {
            // Answers are still owed (a later reply, a response being written): the client may
            // have only shut its write side. Stop reading; the writes tell.
            setInterest(interest & ~Epoll.input)
            closeAfterAnswers = true
            discarding = true
            if queue.isEmpty, !waiting { finishClose() }
        }
    }

    /// After the last answer of a connection that closes: shut the write side and drop what the
    /// client still sends for a moment, so a refusal is read before the reset a close with
    /// unread bytes would cause.
    private func closeGracefully() {
        io.shutdownWrites()
        lingerUntil = Clock.microseconds() + 2_000_000
        stashStart = 0
        stashEnd = 0
        setInterest(Epoll.input)
    }

    /// Ends everything now: a request in flight and every queued answer end with `outcome`.
    func abort(_ outcome: CompletedExchange.Outcome) {
        guard !closed else { return }
        if let request {
            self.request = nil
            complete(request, status: 0, bytes: 0, outcome: outcome)
        }
        for outgoing in queue {
            if let file = outgoing.file { close(file.fd) }
            if let stream = outgoing.stream { finishStream(stream) }
            if let lifecycle = outgoing.lifecycle { complete(lifecycle, status: outgoing.status, bytes: 0, outcome: outcome) }
        }
        queue = []
        finishClose()
    }

    private func finishClose() {
        guard !closed else { return }
        if !queue.isEmpty || request != nil {
            abort(.clientAbort)
            return
        }
        closed = true
        waker?.close()
        waker = nil
        io.close()
        loop.forget(self)
    }
}

extension Response.Payload {
    var isBytes: Bool { if case .bytes = self { true } else { false } }
}
