import Glibc
import JotterHTTP
import Synchronization

/// A connection's state machine (`HTTP1StateMachine`, `HTTP2StateMachine`) driven with bytes in
/// memory instead of a socket, as `SocketDriver` drives it with one: what the client sends is
/// read in pieces of at most `readSize` bytes, each write takes at most `writeSize` bytes
/// (nothing while the client does not read), and time is what the caller says. What other
/// threads hand back (later replies, steps back from an executor, wakes, a body's consumer
/// ready) waits in `mail` until the caller delivers it, as the loop would. For the machines'
/// tests and the fuzzer.
///
/// It checks what a socket would suffer from: an action after the connection ended, a write
/// after the write side was shut, a wait for bytes that are there while nothing is read (a
/// level-triggered loop would spin).
package struct MemoryConnection<Machine: ConnectionMachine & ~Copyable>: ~Copyable {
    package private(set) var machine: Machine
    /// Sent by the client and not read yet.
    private var input: [UInt8] = []
    private var inputStart = 0
    /// The client shut its write side.
    package private(set) var clientClosed = false
    /// What the server wrote, in order.
    package private(set) var output: [UInt8] = []
    /// The most one read takes.
    package var readSize = Int.max
    /// The most one write takes.
    package var writeSize = Int.max
    /// The client reads what is written (else the socket takes nothing: writes block).
    package var clientReads = true
    /// The machine's clock (`MachineClock.manual`): what the caller sets, the time of every
    /// event and of every request on the connection.
    package let clock: ManualClock
    /// The time (microseconds): events carry it, requests read it; setting it moves the clock.
    package var now: UInt64 {
        get { clock.now }
        nonmutating set { clock.now = newValue }
    }
    /// When the loop last polled (the sweep's `polledAt`); follows `now` unless set.
    package var polledAt: UInt64?
    /// What the machine waits for, after its last `wait`.
    package private(set) var interest = ConnectionInterest(read: true, write: false)
    /// The write side was shut (the connection lingers).
    package private(set) var writesShut = false
    /// The machine said `close`.
    package private(set) var closed = false
    /// The machine handed the connection to HTTP/2 with these bytes.
    package private(set) var handedOff: [UInt8]?
    /// Rules a socket would see broken (see the type's description); empty when none was.
    package private(set) var violations: [String] = []
    /// Reads and writes done.
    package private(set) var reads = 0
    package private(set) var writes = 0
    /// What other threads handed back (the tasks a loop would run), in order.
    package let mail: Mailbox
    private let readBuffer: UnsafeMutableRawBufferPointer
    private let streamBuffer: UnsafeMutableRawBufferPointer

    /// A connection from `server`'s client, begun at `now`: its machine is made from the read
    /// and stream buffers a loop would share, a `Date` field, the clock and the way back to it
    /// (`mail`). An HTTP/2 machine then `begin`s.
    package init(server: HTTPServer, now: UInt64 = 1_000_000_000, readBufferSize: Int = EventLoop.readBufferSize) {
        readBuffer = .allocate(byteCount: readBufferSize, alignment: 16)
        streamBuffer = .allocate(byteCount: 64 << 10 + 16, alignment: 16)
        let date = DateField()
        date.refresh()
        let clock = ManualClock(now)
        self.clock = clock
        let mail = Mailbox()
        self.mail = mail
        machine = Machine(
            MachineParts(
                server: server, address: "127.0.0.1", now: now, clock: .manual(clock), date: date, readBuffer: readBuffer,
                streamBuffer: streamBuffer, handback: mail.handback))
    }

    deinit {
        readBuffer.deallocate()
        streamBuffer.deallocate()
    }

    package var ended: Bool { closed || handedOff != nil }

    /// Bytes written that the caller has not taken.
    package mutating func takeOutput() -> [UInt8] {
        defer { output = [] }
        return output
    }

    // MARK: - The client

    /// The client sends `bytes`; the connection runs as far as it can.
    package mutating func send(_ bytes: some Sequence<UInt8>) {
        input.append(contentsOf: bytes)
        pump()
    }

    /// `bytes` arrive, and the loop has not polled since: nothing is read until `pump` (or an event).
    package mutating func arrive(_ bytes: some Sequence<UInt8>) {
        input.append(contentsOf: bytes)
    }

    /// The client shuts its write side.
    package mutating func closeInput() {
        clientClosed = true
        pump()
    }

    /// Bytes sent and not read yet.
    package var unread: Int { input.count - inputStart }

    /// Reports readiness as a level-triggered epoll would, until the machine waits for
    /// something the memory socket does not have.
    package mutating func pump() {
        var rounds = 0
        while !ended, rounds < 100_000 {
            rounds += 1
            let readable = interest.read && (unread > 0 || clientClosed)
            let writable = interest.write && clientReads
            guard readable || writable else { return }
            let before = (reads, writes)
            run(machine.ready(read: readable, write: writable))
            if !ended, (reads, writes) == before, case let wanted = interest, (wanted.read && readable) || (wanted.write && writable) {
                violations.append(
                    "the socket was reported ready and nothing was read or written, and the connection waits for it again (a level-triggered loop would spin)"
                )
                return
            }
        }
    }

    // MARK: - Events from elsewhere

    /// The sweep at `now`.
    package mutating func tick() {
        guard !ended else { return }
        run(machine.tick(now: now, polledAt: polledAt ?? now, unread: nil))
        pump()
    }

    /// Delivers the oldest task handed back that `matches`, as the loop would; false when none is.
    private mutating func deliver(_ matches: (EventLoop.Task) -> Bool) -> Bool {
        let task = mail.tasks.withLock { tasks -> EventLoop.Task? in
            guard let index = tasks.firstIndex(where: matches) else { return nil }
            return tasks.remove(at: index)
        }
        guard let task else { return false }
        guard !ended else {
            SocketDriver.abandon(task)
            return true
        }
        if let action = SocketDriver.event(task, &machine) {
            run(action)
            pump()
        }
        return true
    }

    /// The oldest later reply whose work is done is handed back; false when none is.
    @discardableResult
    package mutating func resumeLater() -> Bool {
        deliver { if case .resume = $0 { true } else { false } }
    }

    /// The oldest step done on a route's executor is handed back (as the loop would: a request
    /// the connection no longer waits for is completed as it ended); false when none is.
    @discardableResult
    package mutating func land() -> Bool {
        deliver { if case .landed = $0 { true } else { false } }
    }

    /// The body's consumers that caught up are handed back.
    package mutating func bodyReady() {
        while deliver({ if case .bodyReady = $0 { true } else { false } }) {}
    }

    /// Delivers the wakes of streaming bodies.
    package mutating func deliverWakes() {
        while deliver({ if case .wake = $0 { true } else { false } }) {}
    }

    /// Everything handed back so far, oldest first.
    package mutating func deliverAll() {
        while deliver({ _ in true }) {}
    }

    /// Interim responses sent from a route's executor reached the loop.
    package mutating func interimsQueued() {
        guard !ended else { return }
        run(machine.interimsQueued())
        pump()
    }

    package mutating func quiesce() {
        guard !ended else { return }
        run(machine.quiesce())
        pump()
    }

    package mutating func abort(_ outcome: CompletedExchange.Outcome) {
        guard !ended else { return }
        run(machine.abort(outcome))
    }

    // MARK: - Actions

    package mutating func run(_ first: ConnectionAction) {
        var action = first
        while true {
            if ended {
                violations.append("an action after the connection ended: \(action)")
                return
            }
            switch action {
            case .read(let buffer), .drain(let buffer):
                reads += 1
                if unread > 0 {
                    let count = min(unread, buffer.count, readSize)
                    input.withUnsafeBytes { bytes in
                        buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + inputStart, byteCount: count)
                    }
                    inputStart += count
                    if inputStart == input.count {
                        input = []
                        inputStart = 0
                    }
                    action = machine.received(count, now: now, more: false)
                } else {
                    action = clientClosed ? machine.peerClosed() : machine.readBlocked()
                }
            case .write(let first, let from, let second):
                action = first.withUnsafeBytes { first in
                    second.withUnsafeBytes { second in write(UnsafeRawBufferPointer(rebasing: first[from...]), second) }
                }
            case .writeBuffer(let bytes):
                action = write(bytes, UnsafeRawBufferPointer(start: nil, count: 0))
            case .sendFile(let fd, let offset, let count):
                guard clientReads else {
                    action = machine.writeBlocked()
                    break
                }
                writes += 1
                if writesShut { violations.append("a file sent after the write side was shut") }
                var piece = [UInt8](repeating: 0, count: min(count, writeSize, 1 << 20))
                let read = pread(fd, &piece, piece.count, off_t(offset))
                if read < 0 {
                    action = machine.writeFailed()
                } else {
                    output.append(contentsOf: piece[..<read])
                    action = machine.wrote(read, now: now)
                }
            case .shutdownWrites:
                if writesShut { violations.append("the write side was shut twice") }
                writesShut = true
                action = machine.performed()
            case .start(let work):
                mail.handback.start(work)
                action = machine.performed()
            case .checkUnread:
                action = machine.tick(now: now, polledAt: polledAt ?? now, unread: unread > 0)
            case .handOff(let bytes):
                handedOff = Array(bytes)
                return
            case .wait(let wanted):
                interest = wanted
                return
            case .close:
                closed = true
                return
            }
        }
    }

    /// Takes what the socket would of `first` then `second` (copying only that).
    private mutating func write(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> ConnectionAction {
        guard clientReads else { return machine.writeBlocked() }
        writes += 1
        if writesShut { violations.append("a write after the write side was shut") }
        if first.count + second.count == 0 { violations.append("an empty write") }
        let fromFirst = min(first.count, writeSize)
        output.append(contentsOf: first[..<fromFirst])
        let fromSecond = min(second.count, writeSize - fromFirst)
        output.append(contentsOf: second[..<fromSecond])
        return machine.wrote(fromFirst + fromSecond, now: now)
    }
}

/// What other threads hand to a memory connection: the tasks a loop would run.
package final class Mailbox: Sendable {
    package let tasks = Mutex<[EventLoop.Task]>([])

    /// A body's consumer called back (`bodyReady`) and was not handed back yet.
    package var bodyCalledBack: Bool { tasks.withLock { $0.contains { if case .bodyReady = $0 { true } else { false } } } }

    /// The way back to the connection: into `tasks`.
    package var handback: Handback { Handback { [self] task in tasks.withLock { $0.append(task) } } }
}

extension MemoryConnection where Machine == HTTP2StateMachine {
    /// The connection speaks HTTP/2 from its start (as after TLS chose `h2`): the client's
    /// preface is the first thing it reads; our SETTINGS are the first thing written.
    package mutating func begin() {
        run(machine.begin(with: UnsafeRawBufferPointer(start: nil, count: 0), now: now))
    }
}
