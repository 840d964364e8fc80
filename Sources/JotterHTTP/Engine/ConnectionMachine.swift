/// What a connection's state machine asks its driver to do next — the same for HTTP/1.1
/// (`HTTP1StateMachine`) and HTTP/2 (`HTTP2StateMachine`), so one driver does it on the event
/// loop (`SocketDriver`) and one in memory (`MemoryConnection`).
///
/// Each action that does something is answered by the event that says how it went (below), and
/// the next action follows; `wait` ends the chain until the socket or another thread has news;
/// `close` and `handOff` end the connection.
package enum ConnectionAction {
    /// Read from the connection into `buffer` (answer: `received`, `readBlocked`,
    /// `readNeedsWritable`, `peerClosed`, `readFailed`).
    case read(UnsafeMutableRawBufferPointer)
    /// Lingering: read and drop what the client still sends, TLS records included, from the
    /// socket itself (same answers as `read`).
    case drain(UnsafeMutableRawBufferPointer)
    /// Write `first[from...]` then `second` in one `writev` (answer: `wrote`, `writeBlocked`,
    /// `writeFailed`).
    case write([UInt8], from: Int, [UInt8])
    /// Write these bytes of the loop's stream buffer (a streaming body's piece, HTTP/2 frames).
    case writeBuffer(UnsafeRawBufferPointer)
    /// Send `count` bytes of the open file `fd` from `offset` (`sendfile`; over TLS read into
    /// the loop's stream buffer and written). `wrote(0)` means the file ended early.
    case sendFile(fd: Int32, offset: Int, count: Int)
    /// Shut the write side (TLS: close_notify first); then the connection lingers (answer: `performed`).
    case shutdownWrites
    /// Start work outside the machine — user code or another thread — now that the event that
    /// decided it is over (never from inside the parser or nghttp2's callbacks): the driver
    /// hands it to the connection's `Handback` (answer: `performed`). Boxed (`indirect`): the
    /// work carries an existential, which inline would make every action a larger value to copy.
    indirect case start(WorkStart)
    /// The sweep needs to know whether bytes wait unread: ask `tick` again with `unread`.
    case checkUnread
    /// The connection speaks HTTP/2 with prior knowledge: hand it over with these bytes read
    /// so far (valid until the next call). Nothing more comes from this machine.
    case handOff(UnsafeRawBufferPointer)
    /// Nothing to do until the socket is ready for what `ConnectionInterest` says, or another event.
    case wait(ConnectionInterest)
    /// Close the connection. Every request was completed. Nothing more comes from this machine.
    case close
}

/// Work a machine starts outside itself (`ConnectionAction.start`); what it brings back comes
/// in as an event for its stream (0 on HTTP/1.1).
package enum WorkStart {
    /// A later reply's work; its render closure comes back as `resume`.
    case later(Later, stream: Int32)
    /// The request's next step, on its route's executor; it comes back as `landed`.
    case away(RequestLifecycle, stream: Int32)
    /// A streaming answer body begins; `waker` brings back its news as `wake`.
    case body(any StreamingBody, ConnectionWaker, stream: Int32)

    /// The stream the work is for.
    var stream: Int32 {
        switch self {
        case .later(_, let stream), .away(_, let stream), .body(_, _, let stream): stream
        }
    }
}

/// What the socket did not take of bytes written from the loop's stream buffer (a streaming
/// body's piece, HTTP/2 frames): copied out, since the buffer is the next connection's once the
/// action is done, and written before anything else.
struct Leftover {
    private(set) var bytes: [UInt8] = []
    private(set) var sent = 0

    /// Nothing is left to write.
    var isEmpty: Bool { sent >= bytes.count }

    /// The write of what is left.
    var write: ConnectionAction { .write(bytes, from: sent, []) }

    /// Keeps `buffer[start..<end]`.
    mutating func keep(_ buffer: UnsafeMutableRawBufferPointer, from start: Int, to end: Int) {
        bytes = Array(UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
        sent = 0
    }

    /// The socket took `count` bytes of it; true when it took all (the copy is let go).
    mutating func wrote(_ count: Int) -> Bool {
        sent += count
        guard sent >= bytes.count else { return false }
        bytes = []
        sent = 0
        return true
    }
}

/// Whether a connection reads now, the same on both protocols: the socket was reported readable
/// and has not run dry since — for at most `rounds` reads in a row, then the loop serves others —
/// or a TLS read waits until the socket takes bytes.
struct ReadReadiness {
    /// Reads in a row on one readiness report before the loop serves others.
    static let rounds = 16
    /// The socket was reported readable and has not run dry since.
    private(set) var isReady = false
    private var roundsLeft = 0
    /// The last read could not go on until the socket takes bytes (a TLS record to send).
    private(set) var wantsWrite = false

    /// The socket was reported readable (`read`) and/or writable (`write`: a TLS read that
    /// waited for it goes on).
    mutating func socketReady(read: Bool, write: Bool) {
        if write, wantsWrite {
            wantsWrite = false
            begin()
        }
        if read { begin() }
    }

    /// Reading begins, or goes on: bytes may wait in the socket already.
    mutating func begin() {
        isReady = true
        roundsLeft = Self.rounds
    }

    /// A read put `count` bytes into `room`; `more`: the TLS session holds more decrypted bytes
    /// than the socket will announce.
    mutating func received(_ count: Int, room: Int, more: Bool) {
        roundsLeft -= 1
        if count < room, !more { isReady = false }
        if roundsLeft <= 0 { isReady = false }
    }

    /// The socket had nothing to read.
    mutating func blocked() {
        isReady = false
    }

    /// The TLS session can read on only once the socket takes bytes.
    mutating func needsWritable() {
        isReady = false
        wantsWrite = true
    }
}

/// Whether a connection's output may be written now, the same on both protocols: one value, as
/// a write is out only while the socket is not known to be full. `Writing` is what a machine's
/// write action was, to read its answer.
enum Output<Writing> {
    /// Nothing is out: the next write goes when there is one.
    case ready
    /// A write action was returned: what it was, to read its answer.
    case writing(Writing)
    /// The socket did not take all of the last write: wait until it is writable.
    case blocked

    /// The socket did not take all of the last write.
    var isBlocked: Bool { if case .blocked = self { true } else { false } }

    /// The socket was reported writable (`writable`), or not: a blocked output may write again.
    mutating func socketWritable(_ writable: Bool) {
        if writable, isBlocked { self = .ready }
    }

    /// The write under way failed.
    mutating func failed() {
        if case .writing = self { self = .ready }
    }
}

/// What a connection waits for from its socket.
package struct ConnectionInterest: Equatable {
    package var read: Bool
    package var write: Bool

    package init(read: Bool, write: Bool) {
        self.read = read
        self.write = write
    }
}

/// The events both connections' state machines take. Each returns the next action. Time comes
/// in with the events (`now`, microseconds), read by the driver from the machine's `clock`; a
/// machine reads none itself, and hands that clock to each request's lifecycle, so every time of
/// a connection comes from one clock.
///
/// `stream` names a request on HTTP/2; HTTP/1.1 has one at a time and ignores it (0).
package protocol ConnectionMachine: ~Copyable {
    /// A machine for a connection that has just begun (accepted, or speaking HTTP/2 from now).
    init(_ parts: MachineParts)
    /// The socket can be read (`read`) and/or written (`write`).
    mutating func ready(read: Bool, write: Bool) -> ConnectionAction
    /// The last `read` (or `drain`) put `count` (> 0) bytes into its buffer. `more`: the TLS
    /// session holds more decrypted bytes than the socket will announce.
    mutating func received(_ count: Int, now: UInt64, more: Bool) -> ConnectionAction
    /// The socket had nothing to read.
    mutating func readBlocked() -> ConnectionAction
    /// The TLS session can read on only once the socket takes bytes.
    mutating func readNeedsWritable() -> ConnectionAction
    /// The peer closed its side (a read returned 0).
    mutating func peerClosed() -> ConnectionAction
    /// A read failed (not for lack of bytes).
    mutating func readFailed() -> ConnectionAction
    /// The socket reported an error or hang-up with nothing to read.
    mutating func hungUp() -> ConnectionAction
    /// The last write action's socket took `count` bytes (0 from `sendFile`: the file ended early).
    mutating func wrote(_ count: Int, now: UInt64) -> ConnectionAction
    /// The last write action's socket took nothing: wait until it is writable.
    mutating func writeBlocked() -> ConnectionAction
    /// A write failed: the client is gone.
    mutating func writeFailed() -> ConnectionAction
    /// The last `shutdownWrites` or `start` was done.
    mutating func performed() -> ConnectionAction
    /// The sweep, at `now`; the loop last polled at `polledAt`. `unread`: whether bytes wait
    /// unread (nil: not asked yet — the answer is `checkUnread` when it matters).
    mutating func tick(now: UInt64, polledAt: UInt64, unread: Bool?) -> ConnectionAction
    /// A later reply of `stream` is ready: `render` makes its response.
    mutating func resume(stream: Int32, now: UInt64, _ render: () throws -> Response) -> ConnectionAction
    /// The step of `stream` that went away on `trip` to its route's executor is back. nil when
    /// the connection no longer waits for it (the request ended meanwhile: the caller completes
    /// it, `RequestLifecycle.Trip.finishAbandoned`).
    mutating func landed(stream: Int32, _ trip: RequestLifecycle.Trip, now: UInt64) -> ConnectionAction?
    /// Interim responses were sent from elsewhere than a lifecycle call (a route's executor):
    /// they go out now.
    mutating func interimsQueued() -> ConnectionAction
    /// The consumer of `stream`'s request body caught up (back-pressure): reading goes on.
    mutating func bodyReady(stream: Int32, now: UInt64) -> ConnectionAction
    /// A streaming body of `stream` has bytes or its end.
    mutating func streamWoken(stream: Int32) -> ConnectionAction
    /// The server stops: finish what is in flight, take nothing new.
    mutating func quiesce() -> ConnectionAction
    /// Ends everything now: every request in flight ends with `outcome`.
    mutating func abort(_ outcome: CompletedExchange.Outcome) -> ConnectionAction
    /// Since when the connection has waited for a request's header section; nil while serving one.
    var waitingForHeadSince: UInt64? { get }
    /// What it was made from.
    var parts: MachineParts { get }
}

/// What a connection's machine is made from, the same for both protocols: the server, the
/// client, the time and the clock, and what its driver shares — the loop's buffers, its `Date`
/// field, the way back to the connection. `HTTP1Connection` and `HTTP2Connection` take them from
/// their loop (`init(loop:address:handback:)`), `MemoryConnection` from memory.
package struct MachineParts {
    /// Routes, limits, timeouts, and the counters the connection adds to.
    package let server: HTTPServer
    /// The client's address.
    package let address: String
    /// When the connection began (accepted, or speaking HTTP/2 from now), read from `clock`.
    package let now: UInt64
    /// The connection's clock: its driver's, and its requests'.
    package let clock: MachineClock
    /// The `Date` field its answers carry (the loop's, made once a second).
    package let date: DateField
    /// The loop's read buffer, shared by its connections: bytes read land here.
    package let readBuffer: UnsafeMutableRawBufferPointer
    /// The loop's stream buffer, shared by its connections: a streaming body's piece or HTTP/2's
    /// frames are made here and written from here.
    package let streamBuffer: UnsafeMutableRawBufferPointer
    /// The way back to the connection from other threads.
    package let handback: Handback

    package init(
        server: HTTPServer, address: String, now: UInt64, clock: MachineClock, date: DateField,
        readBuffer: UnsafeMutableRawBufferPointer, streamBuffer: UnsafeMutableRawBufferPointer, handback: Handback
    ) {
        self.server = server
        self.address = address
        self.now = now
        self.clock = clock
        self.date = date
        self.readBuffer = readBuffer
        self.streamBuffer = streamBuffer
        self.handback = handback
    }

    /// The parts a connection on `loop` shares with the loop's others, now.
    init(loop: LoopState, address: String, handback: Handback) {
        self.init(
            server: loop.server, address: address, now: loop.clock.now(), clock: loop.clock, date: loop.date,
            readBuffer: loop.readBuffer, streamBuffer: loop.streamBuffer, handback: handback)
    }
}

extension ConnectionMachine where Self: ~Copyable {
    /// The clock its driver reads the `now` of every event from, and its requests read too.
    package var clock: MachineClock { parts.clock }

    /// Whether the client is late for `deadline`: yes when the loop polled after it, or when no
    /// bytes wait unread; nil when that must be asked (`checkUnread`). A deadline that passed
    /// while the loop had not polled since and bytes wait unread is the loop's lateness, not
    /// the client's.
    static func late(_ deadline: UInt64, polledAt: UInt64, unread: Bool?) -> Bool? {
        if polledAt >= deadline { return true }
        return unread.map { !$0 }
    }
}

/// The way back to one connection from other threads: what a later reply's work, a route's
/// executor, a body's consumer or a streaming body hands back reaches the connection as a task
/// of its event loop (`EventLoop.Task`, with the connection's token) — or, for a machine driven
/// in memory, goes to a function that keeps the tasks (`MemoryConnection`). A machine never
/// starts such work itself: it returns `ConnectionAction.start`, its driver calls `start` here,
/// and the result comes back as an event.
package struct Handback: Sendable {
    let token: UInt64
    private let target: Target

    private enum Target: Sendable {
        case loop(EventLoop)
        case call(@Sendable (EventLoop.Task) -> Void)
    }

    /// Tasks for the connection with `token` on `loop`.
    init(loop: EventLoop, token: UInt64) {
        self.token = token
        target = .loop(loop)
    }

    /// Tasks handed to `take` (any thread) instead of a loop.
    package init(token: UInt64 = 0, calling take: @escaping @Sendable (EventLoop.Task) -> Void) {
        self.token = token
        target = .call(take)
    }

    /// The connection's loop; nil when it is driven in memory.
    var loop: EventLoop? {
        if case .loop(let loop) = target { loop } else { nil }
    }

    /// Hands `task` to the connection's loop. Any thread.
    func post(_ task: EventLoop.Task) {
        switch target {
        case .loop(let loop): loop.post(task)
        case .call(let take): take(task)
        }
    }

    /// Starts `work` (what a machine's `ConnectionAction.start` asks): a later reply's work,
    /// whose render closure comes back as `resume`; a request's next step on its route's
    /// executor, back as `landed`; a streaming body, whose waker posts `wake`.
    package func start(_ work: WorkStart) {
        switch work {
        case .later(let later, let stream):
            later.start { [self] render in post(.resume(token, stream: stream, render)) }
        case .away(let lifecycle, let stream):
            lifecycle.goAway { [self] trip in post(.landed(token, stream: stream, trip)) }
        case .body(let body, let waker, _):
            body.start(waker: waker)
        }
    }

    /// What the body consumer of `stream` calls (any thread) when it can take more.
    func bodyReady(stream: Int32) -> @Sendable () -> Void {
        { [self] in post(.bodyReady(token, stream: stream)) }
    }
}
