import Glibc
import JotterSystem

/// One HTTP/1.1 connection as a state machine with no socket: it takes events — bytes read,
/// bytes the socket took, the socket ready, a tick of the sweep, a later reply ready, a body's
/// consumer ready, a stream woken, the peer's end, quiesce — and returns the next thing to do
/// (`ConnectionAction`): read into this buffer, write these bytes, send this file range, start
/// a later reply's work or a streaming body, shut the write side, wait for the socket, hand over
/// to HTTP/2, close. `HTTP1Connection` does the I/O on the event loop and feeds each result back
/// (`SocketDriver`, shared with HTTP/2); tests and the fuzzer do the same with byte arrays
/// (`MemoryConnection`, `Tests/JotterHTTPTests/HTTP1StateMachineTests.swift`).
///
/// Each event returns one action; an action that does something (`read`, `write`, `sendFile`,
/// `shutdownWrites`, `drain`) is answered by the event that says
/// how it went, and the next action follows; `wait` ends the chain until the socket or another
/// thread has news; `close` and `handOff` end the connection. Time comes in with the events
/// (`now`), never from a clock; the machine reads none (`ConnectionMachine`).
///
/// What it keeps: requests are parsed (llhttp, `RequestParser`) and run through their
/// `RequestLifecycle` in order, answers queued and written in request order (pipelining);
/// parsing stops while a later reply is awaited, a streaming answer is being sent, a body's
/// consumer is behind, or more than `outputHighWater` bytes of answers wait — what was read
/// beyond is kept (`stash`) and parsed when the connection may go on. An idle connection holds
/// no buffer. Not thread-safe: one event loop drives it.
package struct HTTP1StateMachine: ConnectionMachine, ~Copyable {
    package typealias Action = ConnectionAction
    typealias Interest = ConnectionInterest

    /// One answer being written.
    struct Outgoing {
        var head: [UInt8]
        /// The body array of a bytes response, written after `head` in the same `writev`.
        var body: [UInt8]
        var sent = 0
        var file: (fd: Int32, offset: Int, remaining: Int)?
        var stream: StreamState?
        let lifecycle: RequestLifecycle?
        let status: Int
        var bodyBytes = 0
        let closeAfter: Bool
        /// A streaming body's bytes handed out so far (0 for any other answer).
        var streamed: Int { stream.map { Int($0.position) } ?? 0 }
        /// The body bytes the access log counts once the answer is written: a stream's as it went.
        var bodySent: Int { stream == nil ? bodyBytes : streamed }
    }

    /// A streaming body being sent.
    struct StreamState {
        let body: any StreamingBody
        let chunked: Bool
        let blockSize: Int
        var position: UInt64 = 0
        /// Bytes read from the body that the socket did not take yet.
        var leftover = Leftover()
        var progress = StreamProgress.unstarted

        /// The body had nothing to give: it is read again once its waker wakes the connection.
        var isWaiting: Bool { if case .waiting = progress { true } else { false } }
    }

    /// How far a streaming body is: one value, so that a body waiting before it started, or
    /// ended and still read, cannot be written down. The waker is given to the body when it
    /// starts; it wakes the connection when the body has more.
    enum StreamProgress {
        /// Not started yet: its first turn at the front starts it (`WorkStart.body`).
        case unstarted
        /// Read whenever the socket takes more.
        case reading(ConnectionWaker)
        /// The body had nothing: not read until its waker wakes the connection (or the server stops).
        case waiting(ConnectionWaker)
        /// The body ended: its answer is complete once what was read of it is written.
        case ended(ConnectionWaker)
        /// Its waker closed and the body told it is over (`finishStream`).
        case finished
    }

    /// What the last write action was, to read its answer.
    private enum Writing {
        case bytes
        case file
        case leftover
        /// The stream buffer's `start..<end`.
        case buffer(Int, Int)
    }

    static let outputHighWater = 1 << 20
    static let stashHeadCapacity = 16 << 10
    /// A connection that closes lingers this long after its last answer (or until the client closes)…
    static let lingerTime: UInt64 = 2_000_000
    /// …and drops at most this many bytes meanwhile.
    static let lingerBytes = 256 << 10

    // MARK: - Environment

    /// The server, the client, the clock, the loop's buffers (bytes are parsed where they land
    /// in `readBuffer`, and a body goes from there to its reader; a streaming body's piece is
    /// read into `streamBuffer` and written from there), the way back (`handback`).
    package let parts: MachineParts
    /// Handed to a body's consumer that is behind; it calls it (any thread) when it can take more.
    private let bodyReady: @Sendable () -> Void
    private let parser: RequestParser
    /// The connection's interim responses (`RequestContext.sendInterim`), taken after each lifecycle call.
    private let interims: InterimSink

    // MARK: - Input

    /// What the stash holds, from its offset 0: one value, so that a head in progress with
    /// unparsed bytes before it, or a read into the stash with no head in it, cannot be written.
    private enum Kept {
        /// Nothing: the stash is released (an idle connection holds no buffer).
        case nothing
        /// A head in progress, `0..<end`, whose spans point into it: the next read goes right
        /// after it, into the stash.
        case head(end: Int)
        /// What followed a request the connection must answer first, `0..<end` (never empty):
        /// parsed when the connection may go on.
        case unparsed(end: Int)
    }

    /// Unparsed bytes kept between reads (`kept` says what they are).
    private var stash: UnsafeMutableRawPointer?
    private var stashCapacity = 0
    private var kept = Kept.nothing
    /// Where the bytes kept end.
    private var stashEnd: Int {
        switch kept {
        case .nothing: 0
        case .head(let end), .unparsed(let end): end
        }
    }
    /// The stash holds a head in progress whose spans point into it.
    private var stashHoldsHead: Bool { if case .head = kept { true } else { false } }
    /// Whether the socket may be read now (`ReadReadiness`).
    private var readiness = ReadReadiness()

    // MARK: - Requests

    /// The request being read or awaited, until its answer is queued (`Exchange.http10`: it
    /// came in HTTP/1.0).
    private var request: Exchange?
    /// A later reply, or the landing of a step on the route's executor, is awaited for `request`.
    private var waiting: Bool { request?.awaited != nil }
    /// Work decided while parsing, started (`ConnectionAction.start`) once the event is over:
    /// a later reply's, or the request's next step on its route's executor.
    private var toStart: WorkStart?
    /// Whether the connection goes on after the answers queued: one value, as dropping the
    /// input always means closing after them. It only ever moves down the list.
    private enum Persistence {
        /// Requests follow one another.
        case keepAlive
        /// The request being read (its body too) is the last: no later one is parsed, and the
        /// connection closes once the answers queued are written.
        case closeAfterAnswers
        /// What the client sends is dropped (an answer came before the body's end, a head was
        /// refused, a body timed out, the client shut its side); the connection closes once the
        /// answers queued are written.
        case discarding
    }

    private var persistence = Persistence.keepAlive
    /// What follows is dropped, then the connection closes (`Persistence.discarding`).
    private var discarding: Bool { persistence == .discarding }

    // MARK: - Output

    private var queue: [Outgoing] = []
    private var queuedBytes = 0
    /// Whether the front answer may be written now (`Output`).
    private var output = Output<Writing>.ready
    private var outputBlocked: Bool { output.isBlocked }

    // MARK: - Time

    /// The latest time an event brought.
    private var now: UInt64
    private var lastActivity: UInt64
    /// When the connection began waiting for a request's header section (opened, or the last
    /// request ended); nil while a request is being read or served.
    package private(set) var waitingForHeadSince: UInt64?

    /// The connection holds its place for as long as its client likes, with no work of the
    /// server's under way: a request body being read, or a streaming answer (an event stream)
    /// being sent. At the connection limit such connections may be pushed out (`EventLoop`).
    var isLongLived: Bool {
        guard waitingForHeadSince == nil, !isEnding, !waiting else { return false }
        if let request { return request.hasBody && !discarding }
        return queue.contains { $0.stream != nil }
    }
    /// The body's consumer is behind (`RequestLifecycle.bodyMustWait`): nothing more is read
    /// until it calls back; since when.
    private var bodyPausedSince: UInt64?

    // MARK: - The end

    /// How far the connection is from its end.
    private enum Phase {
        /// Requests are read and answered.
        case open(Open)
        /// The last answer of a connection that closes went out: its write side is shut next.
        case shuttingDown
        /// The write side is shut: what the client still sends is dropped until it closes, `until`
        /// passes or more than `budget` bytes more came (`lingerTime`, `lingerBytes`).
        case lingering(until: UInt64, budget: Int)
        /// The connection is to close: the next action is `close`.
        case closing
        /// `close` or `handOff` was returned.
        case finished
    }

    /// What an open connection is: each case follows the one before.
    private enum Open {
        /// Nothing but the start of the HTTP/2 preface has been read, if anything: `PRI *
        /// HTTP/2.0…` makes this an HTTP/2 connection with prior knowledge (RFC 9113 §3.3). No
        /// request has begun.
        case firstBytes
        /// An HTTP/1.1 connection: requests follow one another as `persistence` says.
        case http1
        /// The server stops (`quiesce`): the next answer closes the connection, and streaming
        /// bodies end. Apart from `persistence`: a head in progress, a body, and requests
        /// pipelined behind answers being written are still read and answered meanwhile.
        case quiescing
    }

    private var phase = Phase.open(.firstBytes)
    /// The server stops (`Open.quiescing`).
    private var quiescing: Bool { if case .open(.quiescing) = phase { true } else { false } }

    /// `close` or `handOff` was returned.
    var isFinished: Bool { if case .finished = phase { true } else { false } }
    /// The connection closes at the next action, or did.
    private var isEnding: Bool {
        switch phase {
        case .closing, .finished: true
        case .open, .shuttingDown, .lingering: false
        }
    }
    private var isLingering: Bool { if case .lingering = phase { true } else { false } }

    /// A connection just accepted (`parts.now`), waiting for its first request.
    package init(_ parts: MachineParts) {
        self.parts = parts
        bodyReady = parts.handback.bodyReady(stream: 0)
        interims = InterimSink(loop: parts.handback.loop, connection: parts.handback.token)
        now = parts.now
        lastActivity = parts.now
        waitingForHeadSince = parts.now
        parser = RequestParser(maxTarget: FramingCheck.maxTargetLength, maxHead: FramingCheck.maxParsedHead)
    }

    deinit { stash?.deallocate() }

    // MARK: - Events from the socket

    /// The socket can be read (`read`) and/or written (`write`).
    package mutating func ready(read: Bool, write: Bool) -> Action {
        output.socketWritable(write)
        readiness.socketReady(read: read, write: write)
        return next()
    }

    /// The TLS handshake is done (HTTPS): requests may come.
    mutating func handshakeFinished(now: UInt64) -> Action {
        self.now = now
        lastActivity = now
        readiness.begin()
        return next()
    }

    /// The last `read` (or `drain`) put `count` (> 0) bytes into its buffer. `more`: the TLS
    /// session holds more decrypted bytes than the socket will announce.
    package mutating func received(_ count: Int, now: UInt64, more: Bool = false) -> Action {
        self.now = now
        lastActivity = now
        if case .lingering(let until, let budget) = phase {
            phase = .lingering(until: until, budget: budget - count)
            if budget - count <= 0 { finishClose() }
            return next()
        }
        // The read went into the stash, right after the head in progress, when it held one
        // (`readAction`); nothing changes what it holds between a read and its answer.
        let headEnd: Int? = if case .head(let end) = kept { end } else { nil }
        let room = headEnd.map { stashCapacity - $0 } ?? parts.readBuffer.count
        readiness.received(count, room: room, more: more)
        if discarding { return next() }
        if case .open(.firstBytes) = phase {
            let bytes =
                headEnd.map { UnsafeRawBufferPointer(start: stash!, count: $0 + count) }
                ?? UnsafeRawBufferPointer(start: parts.readBuffer.baseAddress, count: count)
            switch HTTP2StateMachine.preface(in: bytes) {
            case .begun:
                phase = .finished
                return .handOff(bytes)
            case .undecided:
                break  // too short to tell: kept as a head in progress, decided when more comes
            case .absent:
                phase = .open(.http1)
            }
        }
        if let from = headEnd {
            kept = .head(end: from + count)
            process(UnsafeRawPointer(stash!), from: from, to: from + count, inStash: true)
        } else {
            process(UnsafeRawPointer(parts.readBuffer.baseAddress!), from: 0, to: count, inStash: false)
        }
        return next()
    }

    /// The socket had nothing to read.
    package mutating func readBlocked() -> Action {
        readiness.blocked()
        return next()
    }

    /// The TLS session can read on only once the socket takes bytes.
    package mutating func readNeedsWritable() -> Action {
        readiness.needsWritable()
        return next()
    }

    /// The peer closed its side (a read returned 0).
    package mutating func peerClosed() -> Action {
        readiness.blocked()
        if isLingering || (request == nil && queue.isEmpty) {
            finishClose()
        } else if request != nil, !waiting, !discarding {
            terminate(.clientAbort)  // the client hung up inside a request
        } else {
            // Answers are still owed (a later reply, a response being written): the client may
            // have only shut its write side. Stop reading; the writes tell.
            persistence = .discarding
            if queue.isEmpty, !waiting { finishClose() }
        }
        return next()
    }

    /// A read failed (not for lack of bytes).
    package mutating func readFailed() -> Action {
        if isLingering { finishClose() } else { terminate(.readError) }
        return next()
    }

    /// The socket reported an error or hang-up with nothing to read.
    package mutating func hungUp() -> Action {
        terminate(.clientAbort)
        return next()
    }

    /// The last write action's socket took `count` bytes (0 from `sendFile`: the file ended early).
    package mutating func wrote(_ count: Int, now: UInt64) -> Action {
        self.now = now
        guard case .writing(let writing) = output, !queue.isEmpty else { return next() }
        output = .ready
        if count > 0 { lastActivity = now }
        switch writing {
        case .bytes:
            queue[0].sent += count
            if queue[0].sent < queue[0].head.count + queue[0].body.count { output = .blocked }
        case .file:
            guard count > 0 else {
                terminate(.clientAbort)  // the file is shorter than announced
                return next()
            }
            queue[0].file!.offset += count
            queue[0].file!.remaining -= count
        case .leftover:
            if !queue[0].stream!.leftover.wrote(count) { output = .blocked }
        case .buffer(let start, let end):
            if start + count < end {
                keepStreamBytes(from: start + count, to: end)
                output = .blocked
            }
        }
        return next()
    }

    /// The last write action's socket took nothing: wait until it is writable.
    package mutating func writeBlocked() -> Action {
        if case .writing(.buffer(let start, let end)) = output { keepStreamBytes(from: start, to: end) }
        output = .blocked
        return next()
    }

    /// A write failed: the client is gone.
    package mutating func writeFailed() -> Action {
        output.failed()
        terminate(.clientAbort)
        return next()
    }

    /// The last `shutdownWrites` was done.
    package mutating func performed() -> Action {
        next()
    }

    // MARK: - Events from elsewhere

    /// The sweep, at `now`; the loop last polled at `polledAt`. `unread`: whether bytes wait
    /// unread (nil: not asked yet — the answer is `checkUnread` when it matters). A deadline
    /// that passed while the loop had not polled since and bytes wait unread is the loop's
    /// lateness, not the client's.
    package mutating func tick(now: UInt64, polledAt: UInt64, unread: Bool? = nil) -> Action {
        guard !isEnding else { return next() }
        self.now = now
        if case .lingering(let until, _) = phase {
            if now >= until { finishClose() }
            return next()
        }
        let configuration = parts.server.configuration
        let headerTimeout = UInt64(configuration.headerTimeout * 1_000_000)
        if let since = waitingForHeadSince, queue.isEmpty, now >= since + headerTimeout {
            switch Self.late(since + headerTimeout, polledAt: polledAt, unread: unread) {
            case true?:
                parts.server.counters.timedOut.add(1, ordering: .relaxed)
                terminate(.timeout)
                return next()
            case nil: return .checkUnread
            case false?: break
            }
        }
        if bodyPausedSince != nil { return next() }  // the server is behind, not the client
        if let request, request.awaited == nil, request.hasBody, configuration.minimumBodyRate > 0,
            request.isTooSlow(now: now, grace: headerTimeout, rate: configuration.minimumBodyRate)
        {
            parts.server.counters.slowBodies.add(1, ordering: .relaxed)
            bodyTimedOut("arrives slower than \(configuration.minimumBodyRate) bytes a second")
            return next()
        }
        let streamWaiting = queue.first?.stream?.isWaiting == true
        let idleDeadline = lastActivity + UInt64(configuration.idleTimeout) * 1_000_000
        if !waiting, !streamWaiting, now >= idleDeadline {
            switch Self.late(idleDeadline, polledAt: polledAt, unread: unread) {
            case true?:
                if request?.hasBody == true, !discarding {
                    bodyTimedOut("stopped arriving for \(configuration.idleTimeout) s")
                } else {
                    terminate(.timeout)
                }
            case nil: return .checkUnread
            case false?: break
            }
        }
        return next()
    }

    /// A later reply is ready: `render` makes its response.
    package mutating func resume(stream: Int32 = 0, now: UInt64, _ render: () throws -> Response) -> Action {
        guard !isEnding, let response = request?.resume(render) else { return next() }
        self.now = now
        takeInterims()
        answer(response)
        return next()
    }

    /// The step that went away on `trip` to its route's executor is back: its action is carried
    /// out where the request was (its head or its end), and reading goes on. nil when the
    /// connection no longer waits for it (the request ended meanwhile: the caller completes it).
    package mutating func landed(stream: Int32 = 0, _ trip: RequestLifecycle.Trip, now: UInt64) -> Action? {
        guard !isEnding, let landing = request?.landed(trip, now: now) else { return nil }
        self.now = now
        takeInterims()
        if landing.atHead {
            // The time away is the server's (the body's rate counts from now), not idle time.
            lastActivity = now
            if discarding, case .proceed = landing.action {
                terminate(.clientAbort)  // the client went away before its body could be read
                return next()
            }
            act(request!.headActed(landing.action))
        } else {
            act(request!.bodyActed(landing.action))
        }
        return next()
    }

    /// Interim responses were queued outside a lifecycle call (sent from the route's executor
    /// and posted to the loop): they go out now.
    package mutating func interimsQueued() -> Action {
        guard !isEnding else { return next() }
        takeInterims()
        return next()
    }

    /// The body's consumer caught up: what was kept is parsed, and reading resumes. The pause
    /// does not count against the body's minimum rate, nor as idle time.
    package mutating func bodyReady(stream: Int32 = 0, now: UInt64) -> Action {
        guard let since = bodyPausedSince, !isEnding else { return next() }
        self.now = now
        bodyPausedSince = nil
        request?.resumed(after: MonotonicClock.since(since, to: now), now: now)
        lastActivity = now
        return next()
    }

    /// A streaming body has something for us.
    package mutating func streamWoken(stream: Int32 = 0) -> Action {
        guard !queue.isEmpty, queue[0].stream != nil else { return next() }
        switch queue[0].stream!.progress {
        case .reading(let waker), .ended(let waker): waker.woken()
        case .waiting(let waker):
            waker.woken()
            queue[0].stream!.progress = .reading(waker)
        case .unstarted, .finished: break
        }
        return next()
    }

    /// The server stops: a connection waiting for a request closes; streams end.
    package mutating func quiesce() -> Action {
        guard !isEnding else { return next() }
        switch phase {
        case .open(.firstBytes):
            // No request: at most the start of HTTP/2's preface, which would begin a connection.
            terminate(.shutdown)
            return next()
        case .open: phase = .open(.quiescing)
        case .shuttingDown, .lingering, .closing, .finished: break
        }
        if request == nil, queue.isEmpty, !stashHoldsHead {
            terminate(.shutdown)
        } else if !queue.isEmpty, case .waiting(let waker)? = queue[0].stream?.progress {
            queue[0].stream!.progress = .reading(waker)
        }
        return next()
    }

    /// A head that could not be parsed, or bytes that are not HTTP: answered with `error`
    /// through the router's middleware; the connection closes after it. `target` stands for
    /// the request in the access log when no request line was read (`<plain-http-on-https-port>`).
    mutating func refuse(_ error: HTTPError, target: String = "") -> Action {
        refuseMalformed(error, target: target)
        return next()
    }

    /// Ends everything now: a request in flight and every queued answer end with `outcome`.
    package mutating func abort(_ outcome: CompletedExchange.Outcome) -> Action {
        terminate(outcome)
        return next()
    }

    // MARK: - The next action

    /// What to do now, from the state: start what is due, write what is queued, parse what
    /// was kept, read, or wait.
    private mutating func next() -> Action {
        while true {
            switch phase {
            case .finished: return .close
            case .closing:
                phase = .finished
                return .close
            case .open, .shuttingDown, .lingering: break
            }
            // Work handed to other threads once the event is over, never from inside the parser.
            if let work = toStart {
                toStart = nil
                return .start(work)
            }
            if case .shuttingDown = phase {
                phase = .lingering(until: now + Self.lingerTime, budget: Self.lingerBytes)
                kept = .nothing
                releaseStashIfEmpty()
                return .shutdownWrites
            }
            if isLingering {
                return readiness.isReady ? .drain(parts.readBuffer) : .wait(Interest(read: true, write: false))
            }
            if !outputBlocked, !queue.isEmpty {
                switch writeFront() {
                case .act(let action): return action
                case .again: continue
                case .idle: break
                }
            }
            if mayParse || requestInBody {
                if case .unparsed = kept {
                    processStash()
                    continue
                }
                if readiness.isReady {
                    if let action = readAction() { return action }
                    continue
                }
            }
            return .wait(interest)
        }
    }

    /// Bytes of buffer the connection holds of its own (the stash): none while it is idle.
    var heldBufferBytes: Int { stashCapacity }

    /// What the socket should report.
    var interest: Interest {
        Interest(read: isLingering || mayParse || requestInBody, write: (outputBlocked && !queue.isEmpty) || readiness.wantsWrite)
    }

    /// Where the next read goes: the stash, right after a head in progress, or the loop's buffer.
    /// nil when the head can grow no more (answered `431`).
    private mutating func readAction() -> Action? {
        if case .head(let end) = kept {
            ensureStash(capacity: Self.stashHeadCapacity)
            let room = stashCapacity - end
            if room == 0 {
                refuseMalformed(HTTPError(.requestHeaderFieldsTooLarge, detail: "the request's header section is too large", closesConnection: true))
                return nil
            }
            return .read(UnsafeMutableRawBufferPointer(start: stash! + end, count: room))
        }
        return .read(parts.readBuffer)
    }

    // MARK: - Parsing

    /// Whether the next request may be parsed now: not while an answer that holds a file (a
    /// download) waits, so that a connection holds one file at most — a pipelining client that
    /// reads nothing would otherwise hold a descriptor per request, its answers' heads far
    /// below `outputHighWater`.
    private var mayParse: Bool {
        !waiting && persistence == .keepAlive && bodyPausedSince == nil && !isEnding && !isLingering
            && queue.first?.stream == nil && queuedBytes < Self.outputHighWater && !queue.contains { $0.file != nil }
    }

    /// A request's body is being read.
    private var requestInBody: Bool { request?.hasBody == true && requestInProgress }

    /// A request is being parsed, up to its end, and nothing waits before that.
    private var requestInProgress: Bool {
        request != nil && !waiting && !discarding && bodyPausedSince == nil && !isEnding
    }

    private mutating func processStash() {
        process(UnsafeRawPointer(stash!), from: 0, to: stashEnd, inStash: true)
    }

    /// Parses `base[from..<to]`; keeps what could not be parsed yet.
    private mutating func process(_ base: UnsafeRawPointer, from: Int, to: Int, inStash: Bool) {
        let parser = self.parser
        let outcome = parser.execute(base, from: from, to: to) { event in
            switch event {
            case .head: headComplete(base)
            case .body(let offset, let count): bodyReceived(UnsafeRawBufferPointer(start: base + offset, count: count))
            case .end: requestComplete()
            }
            return !isEnding && (mayParse || requestInProgress)
        }
        guard !isEnding else { return }
        switch outcome {
        case .failed(let error):
            if let line = parser.unknownMethod(base, to: to) {
                refuseMalformed(parts.server.router.refusal(method: line.method, target: line.target) ?? error, target: line.target)
            } else {
                refuseMalformed(error)
            }
        case .paused(let position):
            keep(base, from: position, to: to, inStash: inStash, head: false)
        case .consumed:
            if parser.inHead {
                keep(base, from: parser.messageStart, to: to, inStash: inStash, head: true)
            } else {
                kept = .nothing
                releaseStashIfEmpty()
            }
        }
    }

    /// Keeps `base[from..<to]` at the front of the stash; `head`: they are a head in progress.
    private mutating func keep(_ base: UnsafeRawPointer, from: Int, to: Int, inStash: Bool, head: Bool) {
        let count = to - from
        if inStash {
            if count > 0, head || from > 0 {
                memmove(stash!, stash! + from, count)
            }
        } else {
            ensureStash(capacity: max(count, head ? Self.stashHeadCapacity : count))
            memcpy(stash!, base + from, count)
        }
        if head { parser.rebase(from) }
        kept = head ? .head(end: count) : count > 0 ? .unparsed(end: count) : .nothing
        releaseStashIfEmpty()
    }

    private mutating func ensureStash(capacity: Int) {
        guard stashCapacity < capacity else { return }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        if let stash {
            if stashEnd > 0 { memcpy(grown, stash, stashEnd) }
            stash.deallocate()
        }
        stash = grown
        stashCapacity = capacity
    }

    /// An idle connection keeps no buffer.
    private mutating func releaseStashIfEmpty() {
        if let stash, case .nothing = kept {
            stash.deallocate()
            self.stash = nil
            stashCapacity = 0
        }
    }

    // MARK: - Requests

    private mutating func headComplete(_ base: UnsafeRawPointer) {
        decidedHTTP1()
        let parsed = parser.head(base)
        let http10 = parsed.version == "HTTP/1.0"
        // RFC 9110 §15.2: no 1xx to an HTTP/1.0 client.
        interims.setOpen(!http10)
        // Made in place, and the action moved on: a copy of either costs a value witness call.
        request = Exchange(
            server: parts.server, target: parsed.target, address: parts.address, clock: parts.clock, now: now, interim: http10 ? nil : interims,
            stream: 0, isHead: parsed.method == .head, hasBody: parser.hasBody, http10: http10)
        waitingForHeadSince = nil
        // Known at the head: a request that ends there may be answered before its end is parsed.
        if !parser.keepAlive { closeAfterAnswers() }
        let lifecycle = request!.lifecycle
        let action = lifecycle.headerComplete(
            RequestHead(
                method: parsed.method, target: parsed.target, version: parsed.version,
                headers: parsed.headers, remoteAddress: parts.address, bodyFollows: nil,
                framing: (parser.hasBody, parser.declaredLength)))
        takeInterims()
        act(request!.headActed(consume action))
    }

    /// A request began, or one was refused: the connection is not HTTP/2's.
    private mutating func decidedHTTP1() {
        if case .open(.firstBytes) = phase { phase = .open(.http1) }
    }

    /// Carries out what the request's exchange asks next, in HTTP/1.1: an answer that comes
    /// before the body's end drops the rest of the connection's input.
    private mutating func act(_ next: consuming Exchange.Next) {
        if request?.discarding == true { persistence = .discarding }
        switch consume next {
        case .proceed: break
        case .sendContinue: queueRaw(ResponseHead.interim(.continue, headers: HTTPHeaders()))
        case .answer(let response): answer(response)
        case .start(let work): toStart = work
        case .fail: terminate(.error)
        case .pause: bodyPausedSince = now
        }
    }

    private mutating func bodyReceived(_ chunk: UnsafeRawBufferPointer) {
        guard request != nil, !discarding else { return }
        let ready = bodyReady
        let next = request!.receive(chunk, then: ready)
        takeInterims()
        act(next)
    }

    private mutating func requestComplete() {
        guard request != nil, !discarding else { return }
        if !parser.keepAlive { closeAfterAnswers() }
        // A consumer that asked to wait on the last piece: nothing more of this body is to be
        // read, so there is nothing to pause (its call back finds nothing to resume).
        bodyPausedSince = nil
        let next = request!.bodyComplete()
        takeInterims()
        act(next)
    }

    /// A head that could not be parsed: answered through the router's middleware; the
    /// connection closes after it.
    private mutating func refuseMalformed(_ error: HTTPError, target: String = "") {
        if request == nil {
            // Nothing of the request before it applies (a HEAD's answer has no body; HTTP/1.0's…).
            request = Exchange(
                server: parts.server, target: target, address: parts.address, clock: parts.clock, now: now, interim: nil, stream: 0, isHead: false,
                hasBody: false)
        }
        decidedHTTP1()
        request!.refused()
        waitingForHeadSince = nil
        persistence = .discarding
        toStart = nil
        let action = request!.lifecycle.malformed(error)
        takeInterims()
        if case .respond(let response) = action {
            answer(response)
        } else {
            terminate(.error)
        }
    }

    /// Interim responses the last lifecycle call sent go out before anything it answered.
    private mutating func takeInterims() {
        for interim in interims.take() { queueRaw(ResponseHead.interim(interim.status, headers: interim.headers)) }
    }

    // MARK: - Answers

    /// Queues the answer of `request`.
    private mutating func answer(_ response: Response) {
        guard let exchange = request else { return }
        request = nil
        let lifecycle = exchange.lifecycle
        let requestIsHead = exchange.isHead
        let requestHTTP10 = exchange.http10
        interims.setOpen(false)
        let closesAfter =
            persistence != .keepAlive || quiescing || parts.server.isStopping
            || response.headers["Connection"].map { HTTPHeaders.equal($0, "close") } == true
        let status = response.status.code
        let bodyAllowed = status >= 200 && status != 204 && status != 304
        let bytes: [UInt8]
        var separate: [UInt8] = []
        var bodyBytes = 0
        var closes = closesAfter
        var file: (fd: Int32, offset: Int, remaining: Int)?
        var stream: StreamState?
        switch response.payload {
        case .bytes:
            // A small body goes in the head's array; a large one is written from its own.
            if bodyAllowed, !requestIsHead { bodyBytes = response.body.count }
            bytes = ResponseHead.head(
                response, framing: bodyAllowed ? .length(UInt64(response.body.count)) : .none, keepAlive: !closesAfter,
                http10: requestHTTP10, date: parts.date, body: bodyBytes > 0 && bodyBytes <= 4096)
            if bodyBytes > 4096 { separate = response.body }
        case .file(let fileFD, let offset, let length):
            bytes = ResponseHead.head(
                response, framing: .length(length), keepAlive: !closesAfter, http10: requestHTTP10, date: parts.date, body: false)
            bodyBytes = Int(length)
            if requestIsHead || length == 0 { Glibc.close(fileFD) } else { file = (fileFD, Int(offset), Int(length)) }
        case .stream(let body, let length, let blockSize):
            let chunked = length == nil && !requestHTTP10
            closes = closesAfter || (length == nil && requestHTTP10)
            let framing: ResponseHead.Framing = !bodyAllowed ? .none : length.map { .length($0) } ?? (chunked ? .chunked : .closeDelimited)
            bytes = ResponseHead.head(response, framing: framing, keepAlive: !closes, http10: requestHTTP10, date: parts.date, body: false)
            if requestIsHead || !bodyAllowed {
                body.finish()
            } else {
                stream = StreamState(body: body, chunked: chunked, blockSize: min(blockSize, Self.streamPiece))
            }
        }
        if closes { closeAfterAnswers() }
        queuedBytes += bytes.count + separate.count
        queue.append(
            Outgoing(
                head: bytes, body: separate, file: file, stream: stream, lifecycle: lifecycle, status: status, bodyBytes: bodyBytes,
                closeAfter: closes))
    }

    /// No request after the one being read: the connection closes once the answers queued are
    /// written (unless it drops its input already).
    private mutating func closeAfterAnswers() {
        if persistence == .keepAlive { persistence = .closeAfterAnswers }
    }

    /// Bytes that are not an answer of their own (an interim response).
    private mutating func queueRaw(_ bytes: [UInt8]) {
        queuedBytes += bytes.count
        queue.append(Outgoing(head: bytes, body: [], lifecycle: nil, status: 0, closeAfter: false))
    }

    // MARK: - Writing

    private enum Step {
        case act(Action)
        /// Progress without I/O: look again.
        case again
        /// The front waits (a stream with nothing to send).
        case idle
    }

    /// The largest piece of a streaming body read at once (the loop's stream buffer holds it
    /// with a chunk's framing).
    static let streamPiece = 64 << 10
    /// Room before a piece for its chunk-size line (16 hex digits at most… of which 64 KiB needs 5) and CRLF.
    private static let chunkPrefix = 10

    private mutating func writeFront() -> Step {
        let sent = queue[0].sent
        let headCount = queue[0].head.count
        if sent < headCount + queue[0].body.count {
            output = .writing(.bytes)
            if sent < headCount { return .act(.write(queue[0].head, from: sent, queue[0].body)) }
            return .act(.write(queue[0].body, from: sent - headCount, []))
        }
        if let file = queue[0].file {
            if file.remaining > 0 {
                output = .writing(.file)
                return .act(.sendFile(fd: file.fd, offset: file.offset, count: min(file.remaining, 1 << 20)))
            }
            Glibc.close(file.fd)
            queue[0].file = nil
        }
        if queue[0].stream != nil { return writeStream() }
        finishFront()
        return .again
    }

    private mutating func writeStream() -> Step {
        if case .unstarted = queue[0].stream!.progress {
            let waker = ConnectionWaker(parts.handback, stream: 0)
            queue[0].stream!.progress = .reading(waker)
            return .act(.start(.body(queue[0].stream!.body, waker, stream: 0)))
        }
        if !queue[0].stream!.leftover.isEmpty {
            output = .writing(.leftover)
            return .act(queue[0].stream!.leftover.write)
        }
        let waker: ConnectionWaker
        switch queue[0].stream!.progress {
        case .reading(let current): waker = current
        case .waiting: return .idle
        case .ended, .finished, .unstarted:
            Self.finishStream(&queue[0].stream!)
            finishFront()
            return .again
        }
        // Room in front of the data for a chunk's size line, and after it for its CRLF.
        let chunked = queue[0].stream!.chunked
        let prefix = chunked ? Self.chunkPrefix : 0
        let room = min(queue[0].stream!.blockSize, parts.streamBuffer.count - prefix - 7)
        let base = parts.streamBuffer.baseAddress!
        let read: StreamRead =
            quiescing || parts.server.isStopping
            ? .end
            : queue[0].stream!.body.read(into: UnsafeMutableRawBufferPointer(start: base + prefix, count: room), at: queue[0].stream!.position)
        var start = prefix
        var end = prefix
        switch read {
        case .bytes(let count):
            guard count > 0 else {
                queue[0].stream!.progress = .waiting(waker)
                return .idle
            }
            queue[0].stream!.position += UInt64(count)
            end = prefix + count
            if chunked {
                start = Self.writeChunkSize(count, before: prefix, in: base)
                parts.streamBuffer[end] = 0x0D
                parts.streamBuffer[end + 1] = 0x0A
                end += 2
            }
        case .wait:
            queue[0].stream!.progress = .waiting(waker)
            return .idle
        case .end:
            queue[0].stream!.progress = .ended(waker)
            guard chunked else { return .again }
            let last: StaticString = "0\r\n\r\n"
            (base + start).copyMemory(from: last.utf8Start, byteCount: 5)
            end = start + 5
        case .failed:
            Self.finishStream(&queue[0].stream!)
            terminate(.clientAbort)
            return .again
        }
        output = .writing(.buffer(start, end))
        return .act(.writeBuffer(UnsafeRawBufferPointer(start: base + start, count: end - start)))
    }

    /// Writes `count` in hex and CRLF just before `offset`; where it begins.
    static func writeChunkSize(_ count: Int, before offset: Int, in base: UnsafeMutableRawPointer) -> Int {
        var position = offset - 2
        base.storeBytes(of: 0x0D, toByteOffset: position, as: UInt8.self)
        base.storeBytes(of: 0x0A, toByteOffset: position + 1, as: UInt8.self)
        var value = count
        repeat {
            position -= 1
            let digit = UInt8(value & 0xF)
            base.storeBytes(of: digit < 10 ? 0x30 + digit : 0x57 + digit, toByteOffset: position, as: UInt8.self)
            value >>= 4
        } while value > 0
        return position
    }

    /// What the socket did not take of the stream buffer's `start..<end` is kept by the stream
    /// (the buffer is the loop's, shared by its connections).
    private mutating func keepStreamBytes(from start: Int, to end: Int) {
        guard !queue.isEmpty, queue[0].stream != nil else { return }
        queue[0].stream!.leftover.keep(parts.streamBuffer, from: start, to: end)
    }

    private static func finishStream(_ stream: inout StreamState) {
        switch stream.progress {
        case .finished: return
        case .unstarted: break
        case .reading(let waker), .waiting(let waker), .ended(let waker): waker.close()
        }
        stream.progress = .finished
        stream.body.finish()
    }

    /// The front answer is written: its request is complete.
    private mutating func finishFront() {
        // Moved out, not copied: usually the only answer queued.
        let finished = queue.count == 1 ? queue.removeLast() : queue.removeFirst()
        queuedBytes -= finished.head.count + finished.body.count
        if let lifecycle = finished.lifecycle { complete(lifecycle, status: finished.status, bytes: finished.bodySent, outcome: .sent) }
        if finished.closeAfter {
            phase = .shuttingDown
            return
        }
        if queue.isEmpty, request == nil { waitingForHeadSince = now }
    }

    // MARK: - The end

    private func complete(_ lifecycle: RequestLifecycle, status: Int, bytes: Int, outcome: CompletedExchange.Outcome) {
        Exchange.complete(lifecycle, status: status, bytes: bytes, outcome: outcome, server: parts.server)
    }

    /// Ends every request in flight and queued answer with `outcome`; the connection closes.
    private mutating func terminate(_ outcome: CompletedExchange.Outcome) {
        guard !isEnding else { return }
        interims.setOpen(false)
        toStart = nil
        if let request {
            self.request = nil
            complete(request.lifecycle, status: 0, bytes: 0, outcome: outcome)
        }
        let queued = queue
        queue = []
        queuedBytes = 0
        for var outgoing in queued {
            if let file = outgoing.file { Glibc.close(file.fd) }
            if outgoing.stream != nil { Self.finishStream(&outgoing.stream!) }
            if let lifecycle = outgoing.lifecycle { complete(lifecycle, status: outgoing.status, bytes: outgoing.streamed, outcome: outcome) }
        }
        phase = .closing
    }

    /// The server gives up on the body being read: `408` problem+json through the request's
    /// middleware, then the connection closes (what else arrives is dropped) — never a close
    /// without an answer, which a proxy in front would turn into a `502` for a request it may
    /// not resend. Without a lifecycle that can still answer, the connection just closes.
    private mutating func bodyTimedOut(_ why: String) {
        guard request != nil, !waiting, !discarding else {
            terminate(.timeout)
            return
        }
        let next = request!.bodyTimedOut(why, closesConnection: true)
        takeInterims()
        guard case .answer(let response) = next else {
            terminate(.timeout)
            return
        }
        persistence = .discarding
        bodyPausedSince = nil
        answer(response)
    }

    /// Closes once nothing is owed; what still is ends as a client abort.
    private mutating func finishClose() {
        guard !isEnding else { return }
        if !queue.isEmpty || request != nil {
            terminate(.clientAbort)
            return
        }
        phase = .closing
    }
}
