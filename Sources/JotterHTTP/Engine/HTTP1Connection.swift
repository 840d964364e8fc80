import CEngine
import Glibc

/// One HTTP/1.1 connection on its event loop: the I/O of an `HTTP1StateMachine`, which holds
/// everything about requests and answers. Each report of the loop (the socket ready, a later
/// reply, a stream woken, the sweep) becomes an event of the machine; each action it returns
/// is done here — a read or write through `ConnectionIO`, `sendfile`, epoll interest, starting
/// a later reply's work or a streaming body — and its result fed back, until the machine waits.
///
/// On an HTTPS listener the TLS handshake is done here first; then every read and write goes
/// through the connection's OpenSSL session (`ConnectionIO`), and files are read into the
/// loop's stream buffer and written through it, as TLS cannot `sendfile`. Loop thread only.
final class HTTP1Connection: LoopConnection {
    unowned let loop: EventLoop
    @exclusivity(unchecked) private var io: ConnectionIO
    let token: UInt64
    let address: String
    let opened: UInt64
    // The state below is unchecked for exclusive access (no runtime check per access): only the
    // loop thread touches it, and nothing the machine calls (middleware, handlers, bodies) can
    // reach this connection but by posting a task to the loop.
    @exclusivity(unchecked) private var machine: HTTP1StateMachine
    /// What epoll reports for the socket.
    @exclusivity(unchecked) private var interest = HTTP1StateMachine.Interest(read: true, write: false)
    /// The waker of the streaming body being sent, if any.
    @exclusivity(unchecked) private var waker: ConnectionWaker?
    @exclusivity(unchecked) private var handshaking: Bool
    @exclusivity(unchecked) private var handshakeStarted = false
    /// The socket was closed or handed to an `HTTP2Connection`: nothing more is done here.
    @exclusivity(unchecked) private var finished = false

    init(loop: EventLoop, fd: Int32, token: UInt64, address: String, tls: UnsafeMutableRawPointer? = nil) {
        self.loop = loop
        io = ConnectionIO(fd: fd, tls: tls)
        self.token = token
        self.address = address
        handshaking = tls != nil
        let now = Clock.microseconds()
        opened = now
        machine = HTTP1StateMachine(server: loop.server, address: address, now: now, date: loop.date, readBuffer: loop.readBuffer,
                                    streamBuffer: loop.streamBuffer, bodyReady: { [loop] in loop.post(.bodyReady(token, stream: 0)) },
                                    interims: InterimSink(loop: loop, connection: token))
    }

    var waitingForHeadSince: UInt64? { machine.waitingForHeadSince }

    // MARK: - Events

    func handle(events: UInt32) {
        guard !finished else { return }
        if events & (Epoll.error | Epoll.hangUp) != 0 && events & Epoll.input == 0 {
            run(machine.hungUp())
            return
        }
        if handshaking {
            continueHandshake()
            return
        }
        run(machine.ready(read: events & Epoll.input != 0, write: events & Epoll.output != 0))
    }

    /// A later reply is ready.
    func resume(stream: Int32, _ render: () throws -> Response) {
        guard !finished else { return }
        run(machine.resume(now: Clock.microseconds(), render))
    }

    /// A request's step on its route's executor is back.
    func landed(stream: Int32, _ lifecycle: RequestLifecycle) -> Bool {
        guard !finished, let action = machine.landed(lifecycle, now: Clock.microseconds()) else { return false }
        run(action)
        return true
    }

    /// Interim responses posted from a route's executor were queued.
    func interimsQueued() {
        guard !finished else { return }
        run(machine.interimsQueued())
    }

    /// The body's consumer caught up.
    func bodyReady(stream: Int32) {
        guard !finished else { return }
        run(machine.bodyReady(now: Clock.microseconds()))
    }

    /// A streaming body has something for us.
    func streamWoken(stream: Int32) {
        waker?.woken()
        guard !finished else { return }
        run(machine.streamWoken())
    }

    /// Reading again without an event: bytes OpenSSL holds (`EventLoop.Task.read`).
    func readAgain() {
        guard !finished, !handshaking else { return }
        run(machine.ready(read: true, write: false))
    }

    func quiesce() {
        guard !finished else { return }
        run(machine.quiesce())
    }

    /// The sweep: deadlines (the handshake counts against the header deadline).
    func check(now: UInt64) {
        guard !finished else { return }
        var action = machine.tick(now: now, polledAt: loop.polledAt)
        if case .checkUnread = action { action = machine.tick(now: now, polledAt: loop.polledAt, unread: io.hasUnreadBytes) }
        run(action)
    }

    func abort(_ outcome: CompletedExchange.Outcome) {
        guard !finished else { return }
        run(machine.abort(outcome))
    }

    // MARK: - Actions

    /// Does what the machine asks, feeding each result back, until it waits or ends.
    private func run(_ first: HTTP1StateMachine.Action) {
        var action = first
        while true {
            switch action {
            case .read(let buffer):
                let count = io.receive(buffer.baseAddress!, buffer.count)
                action = count > 0 ? machine.received(count, now: Clock.microseconds(), more: io.holdsBytes) : readResult(count)
            case .drain(let buffer):
                // What a closing client still sends is dropped unread (TLS records included).
                let count = recv(io.fd, buffer.baseAddress, buffer.count, 0)
                action = count > 0 ? machine.received(count, now: Clock.microseconds())
                    : readResult(count == 0 ? 0 : errno == EAGAIN || errno == EINTR ? ConnectionIO.wouldBlock : ConnectionIO.failed)
            case .write(let first, let from, let second):
                let written = first.withUnsafeBytes { first in
                    second.withUnsafeBytes { second in io.transmit(UnsafeRawBufferPointer(rebasing: first[from...]), second) }
                }
                action = writeResult(written)
            case .writeBuffer(let bytes):
                action = writeResult(io.transmit(bytes.baseAddress!, bytes.count))
            case .sendFile(let fd, let offset, let count):
                action = writeResult(io.transmit(file: fd, offset: offset, count: count, buffer: loop.streamBuffer))
            case .startLater(let later):
                let loop = self.loop, token = self.token
                later.start { render in loop.post(.resume(token, stream: 0, render)) }
                action = machine.performed()
            case .goAway(let lifecycle):
                let loop = self.loop, token = self.token, away = RequestLifecycle.Away(lifecycle)
                lifecycle.goAway { loop.post(.landed(token, stream: 0, away)) }
                action = machine.performed()
            case .startStream(let body):
                waker?.close()
                let waker = ConnectionWaker(loop: loop, token: token, stream: 0)
                self.waker = waker
                body.start(waker: waker)
                action = machine.performed()
            case .shutdownWrites:
                io.shutdownWrites()
                action = machine.performed()
            case .checkUnread:
                action = machine.tick(now: Clock.microseconds(), polledAt: loop.polledAt, unread: io.hasUnreadBytes)
            case .handOff(let bytes):
                handOff(bytes: bytes)
                return
            case .wait(let wanted):
                setInterest(wanted)
                // epoll is level-triggered: bytes waiting in the socket are reported again; those
                // OpenSSL already decrypted are not.
                if wanted.read, io.holdsBytes { loop.post(.read(token)) }
                return
            case .close:
                finishClose()
                return
            }
        }
    }

    private func readResult(_ count: Int) -> HTTP1StateMachine.Action {
        switch count {
        case 0: machine.peerClosed()
        case ConnectionIO.wouldBlock: machine.readBlocked()
        case ConnectionIO.readWantsWrite: machine.readNeedsWritable()
        default: machine.readFailed()
        }
    }

    private func writeResult(_ written: Int) -> HTTP1StateMachine.Action {
        if written >= 0 { return machine.wrote(written, now: Clock.microseconds()) }
        return written == ConnectionIO.wouldBlock ? machine.writeBlocked() : machine.writeFailed()
    }

    private func setInterest(_ wanted: HTTP1StateMachine.Interest) {
        guard wanted != interest else { return }
        interest = wanted
        loop.setInterest(io.fd, token: token, (wanted.read ? Epoll.input : 0) | (wanted.write ? Epoll.output : 0))
    }

    // MARK: - TLS

    /// The TLS handshake, as far as the socket allows. A client that sends plain HTTP to the
    /// HTTPS port gets a plain `400` saying so.
    private func continueHandshake() {
        guard let tls = io.tls else { return }
        if !handshakeStarted {
            // The first byte of a TLS connection starts a handshake record (22); a letter starts a
            // plain HTTP request line.
            var first: UInt8 = 0
            let peeked = recv(io.fd, &first, 1, Int32(MSG_PEEK))
            if peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EINTR) {
                run(machine.abort(.clientAbort))  // closed (or failed) before a byte: nothing was asked
                return
            }
            if peeked < 0 { return }  // nothing to read yet
            if first != 0x16 {
                jotter_tls_free(tls)
                io.tls = nil
                handshaking = false
                run(machine.refuse(HTTPError(.badRequest, detail: "this port serves HTTPS: send the request to https://", closesConnection: true)))
                return
            }
            handshakeStarted = true
        }
        switch jotter_tls_handshake(tls) {
        case 0:
            handshaking = false
            if io.negotiatedProtocol == "h2" {
                handOff(bytes: UnsafeRawBufferPointer(start: nil, count: 0))
                return
            }
            run(machine.handshakeFinished(now: Clock.microseconds()))
        case Int(JOTTER_TLS_WANT_READ):
            setInterest(.init(read: true, write: false))
        case Int(JOTTER_TLS_WANT_WRITE):
            setInterest(.init(read: false, write: true))
        default:
            // A failed or abandoned handshake: nothing was asked, nothing is logged as a request.
            run(machine.abort(.clientAbort))
        }
    }

    // MARK: - The end

    /// This connection speaks HTTP/2 from here: its socket, session and the bytes read so far go
    /// to an `HTTP2Connection` under the same token; this object lets go without closing.
    private func handOff(bytes: UnsafeRawBufferPointer) {
        finished = true
        let successor = HTTP2Connection(loop: loop, io: io, token: token, address: address, opened: opened)
        loop.replace(token: token, with: successor)
        successor.start(with: bytes)
    }

    private func finishClose() {
        finished = true
        waker?.close()
        waker = nil
        io.close()
        loop.forget(self)
    }
}
