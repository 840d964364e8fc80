import Glibc

/// The I/O of a connection's state machine on its event loop, the same for HTTP/1.1
/// (`HTTP1Connection`) and HTTP/2 (`HTTP2Connection`): each action the machine returns is done
/// here — a read or write through `ConnectionIO` (plain or TLS), `sendfile`, shutting the write
/// side, epoll interest — and its result fed back as the next event, until the machine waits or
/// ends. What other threads hand back comes in as loop tasks (`event(_:_:)`). Loop thread only.
package struct SocketDriver {
    /// The loop thread's own state (its buffers, table, last poll).
    unowned let loop: LoopState
    var io: ConnectionIO
    /// The way back to this connection from other threads (its token on `loop`).
    let handback: Handback
    /// What epoll reports for the socket.
    private(set) var interest = ConnectionInterest(read: true, write: false)

    /// How a run of actions ended.
    enum End {
        /// The machine waits (interest set).
        case waiting
        /// The machine said `close`: the caller closes the socket (`close()`).
        case closed
        /// The machine handed the connection over to HTTP/2 with these bytes read so far.
        case handOff(UnsafeRawBufferPointer)
    }

    init(loop: LoopState, io: ConnectionIO, token: UInt64) {
        self.loop = loop
        self.io = io
        handback = Handback(loop: loop.handle, token: token)
    }

    var token: UInt64 { handback.token }

    /// Whether epoll reported an error or hang-up with nothing to read.
    @inline(__always) static func hungUp(_ events: UInt32) -> Bool {
        events & (Epoll.error | Epoll.hangUp) != 0 && events & Epoll.input == 0
    }

    /// What epoll reported, as the machine's event.
    @inline(__always) static func event<Machine: ConnectionMachine & ~Copyable>(_ events: UInt32, _ machine: inout Machine) -> ConnectionAction {
        if hungUp(events) { return machine.hungUp() }
        return machine.ready(read: events & Epoll.input != 0, write: events & Epoll.output != 0)
    }

    /// A task another thread posted for the connection (`EventLoop.Task`), as its machine's
    /// event; nil when there is nothing to do. A step that landed after its request ended (the
    /// machine no longer waits for it) completes the request here.
    package static func event<Machine: ConnectionMachine & ~Copyable>(_ task: EventLoop.Task, _ machine: inout Machine) -> ConnectionAction? {
        switch task {
        case .resume(_, let stream, let render): return machine.resume(stream: stream, now: machine.clock.now(), render)
        case .landed(_, let stream, let trip):
            if let action = machine.landed(stream: stream, trip, now: machine.clock.now()) { return action }
            trip.finishAbandoned()
            return nil
        case .interim: return machine.interimsQueued()
        case .wake(_, let stream): return machine.streamWoken(stream: stream)
        case .bodyReady(_, let stream): return machine.bodyReady(stream: stream, now: machine.clock.now())
        case .read: return machine.ready(read: true, write: false)
        case .evict, .evictLongLived, .adopt, .quiesce, .stop: return nil
        }
    }

    /// A task for a connection that has ended: a step that landed completes its request.
    package static func abandon(_ task: EventLoop.Task) {
        if case .landed(_, _, let trip) = task { trip.finishAbandoned() }
    }

    /// Does what `machine` asks, starting with `first`, feeding each result back, until it
    /// waits or ends.
    mutating func run<Machine: ConnectionMachine & ~Copyable>(_ machine: inout Machine, _ first: ConnectionAction) -> End {
        var action = first
        while true {
            switch action {
            case .read(let buffer):
                let count = io.receive(buffer.baseAddress!, buffer.count)
                action = count > 0 ? machine.received(count, now: machine.clock.now(), more: io.holdsBytes) : Self.readResult(count, &machine)
            case .drain(let buffer):
                // What a closing client still sends is dropped unread (TLS records included).
                let count = recv(io.fd, buffer.baseAddress, buffer.count, 0)
                action =
                    count > 0
                    ? machine.received(count, now: machine.clock.now(), more: false)
                    : Self.readResult(count == 0 ? 0 : errno == EAGAIN || errno == EINTR ? ConnectionIO.wouldBlock : ConnectionIO.failed, &machine)
            case .write(let first, let from, let second):
                let written = first.withUnsafeBytes { first in
                    second.withUnsafeBytes { second in io.transmit(UnsafeRawBufferPointer(rebasing: first[from...]), second) }
                }
                action = Self.writeResult(written, &machine)
            case .writeBuffer(let bytes):
                action = Self.writeResult(io.transmit(bytes.baseAddress!, bytes.count), &machine)
            case .sendFile(let fd, let offset, let count):
                action = Self.writeResult(io.transmit(file: fd, offset: offset, count: count, buffer: loop.streamBuffer), &machine)
            case .shutdownWrites:
                io.shutdownWrites()
                action = machine.performed()
            case .start(let work):
                handback.start(work)
                action = machine.performed()
            case .checkUnread:
                action = machine.tick(now: machine.clock.now(), polledAt: loop.polledAt, unread: io.hasUnreadBytes)
            case .handOff(let bytes):
                return .handOff(bytes)
            case .wait(let wanted):
                setInterest(wanted)
                // epoll is level-triggered: bytes waiting in the socket are reported again; those
                // OpenSSL already decrypted are not.
                if wanted.read, io.holdsBytes { loop.handle.post(.read(token)) }
                return .waiting
            case .close:
                return .closed
            }
        }
    }

    @inline(__always) private static func readResult<Machine: ConnectionMachine & ~Copyable>(_ count: Int, _ machine: inout Machine)
        -> ConnectionAction
    {
        switch count {
        case 0: machine.peerClosed()
        case ConnectionIO.wouldBlock: machine.readBlocked()
        case ConnectionIO.readWantsWrite: machine.readNeedsWritable()
        default: machine.readFailed()
        }
    }

    @inline(__always) private static func writeResult<Machine: ConnectionMachine & ~Copyable>(_ written: Int, _ machine: inout Machine)
        -> ConnectionAction
    {
        if written >= 0 { return machine.wrote(written, now: machine.clock.now()) }
        return written == ConnectionIO.wouldBlock ? machine.writeBlocked() : machine.writeFailed()
    }

    /// Sets epoll's interest if it changed.
    mutating func setInterest(_ wanted: ConnectionInterest) {
        guard wanted != interest else { return }
        interest = wanted
        loop.setInterest(io.fd, token: token, (wanted.read ? Epoll.input : 0) | (wanted.write ? Epoll.output : 0))
    }

    /// Frees the TLS session, closes the socket and leaves the loop's table. The loop is told
    /// the token and the address, not handed the connection: the connection's `socket` is being
    /// modified here, so reading its `token` back through it would be an overlapping access.
    mutating func close(_ connection: any LoopConnection) {
        io.close()
        loop.forget(token: token, address: connection.address)
    }
}
