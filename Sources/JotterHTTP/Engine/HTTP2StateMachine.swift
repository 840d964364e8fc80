import CNGHTTP2
import Glibc

/// One HTTP/2 connection (RFC 9113) as a state machine with no socket: it takes the events every
/// connection takes (`ConnectionMachine`: bytes read, bytes the socket took, the socket ready, a
/// tick of the sweep, a later reply ready, a step back from a route's executor, a body's
/// consumer ready, a stream woken, the peer's end, quiesce) and returns the next thing to do
/// (`ConnectionAction`): read into the loop's buffer, write these frames, wait for the socket,
/// close.
/// `HTTP2Connection` does the I/O on the event loop (`SocketDriver`, shared with HTTP/1.1); tests
/// and the fuzzer do the same with byte arrays (`MemoryConnection`,
/// `Tests/JotterHTTPTests/HTTP2StateMachineTests.swift`).
///
/// libnghttp2 does the framing, HPACK, flow control and stream states: bytes go in through
/// `nghttp2_session_mem_recv`, and frames come out of `nghttp2_session_send` into the loop's
/// stream buffer, up to its size, written from there; only what the socket did not take is
/// copied to the machine (`Leftover`). nghttp2's callbacks run inside those two calls, and reach
/// the machine through the session's user pointer, set to the machine's address for each call.
///
/// Each stream runs its request through a `RequestLifecycle` exactly as an HTTP/1.1 request does
/// — the same routes, middleware, body policies, limits, later replies, steps on a route's
/// executor, interim responses and streaming bodies — and its answer goes out as HEADERS and DATA
/// frames under the peer's windows: bytes, a file read in pieces (`pread`), or a streaming body
/// that defers its stream until its waker posts. What is started elsewhere (a later reply's work,
/// a step away, a streaming body) is handed over through the `Handback` once nghttp2's call is
/// over, never from inside a callback. Time comes in with the events (`now`); the machine reads no clock. Not
/// thread-safe: one event loop drives it.
package struct HTTP2StateMachine: ConnectionMachine, ~Copyable {
    /// One request and its answer.
    final class Stream {
        let id: Int32
        var method = ""
        var path = ""
        var authority = ""
        var headers = HTTPHeaders()
        var cookies: [String] = []
        var headerBytes = 0
        /// Its head is refused before it is read whole (a `:path` too long: `414`; a header list
        /// past `maxHeaderList`: `431`): answered at `begin`, the rest of its fields dropped.
        var refusal: HTTPError?
        /// How far its request is: its head, parked, running, answered, over.
        var stage = Stage.head
        /// The head said a body follows (END_STREAM did not end its HEADERS).
        var hasBody = false
        /// Body bytes that arrived while the head's step was away, given to the body once it is back.
        var held: [UInt8] = []
        /// The client ended the stream (END_STREAM seen): the client's half, apart from `stage`.
        var ended = false
        /// nghttp2 closed the stream, or the connection ended: nothing more is submitted for it.
        var closed = false
        /// Its request's interim responses, queued until the machine submits them (from `begin`).
        var interims: InterimSink?
        var source = Source.none
        var position = 0
        var status = 0
        var bodyLength = 0

        init(id: Int32) { self.id = id }

        /// A later reply, or a step on the route's executor, is awaited.
        var waiting: Bool { stage.awaited != nil }

        /// The body bytes the access log counts once the answer went out: a streaming body's as
        /// they were handed out (as HTTP/1.1 counts them: its length may be unknown), any
        /// other's length.
        var bodySent: Int {
            switch source {
            case .stream, .deferred: position
            case .none, .bytes, .file: bodyLength
            }
        }

        /// Changes the running request's exchange in place (`Stage.lent` meanwhile: the stage is
        /// not held while its lifecycle runs, which may send an interim response); nil when none
        /// runs. An answered request's exchange awaits nothing more (`answer` is never given one
        /// that does).
        func change<Result>(_ body: (inout Exchange) -> Result) -> Result? {
            guard var exchange = takeExchange() else { return nil }
            defer { stage = .running(exchange) }
            return body(&exchange)
        }

        /// The running request's exchange, moved out of the stage (not copied: no retain of it
        /// meanwhile) to be changed, the stage `lent` until `stage = .running(exchange)` puts
        /// it back; nil, the stage untouched, when none runs.
        func takeExchange() -> Exchange? {
            guard case .running = stage else { return nil }
            var taken = Stage.lent
            swap(&taken, &stage)
            guard case .running(let exchange) = consume taken else { return nil }
            return exchange
        }

        /// Its streaming body's data provider returned `NGHTTP2_ERR_DEFERRED`: a wake resumes it.
        var deferred: Bool { if case .deferred = source { true } else { false } }

        /// The waker its streaming body was given.
        var waker: ConnectionWaker? {
            switch source {
            case .stream(_, let waker), .deferred(_, let waker): waker
            case .none, .bytes, .file: nil
            }
        }

        /// Its request's body is being read, from the client: not ended, not answered, no step
        /// of the server's awaited.
        var isReadingBody: Bool {
            guard case .running(let exchange) = stage else { return false }
            return hasBody && !ended && exchange.awaited == nil && !exchange.discarding && !closed
        }
    }

    /// How far a stream's request is: one value, as each stage follows the one before.
    enum Stage {
        /// Its header section is arriving (HEADERS after it are trailers).
        case head
        /// Its head is complete but its request has not begun: the connection holds too much of
        /// its answers already (`mustPark`). It begins when they have gone out, in arrival
        /// order, and is given the body bytes kept here meanwhile.
        case parked([UInt8])
        /// Its request began (`begin`): the lifecycle, the body's progress, what it awaits.
        case running(Exchange)
        /// Its answer was submitted; its request is completed when the answer's last frame is made.
        case answered(Exchange)
        /// Its request was completed (the access log's line), or, parked, it closed before it began.
        case over
        /// Its running exchange is out being changed, within one call of the machine (`Stream.change`):
        /// the request runs (its lifecycle may send an interim response meanwhile). Taken out so
        /// that it is changed in place, not copied; nothing else reads it meanwhile.
        case lent

        /// Its header section is arriving.
        var headArriving: Bool { if case .head = self { true } else { false } }

        /// The request's exchange, running or answered.
        var exchange: Exchange? {
            switch self {
            case .running(let exchange), .answered(let exchange): exchange
            case .head, .parked, .over, .lent: nil
            }
        }

        /// What the running request awaits from another thread.
        var awaited: Exchange.Awaited? {
            if case .running(let exchange) = self { exchange.awaited } else { nil }
        }

        /// The request's lifecycle, running or answered.
        var lifecycle: RequestLifecycle? {
            switch self {
            case .running(let exchange), .answered(let exchange): exchange.lifecycle
            case .head, .parked, .over, .lent: nil
            }
        }

        /// The answered request's answer came before its body ended: the rest is dropped.
        var answeredEarly: Bool {
            if case .answered(let exchange) = self { exchange.discarding } else { false }
        }

        /// Whether its answer was submitted, or its request is over.
        var isAnswered: Bool {
            switch self {
            case .answered, .over: true
            case .head, .parked, .running, .lent: false
            }
        }

        /// Adds `bytes` to a parked stream's body in place; false when it is not parked.
        mutating func park(_ bytes: UnsafeRawBufferPointer) -> Bool {
            guard case .parked(var body) = self else { return false }
            self = .lent
            body.append(contentsOf: bytes)
            self = .parked(body)
            return true
        }
    }

    /// Where a stream's answer body comes from.
    enum Source {
        case none
        case bytes([UInt8])
        case file(fd: Int32, offset: Int, remaining: Int)
        /// A streaming body, read when nghttp2 asks, and the waker it was given.
        case stream(any StreamingBody, ConnectionWaker)
        /// The streaming body had nothing: its data provider returned `NGHTTP2_ERR_DEFERRED`,
        /// and a wake (or the server stopping) resumes it.
        case deferred(any StreamingBody, ConnectionWaker)
    }

    /// What the last write action was, to read its answer.
    private enum Writing {
        case leftover
        /// The loop's stream buffer, `0..<count`.
        case buffer(Int)
    }

    /// The client connection preface (RFC 9113 §3.4).
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let maxConcurrentStreams: UInt32 = 100
    static let initialWindow: UInt32 = 1 << 20
    static let connectionWindow: Int32 = 16 << 20
    /// Bytes of one stream's header list (names, values, 32 per field; RFC 9113 §6.5.2) it
    /// reads: past it, the fields are dropped and the stream is answered `431` (§10.5.1).
    static let maxHeaderList = 64 << 10
    /// Bytes of answers a connection may hold (made, not yet taken by the socket) and still begin
    /// another stream's request: past it, new streams wait (`Stage.parked`) until the client
    /// reads — answers are not made to be held, as HTTP/1.1 stops parsing past the same amount.
    static let heldBytesLimit = HTTP1StateMachine.outputHighWater
    /// Files a connection's answers may hold open and still begin another stream's request.
    static let heldFilesLimit = 8
    /// Body bytes all parked streams of a connection may hold; past it the stream that sends
    /// more is refused (`RST_STREAM REFUSED_STREAM`: not processed, the client may retry).
    static let parkedBodyLimit = 64 << 10
    /// Frames that carry no progress (empty DATA without END_STREAM, WINDOW_UPDATE, PRIORITY)
    /// beyond those the connection's own progress accounts for: past it, GOAWAY
    /// `ENHANCE_YOUR_CALM` (CVE-2019-9518 class).
    static let idleFrameLimit = 1_000

    // MARK: - Environment

    /// The server, the client, the clock, the loop's buffers (bytes are handed to nghttp2 from
    /// `readBuffer`; frames are made into `streamBuffer` and written from it), the way back
    /// (`handback`).
    package let parts: MachineParts

    // MARK: - Streams

    private var session: OpaquePointer?
    private var streams: [Int32: Stream] = [:]
    /// Streams whose body consumer is behind (back-pressure), or whose head's step is away while
    /// their body arrives: the connection reads nothing more until each is back.
    private var pausedStreams: Set<Int32> = []
    /// Since when reading has been paused (`pausedStreams` not empty): no stream's body can arrive
    /// meanwhile, so that time is not counted against any stream's minimum body rate.
    private var readingPausedSince: UInt64?
    private var starts: [WorkStart] = []
    /// Streams whose request waits for the connection to hold less, in arrival order.
    private var parked: [Int32] = []
    /// Body bytes the parked streams hold.
    private var parkedBodyBytes = 0

    // MARK: - What the connection holds

    /// Bytes of answers made and not yet handed to nghttp2 (counted in `server.held` too).
    private var heldBytes = 0
    /// Files the streams' answers hold open (counted in `server.held` too).
    private var heldFiles = 0
    /// Frames received that carried no progress, less the progress made since (never below 0).
    private var idleFrames = 0
    /// The client sent too many frames that carry no progress: GOAWAY `ENHANCE_YOUR_CALM` was submitted.
    private var calmed = false

    // MARK: - Input

    /// Whether the socket may be read now (`ReadReadiness`).
    private var readiness = ReadReadiness()

    // MARK: - Output

    /// Frames the socket did not take, copied out of the loop's stream buffer.
    private var leftover = Leftover()
    /// Bytes of the loop's stream buffer filled by the `nghttp2_session_send` under way.
    private var filled = 0
    /// Whether frames may be written now (`Output`).
    private var output = Output<Writing>.ready
    private var outputBlocked: Bool { output.isBlocked }

    // MARK: - Time

    /// The latest time an event brought.
    private var now: UInt64
    private var lastActivity: UInt64
    /// When the last stream ended (or the connection began): an HTTP/2 connection with no
    /// stream open is held to the header deadline, as an idle HTTP/1.1 connection is.
    private var idleSince: UInt64?

    // MARK: - The end

    /// The server stops (`quiesce`): GOAWAY went out, streaming bodies end, and the connection
    /// closes once no stream is left. Apart from `phase`: the streams begun go on meanwhile,
    /// read and answered, and a fatal error may still close it after its output.
    private var quiescing = false

    /// How far the connection is from its end: one value, as each step follows the one before.
    private enum Phase {
        /// Streams are read and answered.
        case open
        /// Write what the socket takes now, then close, ending what is in flight with this
        /// outcome (nghttp2's GOAWAY after a fatal error, or an idle connection's). Nothing more
        /// is read.
        case closingAfterOutput(CompletedExchange.Outcome)
        /// The connection is to close: the next action is `close`.
        case closing
        /// `close` was returned.
        case finished
    }

    private var phase = Phase.open
    private var isOpen: Bool { if case .open = phase { true } else { false } }
    /// The connection closes at the next action, or did.
    private var closing: Bool {
        switch phase {
        case .closing, .finished: true
        case .open, .closingAfterOutput: false
        }
    }
    /// `close` was returned.
    var isFinished: Bool { if case .finished = phase { true } else { false } }

    /// A connection that speaks HTTP/2 from `parts.now`; `begin(with:now:)` starts its session.
    package init(_ parts: MachineParts) {
        self.parts = parts
        now = parts.now
        lastActivity = parts.now
        idleSince = parts.now
        parts.server.counters.http2Connections.add(1, ordering: .relaxed)
        var session: OpaquePointer?
        guard nghttp2_session_server_new2(&session, HTTP2Callbacks.shared.callbacks, nil, HTTP2Callbacks.shared.option) == 0 else {
            phase = .closing
            return
        }
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: Self.maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: Self.initialWindow),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(Self.maxHeaderList)),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Self.connectionWindow)
        self.session = session
    }

    deinit {
        if !isFinished {
            if let session { nghttp2_session_del(session) }
            parts.server.counters.http2Connections.subtract(1, ordering: .relaxed)
        }
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

    // MARK: - Events from the socket

    /// The connection speaks HTTP/2 from now: our SETTINGS go out, and `bytes` read already
    /// (the preface, perhaps more; none after TLS chose `h2`) are taken; then reading goes on.
    package mutating func begin(with bytes: UnsafeRawBufferPointer, now: UInt64) -> ConnectionAction {
        self.now = now
        lastActivity = now
        if bytes.count > 0 { feed(bytes) }
        readiness.begin()
        return next()
    }

    package mutating func ready(read: Bool, write: Bool) -> ConnectionAction {
        output.socketWritable(write)
        readiness.socketReady(read: read, write: write)
        return next()
    }

    package mutating func received(_ count: Int, now: UInt64, more: Bool = false) -> ConnectionAction {
        self.now = now
        lastActivity = now
        readiness.received(count, room: parts.readBuffer.count, more: more)
        if mayRead { feed(UnsafeRawBufferPointer(start: parts.readBuffer.baseAddress, count: count)) }
        return next()
    }

    package mutating func readBlocked() -> ConnectionAction {
        readiness.blocked()
        return next()
    }

    package mutating func readNeedsWritable() -> ConnectionAction {
        readiness.needsWritable()
        return next()
    }

    package mutating func peerClosed() -> ConnectionAction {
        terminate(.clientAbort)
        return next()
    }

    package mutating func readFailed() -> ConnectionAction {
        terminate(.readError)
        return next()
    }

    package mutating func hungUp() -> ConnectionAction {
        terminate(.clientAbort)
        return next()
    }

    package mutating func wrote(_ count: Int, now: UInt64) -> ConnectionAction {
        self.now = now
        guard case .writing(let writing) = output else { return next() }
        output = .ready
        if count > 0 { lastActivity = now }
        switch writing {
        case .leftover:
            if !leftover.wrote(count) { output = .blocked }
        case .buffer(let end):
            if count < end {
                keepOutput(from: count, to: end)
                output = .blocked
            }
        }
        return next()
    }

    package mutating func writeBlocked() -> ConnectionAction {
        if case .writing(.buffer(let end)) = output { keepOutput(from: 0, to: end) }
        output = .blocked
        return next()
    }

    package mutating func writeFailed() -> ConnectionAction {
        output.failed()
        terminate(.clientAbort)
        return next()
    }

    package mutating func performed() -> ConnectionAction {
        next()
    }

    // MARK: - Events from elsewhere

    /// The sweep: a connection with no stream open past the header deadline gets GOAWAY and
    /// closes; one with nothing read or written for the idle timeout (and no stream waiting on
    /// the server) closes — after a `408` on each stream whose body stopped arriving; a stream
    /// whose body is slower than the minimum rate is answered `408` (then `RST_STREAM`
    /// `NO_ERROR`: the client may stop sending) while the connection serves on.
    package mutating func tick(now: UInt64, polledAt: UInt64, unread: Bool? = nil) -> ConnectionAction {
        guard isOpen else { return next() }
        self.now = now
        let configuration = parts.server.configuration
        let headerTimeout = UInt64(configuration.headerTimeout * 1_000_000)
        if let idleSince, streams.isEmpty, now >= idleSince + headerTimeout {
            switch Self.late(idleSince + headerTimeout, polledAt: polledAt, unread: unread) {
            case true?:
                submitGoAway()
                closeAfterOutput(.clientAbort)
                return next()
            case nil: return .checkUnread
            case false?: break
            }
        }
        let streaming = !pausedStreams.isEmpty || streams.values.contains { $0.deferred || $0.waiting }
        let idleDeadline = lastActivity + UInt64(configuration.idleTimeout) * 1_000_000
        if !streaming, now >= idleDeadline {
            switch Self.late(idleDeadline, polledAt: polledAt, unread: unread) {
            case true?:
                parts.server.counters.timedOut.add(1, ordering: .relaxed)
                let reading = streams.values.filter(\.isReadingBody).sorted { $0.id < $1.id }
                guard !reading.isEmpty else {
                    terminate(.timeout)
                    return next()
                }
                for stream in reading { bodyTimedOut(stream, "stopped arriving for \(configuration.idleTimeout) s") }
                submitGoAway()
                closeAfterOutput(.timeout)
                return next()
            case nil: return .checkUnread
            case false?: break
            }
        }
        // Not while reading is paused: no stream's body can arrive then (`readAgain` takes the
        // pause off each stream's rate).
        if configuration.minimumBodyRate > 0, session != nil, pausedStreams.isEmpty {
            for stream in streams.values.sorted(by: { $0.id < $1.id }) where stream.isReadingBody {
                if stream.stage.exchange!.isTooSlow(now: now, grace: headerTimeout, rate: configuration.minimumBodyRate) {
                    parts.server.counters.slowBodies.add(1, ordering: .relaxed)
                    bodyTimedOut(stream, "arrives slower than \(configuration.minimumBodyRate) bytes a second")
                }
            }
        }
        return next()
    }

    package mutating func resume(stream id: Int32, now: UInt64, _ render: () throws -> Response) -> ConnectionAction {
        guard !closing, let stream = streams[id], let response = stream.change({ $0.resume(render) }) ?? nil else {
            return next()
        }
        self.now = now
        answer(stream, response)
        return next()
    }

    /// The step of stream `id` that went away on `trip` to its route's executor is back: its
    /// action is carried out where the stream was (its head or its end); body bytes that
    /// arrived meanwhile are given to it, and reading goes on.
    package mutating func landed(stream id: Int32, _ trip: RequestLifecycle.Trip, now: UInt64) -> ConnectionAction? {
        guard !closing, let stream = streams[id], let landing = stream.change({ $0.landed(trip, now: now) }) ?? nil else {
            return nil
        }
        self.now = now
        // The time away is the server's, not the client's.
        lastActivity = now
        if landing.atHead {
            let paused = pausedStreams.remove(id) != nil  // before the held bytes, which may pause it again
            headActed(stream, landing.action)
            if !stream.held.isEmpty {
                let held = stream.held
                stream.held = []
                held.withUnsafeBytes { data(id, $0) }
            }
            if stream.ended { bodyComplete(stream) }
            if paused, pausedStreams.isEmpty { readAgain() }
        } else {
            bodyActed(stream, landing.action)
        }
        return next()
    }

    /// Interim responses were queued outside a call into a stream's lifecycle (sent from the
    /// route's executor and posted to the loop): they are submitted now.
    package mutating func interimsQueued() -> ConnectionAction {
        guard !closing else { return next() }
        for stream in streams.values { submitInterims(stream) }
        return next()
    }

    /// Submits the interim responses the stream's request queued (a `1xx` HEADERS each), ahead
    /// of whatever the call that sent them answered.
    private func submitInterims(_ stream: Stream) {
        guard let interims = stream.interims else { return }
        let taken = interims.take()
        guard !taken.isEmpty, let session, !stream.closed, !stream.stage.isAnswered else { return }
        for interim in taken {
            _ = HeaderBlock(status: interim.status.code, headers: interim.headers).submit(session, stream.id, provider: nil, interim: true)
        }
    }

    package mutating func bodyReady(stream id: Int32, now: UInt64) -> ConnectionAction {
        guard pausedStreams.remove(id) != nil, pausedStreams.isEmpty, !closing else { return next() }
        self.now = now
        lastActivity = now
        readAgain()
        return next()
    }

    package mutating func streamWoken(stream id: Int32) -> ConnectionAction {
        guard let stream = streams[id] else { return next() }
        stream.waker?.woken()
        guard let session, resumeDeferred(stream) else { return next() }
        nghttp2_session_resume_data(session, id)
        return next()
    }

    /// The server stops: GOAWAY (`NO_ERROR`, the last stream begun); streams already begun
    /// finish — streaming bodies end — and the connection closes when none is left.
    package mutating func quiesce() -> ConnectionAction {
        guard !quiescing, !closing, let session else { return next() }
        quiescing = true
        submitGoAway()
        for stream in streams.values where resumeDeferred(stream) {
            nghttp2_session_resume_data(session, stream.id)
        }
        return next()
    }

    /// A deferred streaming body is to be read again: whether it was deferred.
    private func resumeDeferred(_ stream: Stream) -> Bool {
        guard case .deferred(let body, let waker) = stream.source else { return false }
        stream.source = .stream(body, waker)
        return true
    }

    package mutating func abort(_ outcome: CompletedExchange.Outcome) -> ConnectionAction {
        terminate(outcome)
        return next()
    }

    package var waitingForHeadSince: UInt64? { streams.isEmpty ? idleSince : nil }

    /// Streams are open and none waits on the server's work (a later reply, a step on an
    /// executor): they stream answers (event streams), read bodies, or wait for the client.
    /// At the connection limit such connections may be pushed out (`EventLoop`).
    var isLongLived: Bool {
        !streams.isEmpty && !closing && !streams.values.contains { $0.waiting }
    }

    /// Streams open now.
    var openStreams: Int { streams.count }

    /// Bytes of output the connection holds of its own (what the socket did not take): none
    /// while it is idle.
    var heldOutputBytes: Int { leftover.bytes.count }

    // MARK: - The next action

    /// What to do now, from the state: start what is due, write what is left over or what
    /// nghttp2 has to send, read, or wait.
    private mutating func next() -> ConnectionAction {
        while true {
            switch phase {
            case .finished: return .close
            case .closing:
                finish()
                return .close
            case .open, .closingAfterOutput: break
            }
            if !parked.isEmpty { unpark() }
            if let work = nextStart() { return .start(work) }
            if !outputBlocked {
                if !leftover.isEmpty {
                    output = .writing(.leftover)
                    return leftover.write
                }
                let count = makeFrames()
                if closing { continue }
                if count > 0 {
                    output = .writing(.buffer(count))
                    return .writeBuffer(UnsafeRawBufferPointer(start: parts.streamBuffer.baseAddress, count: count))
                }
                // Everything is written.
                if case .closingAfterOutput(let outcome) = phase {
                    terminate(outcome)
                    continue
                }
                if let session, nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0 {
                    terminate(.clientAbort)  // GOAWAY went both ways, or a fatal error: nothing more to do
                    continue
                }
                if quiescing, streams.isEmpty {
                    terminate(.shutdown)
                    continue
                }
            } else if case .closingAfterOutput(let outcome) = phase {
                terminate(outcome)  // the socket takes no more now: close anyway
                continue
            }
            if readiness.isReady, mayRead { return .read(parts.readBuffer) }
            return .wait(interest)
        }
    }

    /// Whether bytes may be read and handed to nghttp2: not while a stream is paused.
    private var mayRead: Bool { isOpen && pausedStreams.isEmpty }

    /// What the socket should report.
    var interest: ConnectionInterest {
        ConnectionInterest(read: mayRead, write: outputBlocked || readiness.wantsWrite)
    }

    /// Stops reading for stream `id`: its body's consumer is behind, or its step is away at the
    /// head with its body unread.
    private mutating func pauseReading(for id: Int32) {
        if pausedStreams.isEmpty { readingPausedSince = now }
        pausedStreams.insert(id)
    }

    /// Reading goes on (a paused stream is back): bytes may wait in the socket already. The
    /// pause was the server's: every stream reading a body has that time taken off its rate.
    private mutating func readAgain() {
        if let since = readingPausedSince {
            readingPausedSince = nil
            let paused = now > since ? now - since : 0
            let now = now
            for stream in streams.values where stream.isReadingBody { stream.change { $0.resumed(after: paused, now: now) } }
        }
        readiness.begin()
    }

    /// The oldest work the last events decided to start, once nghttp2's call is over, that is
    /// still valid (its stream open and waiting for it) — a stream reset in the same read as its
    /// head never sends its step away; nil when none is.
    private mutating func nextStart() -> WorkStart? {
        while !starts.isEmpty {
            let work = starts.removeFirst()
            guard let stream = streams[work.stream] else { continue }
            switch work {
            case .later: if stream.waiting { return work }
            case .away(let lifecycle, _): if stream.waiting, stream.stage.lifecycle === lifecycle { return work }
            case .body(_, let waker, _): if stream.waker === waker { return work }
            }
        }
        return nil
    }

    // MARK: - nghttp2

    /// Hands `bytes` to nghttp2, whose callbacks run the streams. A fatal error (a flood, a bad
    /// preface): what nghttp2 still sends (its GOAWAY) goes out, then the connection closes.
    private mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let session, bytes.count > 0 else { return }
        let result = withUnsafeMutablePointer(to: &self) { machine in
            nghttp2_session_set_user_data(session, machine)
            return nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if calmed {
            parts.server.log.info("HTTP/2 connection from \(parts.address) closed: more than \(Self.idleFrameLimit) frames carrying no progress")
            closeAfterOutput(.error)
        } else if result < 0 {
            if result == Int(NGHTTP2_ERR_FLOODED.rawValue) || result == Int(NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue) {
                parts.server.log.info("HTTP/2 connection from \(parts.address) closed: \(String(cString: nghttp2_strerror(Int32(result))))")
            }
            closeAfterOutput(.error)
        }
    }

    /// Fills the loop's stream buffer with frames nghttp2 has to send (`take`); how many bytes.
    private mutating func makeFrames() -> Int {
        guard let session else { return 0 }
        filled = 0
        let result = withUnsafeMutablePointer(to: &self) { machine in
            nghttp2_session_set_user_data(session, machine)
            return nghttp2_session_send(session)
        }
        if result < 0 {
            terminate(.error)
            return 0
        }
        return filled
    }

    /// nghttp2's send callback: copies what fits of `length` bytes of frames into the loop's
    /// stream buffer (the rest of the frame is asked for again at the next send).
    fileprivate mutating func take(_ data: UnsafePointer<UInt8>, _ length: Int) -> Int {
        let room = parts.streamBuffer.count - filled
        guard room > 0 else { return Int(NGHTTP2_ERR_WOULDBLOCK.rawValue) }
        let count = min(room, length)
        (parts.streamBuffer.baseAddress! + filled).copyMemory(from: data, byteCount: count)
        filled += count
        return count
    }

    /// What the socket did not take of the stream buffer's `start..<end` is kept (the buffer is
    /// the loop's, shared by its connections).
    private mutating func keepOutput(from start: Int, to end: Int) {
        leftover.keep(parts.streamBuffer, from: start, to: end)
    }

    private func submitGoAway() {
        guard let session else { return }
        nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
            NGHTTP2_NO_ERROR.rawValue, nil, 0)
    }

    // MARK: - Streams (called from nghttp2's callbacks)

    fileprivate mutating func beginStream(_ id: Int32) {
        streams[id] = Stream(id: id)
        idleSince = nil
    }

    /// One header field of a stream's head. nghttp2 decodes every field of a block (HPACK's
    /// table goes on), so a head refused (`Stream.refusal`: a `:path` longer than HTTP/1.1's
    /// request-target may be, `414`; a header list past `maxHeaderList`, `431`) reads on and
    /// keeps nothing more: it is answered when it ends, and the connection lives on.
    fileprivate func field(_ id: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard let stream = streams[id], stream.stage.headArriving else { return }  // trailers: not used
        stream.headerBytes += name.count + value.count + 32
        if stream.headerBytes > Self.maxHeaderList, stream.refusal == nil {
            stream.refusal = HTTPError(
                .requestHeaderFieldsTooLarge,
                detail: "the request's header list is too large (at most \(Self.maxHeaderList) bytes, counting 32 per field)")
            stream.headers = HTTPHeaders()
            stream.cookies = []
        }
        guard stream.refusal == nil else { return }
        if name.count == 5, value.count > FramingCheck.maxTargetLength, name.elementsEqual(":path".utf8) {
            stream.refusal = HTTPError(.uriTooLong, detail: "the request-target is longer than \(FramingCheck.maxTargetLength) bytes")
            return
        }
        let value = String(decoding: value, as: UTF8.self)
        if name.first == UInt8(ascii: ":") {
            switch String(decoding: name, as: UTF8.self) {
            case ":method": stream.method = value
            case ":path": stream.path = value
            case ":authority": stream.authority = value
            default: break  // :scheme — checked by nghttp2
            }
            return
        }
        let name = String(decoding: name, as: UTF8.self)
        if name == "cookie" {
            stream.cookies.append(value)  // RFC 9113 §8.2.3: joined with "; "
        } else {
            stream.headers.add(name, value)
        }
    }

    fileprivate mutating func headersReceived(_ id: Int32, endStream: Bool) {
        guard let stream = streams[id], session != nil else { return }
        guard stream.stage.headArriving else {
            if endStream { bodyComplete(stream) }  // trailers end the body
            return
        }
        if !stream.cookies.isEmpty { stream.headers.add("cookie", stream.cookies.joined(separator: "; ")) }
        if stream.headers["Host"] == nil, !stream.authority.isEmpty { stream.headers.add("host", stream.authority) }
        stream.hasBody = !endStream
        if mustPark(queued: true) {
            stream.stage = .parked([])
            stream.ended = endStream
            parked.append(id)
            return
        }
        begin(stream)
        if endStream { bodyComplete(stream) }
    }

    /// Begins a stream's request: its lifecycle, and the action of its head.
    private mutating func begin(_ stream: Stream) {
        guard session != nil else { return }
        let interim = InterimSink(loop: parts.handback.loop, connection: parts.handback.token)
        interim.setOpen(true)
        stream.interims = interim
        let exchange = Exchange(
            server: parts.server, target: stream.path, address: parts.address, clock: parts.clock, now: now, interim: interim, stream: stream.id,
            isHead: stream.method == "HEAD", hasBody: stream.hasBody)
        let lifecycle = exchange.lifecycle
        stream.stage = .running(exchange)
        if let refusal = stream.refusal {
            // Its head was not read whole: answered as HTTP/1.1 answers a head it could not parse.
            headActed(stream, lifecycle.malformed(refusal))
            return
        }
        headActed(
            stream,
            lifecycle.headerComplete(
                method: stream.method, version: "HTTP/2.0", headers: stream.headers,
                bodyFollows: stream.hasBody))
    }

    /// Carries out the action of a stream's head.
    private mutating func headActed(_ stream: Stream, _ action: consuming RequestLifecycle.Action) {
        guard var exchange = stream.takeExchange() else { return }
        let next = exchange.headActed(action)
        stream.stage = .running(exchange)
        act(stream, next)
    }

    /// Carries out the action of a stream's end.
    private mutating func bodyActed(_ stream: Stream, _ action: consuming RequestLifecycle.Action) {
        guard var exchange = stream.takeExchange() else { return }
        let next = exchange.bodyActed(action)
        stream.stage = .running(exchange)
        act(stream, next)
    }

    /// Carries out what a stream's exchange asks next, in HTTP/2. A step away at its head
    /// pauses the connection's reading (as a paused body does); the stream's DATA read already
    /// is kept for it (`held`).
    private mutating func act(_ stream: Stream, _ next: consuming Exchange.Next) {
        submitInterims(stream)
        switch consume next {
        case .proceed: break
        case .sendContinue:
            if let session { _ = HeaderBlock(status: 100, headers: HTTPHeaders()).submit(session, stream.id, provider: nil, interim: true) }
        case .answer(let response): answer(stream, response)
        case .start(let work):
            if case .away(atHead: true)? = stream.stage.awaited, stream.hasBody { pauseReading(for: stream.id) }
            starts.append(work)
        case .fail: reset(stream)
        case .pause: pauseReading(for: stream.id)
        }
    }

    fileprivate mutating func data(_ id: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let stream = streams[id] else { return }
        if case .parked = stream.stage {
            guard parkedBodyBytes + bytes.count <= Self.parkedBodyLimit, session != nil else {
                if let session { nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_REFUSED_STREAM.rawValue) }
                return
            }
            _ = stream.stage.park(bytes)
            parkedBodyBytes += bytes.count
            return
        }
        guard var exchange = stream.takeExchange() else { return }
        if exchange.discarding {
            stream.stage = .running(exchange)
            return
        }
        if case .away(atHead: true)? = exchange.awaited {
            stream.stage = .running(exchange)
            stream.held.append(contentsOf: bytes)
            return
        }
        let handback = parts.handback
        let next = exchange.receive(bytes, then: handback.bodyReady(stream: id))
        stream.stage = .running(exchange)
        act(stream, next)
    }

    fileprivate mutating func bodyEnded(_ id: Int32) {
        guard let stream = streams[id] else { return }
        bodyComplete(stream)
    }

    private mutating func bodyComplete(_ stream: Stream) {
        stream.ended = true
        guard var exchange = stream.takeExchange() else { return }
        guard !exchange.discarding, exchange.awaited == nil else {
            stream.stage = .running(exchange)
            return
        }
        let next = exchange.bodyComplete()
        stream.stage = .running(exchange)
        act(stream, next)
    }

    /// The server gives up on a stream's body: `408` problem+json through the request's
    /// middleware, the rest of the body dropped, and once the answer is out `RST_STREAM`
    /// `NO_ERROR` (`frameSent`) — never a bare reset, which a proxy in front turns into a `502`
    /// for a request it may not resend. A stream that cannot be answered so is reset (CANCEL).
    private mutating func bodyTimedOut(_ stream: Stream, _ why: String) {
        guard case .answer(let response)? = stream.change({ $0.bodyTimedOut(why, closesConnection: false) }) else {
            if let session {
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
            }
            return
        }
        answer(stream, response)
    }

    private func reset(_ stream: Stream) {
        guard let session else { return }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_INTERNAL_ERROR.rawValue)
    }

    /// A frame went out (into the output); the one that ends a stream's answer completes its request.
    fileprivate mutating func frameSent(_ id: Int32, type: UInt32, endStream: Bool) {
        if type == NGHTTP2_DATA.rawValue { idleFrames = max(0, idleFrames - 1) }  // the client may answer it with a WINDOW_UPDATE
        guard endStream, let stream = streams[id], case .answered = stream.stage else { return }
        let discarding = stream.stage.answeredEarly
        complete(stream, outcome: .sent)
        // Answered before its body ended (a refusal): the client may stop sending (RFC 9113 §8.1).
        if discarding, let session {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_NO_ERROR.rawValue)
        }
    }

    /// Counts a frame received: one that carries no progress — an empty DATA that does not end
    /// its stream, a WINDOW_UPDATE, a PRIORITY — adds one, one that does (a request's HEADERS, a
    /// DATA with bytes) takes one off, as each DATA frame sent does (the client may answer it
    /// with a WINDOW_UPDATE). Past `idleFrameLimit` the client sends nothing but work for the
    /// server (CVE-2019-9518): GOAWAY `ENHANCE_YOUR_CALM`, and the connection closes.
    fileprivate mutating func frameReceived(type: UInt32, payload: Int, endStream: Bool) {
        switch type {
        case NGHTTP2_DATA.rawValue where payload == 0 && !endStream, NGHTTP2_WINDOW_UPDATE.rawValue, NGHTTP2_PRIORITY.rawValue:
            idleFrames += 1
        case NGHTTP2_DATA.rawValue, NGHTTP2_HEADERS.rawValue:
            idleFrames = max(0, idleFrames - 1)
        default: break
        }
        guard idleFrames > Self.idleFrameLimit, !calmed, let session else { return }
        calmed = true
        nghttp2_session_terminate_session(session, NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
    }

    fileprivate mutating func streamClosed(_ id: Int32) {
        if pausedStreams.remove(id) != nil, pausedStreams.isEmpty { readAgain() }
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.closed = true
        complete(stream, outcome: .clientAbort)
        release(stream)
        if streams.isEmpty { idleSince = now }
    }

    private func complete(_ stream: Stream, outcome: CompletedExchange.Outcome) {
        stream.interims?.setOpen(false)
        let answered: Bool
        switch stream.stage {
        case .running: answered = false
        case .answered: answered = true
        case .head, .parked, .over, .lent: return
        }
        var taken = Stage.over
        swap(&taken, &stream.stage)
        guard let lifecycle = taken.lifecycle else { return }
        let sent = outcome == .sent
        Exchange.complete(
            lifecycle, status: sent || answered ? stream.status : 0, bytes: sent ? stream.bodySent : stream.position,
            outcome: outcome, server: parts.server)
    }

    /// What a stream still holds: a file, a streaming body, its waker.
    private mutating func release(_ stream: Stream) {
        switch stream.source {
        case .bytes(let body): unhold(bytes: body.count - stream.position)
        case .file(let fd, _, _):
            close(fd)
            unhold(files: 1)
        case .stream(let body, _), .deferred(let body, _): body.finish()
        case .none: break
        }
        let waker = stream.waker
        if case .parked(let body) = stream.stage {
            parkedBodyBytes -= body.count
            stream.stage = .over
        }
        stream.source = .none
        waker?.close()
    }

    /// Ends every stream with `outcome`; the connection closes.
    private mutating func terminate(_ outcome: CompletedExchange.Outcome) {
        guard !closing else { return }
        for stream in streams.values {
            stream.closed = true
            complete(stream, outcome: outcome)
            release(stream)
        }
        streams = [:]
        starts = []
        pausedStreams = []
        readingPausedSince = nil
        parked = []
        parkedBodyBytes = 0
        phase = .closing
    }

    /// What the socket takes now is written, then the connection closes, ending what is in
    /// flight with `outcome` — unless it is closing already.
    private mutating func closeAfterOutput(_ outcome: CompletedExchange.Outcome) {
        if isOpen { phase = .closingAfterOutput(outcome) }
    }

    /// The connection is closed: the session goes.
    private mutating func finish() {
        phase = .finished
        leftover = Leftover()
        if let session {
            self.session = nil
            nghttp2_session_del(session)
        }
        parts.server.counters.http2Connections.subtract(1, ordering: .relaxed)
    }

    // MARK: - Answers

    /// Counts answer bytes or open files as held, by this connection and the server.
    private mutating func hold(bytes: Int = 0, files: Int = 0) {
        heldBytes += bytes
        heldFiles += files
        parts.server.held.add(bytes: bytes, files: files)
    }

    private mutating func unhold(bytes: Int = 0, files: Int = 0) {
        hold(bytes: -bytes, files: -files)
    }

    /// Bytes of answers the connection holds: made and not yet written.
    var heldAnswerBytes: Int { heldBytes + leftover.bytes.count }

    /// Whether a stream whose head just completed must wait before its request begins: streams
    /// parked before it wait still (arrival order), and a connection that holds answers already
    /// — past its own bounds (`heldBytesLimit`, `heldFilesLimit`), or while the server's
    /// (`HTTPServer.held`) are passed — makes no more. A connection that holds nothing always
    /// begins one: a client that reads is never kept waiting for others that do not.
    private func mustPark(queued: Bool) -> Bool {
        if queued, !parked.isEmpty { return true }
        let bytes = heldAnswerBytes
        guard bytes > 0 || heldFiles > 0 else { return false }
        return bytes >= Self.heldBytesLimit || heldFiles >= Self.heldFilesLimit || parts.server.held.exhausted
    }

    /// Begins the parked streams' requests, oldest first, while the connection may.
    private mutating func unpark() {
        while let id = parked.first, !closing {
            guard let stream = streams[id], case .parked(let body) = stream.stage else {
                parked.removeFirst()
                continue
            }
            if mustPark(queued: false) { return }
            parked.removeFirst()
            parkedBodyBytes -= body.count
            stream.stage = .over  // until it begins
            begin(stream)
            if !body.isEmpty { body.withUnsafeBytes { data(id, $0) } }
            if stream.ended { bodyComplete(stream) }
        }
    }

    private mutating func answer(_ stream: Stream, _ response: Response) {
        submitInterims(stream)
        stream.interims?.setOpen(false)
        guard let session, !stream.closed, let exchange = stream.takeExchange() else {
            response.payload.release()
            return
        }
        let isHead = exchange.isHead
        stream.stage = .answered(exchange)
        let status = response.status.code
        stream.status = status
        let bodyAllowed = status >= 200 && status != 204 && status != 304
        var length: UInt64?
        switch response.payload {
        case .bytes:
            length = UInt64(response.body.count)
            if bodyAllowed, !isHead, !response.body.isEmpty {
                stream.source = .bytes(response.body)
                hold(bytes: response.body.count)
            }
        case .file(let fd, let offset, let count):
            length = count
            if bodyAllowed, !isHead, count > 0 {
                stream.source = .file(fd: fd, offset: Int(offset), remaining: Int(count))
                hold(files: 1)
            } else {
                close(fd)
            }
        case .stream(let body, let count, _):
            length = count
            if bodyAllowed, !isHead {
                let waker = ConnectionWaker(parts.handback, stream: stream.id)
                stream.source = .stream(body, waker)
                starts.append(.body(body, waker, stream: stream.id))
            } else {
                body.finish()
            }
        }
        stream.bodyLength = Int(length ?? 0)
        var block = HeaderBlock(status: status, headers: response.headers)
        block.append(Self.dateName, parts.date.value.utf8)
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
                if !ResponseHead.engineOwned(name), !HTTP2StateMachine.connectionSpecific(name) {
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
                    nghttp2_nv(
                        name: base + span.0, value: base + span.2, namelen: span.1, valuelen: span.3,
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
    fileprivate mutating func readBody(
        _ id: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
        flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
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
            unhold(bytes: count)
            if stream.position == body.count { flags.pointee |= eof }
            return count
        case .file(let fd, let offset, let total):
            let count = pread(fd, buffer, min(length, total - stream.position), off_t(offset + stream.position))
            guard count > 0 else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }  // shorter than announced
            stream.position += count
            if stream.position >= total { flags.pointee |= eof }
            return count
        case .stream(let body, let waker), .deferred(let body, let waker):
            if quiescing || parts.server.isStopping {
                flags.pointee |= eof
                return 0
            }
            switch body.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: length), at: UInt64(stream.position)) {
            case .bytes(let count) where count > 0:
                stream.position += count
                return count
            case .bytes, .wait:
                stream.source = .deferred(body, waker)
                return Int(NGHTTP2_ERR_DEFERRED.rawValue)
            case .end:
                flags.pointee |= eof
                return 0
            case .failed:
                return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
            }
        }
    }

    /// The machine nghttp2's callbacks are for: the session's user pointer, set for each call.
    fileprivate static func from(_ user: UnsafeMutableRawPointer) -> UnsafeMutablePointer<HTTP2StateMachine> {
        user.assumingMemoryBound(to: HTTP2StateMachine.self)
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
        nghttp2_session_callbacks_set_send_callback(
            callbacks,
            { _, data, length, _, user in
                guard let data, let user else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                return HTTP2StateMachine.from(user).pointee.take(data, length)
            })
        nghttp2_session_callbacks_set_on_begin_headers_callback(
            callbacks,
            { _, frame, user in
                guard let frame, let user, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
                    frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
                else { return 0 }
                HTTP2StateMachine.from(user).pointee.beginStream(frame.pointee.hd.stream_id)
                return 0
            })
        nghttp2_session_callbacks_set_on_header_callback(
            callbacks,
            { _, frame, name, nameLength, value, valueLength, _, user in
                guard let frame, let user, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
                HTTP2StateMachine.from(user).pointee.field(
                    frame.pointee.hd.stream_id,
                    name: UnsafeRawBufferPointer(start: name, count: nameLength),
                    value: UnsafeRawBufferPointer(start: value, count: valueLength))
                return 0
            })
        nghttp2_session_callbacks_set_on_frame_recv_callback(
            callbacks,
            { _, frame, user in
                guard let frame, let user else { return 0 }
                let machine = HTTP2StateMachine.from(user)
                let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
                let type = UInt32(frame.pointee.hd.type)
                // DATA's length includes its padding (`padlen`, its length field included).
                let payload = type == NGHTTP2_DATA.rawValue ? frame.pointee.hd.length - frame.pointee.data.padlen : frame.pointee.hd.length
                machine.pointee.frameReceived(type: type, payload: payload, endStream: endStream)
                switch type {
                case NGHTTP2_HEADERS.rawValue: machine.pointee.headersReceived(frame.pointee.hd.stream_id, endStream: endStream)
                case NGHTTP2_DATA.rawValue where endStream: machine.pointee.bodyEnded(frame.pointee.hd.stream_id)
                default: break
                }
                return 0
            })
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
            callbacks,
            { _, _, id, data, length, user in
                guard let user else { return 0 }
                HTTP2StateMachine.from(user).pointee.data(id, UnsafeRawBufferPointer(start: data, count: length))
                return 0
            })
        nghttp2_session_callbacks_set_on_frame_send_callback(
            callbacks,
            { _, frame, user in
                guard let frame, let user else { return 0 }
                let type = UInt32(frame.pointee.hd.type)
                guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue else { return 0 }
                HTTP2StateMachine.from(user).pointee.frameSent(
                    frame.pointee.hd.stream_id, type: type,
                    endStream: frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0)
                return 0
            })
        nghttp2_session_callbacks_set_on_stream_close_callback(
            callbacks,
            { _, id, _, user in
                guard let user else { return 0 }
                HTTP2StateMachine.from(user).pointee.streamClosed(id)
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
    return HTTP2StateMachine.from(user).pointee.readBody(id, into: buffer, length: length, flags: flags)
}
