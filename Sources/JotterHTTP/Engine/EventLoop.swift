import CEngine
import Glibc
import Synchronization
import JotterSystem

/// One engine thread, as other threads hold it: an epoll set over the listening socket (shared
/// by every loop, woken one at a time with `EPOLLEXCLUSIVE`) and the connections this loop
/// accepted, which stay on it for their whole life. Other threads reach a connection only by
/// posting a `Task` (a later reply ready, a stream with new bytes), which wakes the loop through
/// an eventfd, and read what its last sweep saw (two atomics). `Sendable` by construction: the
/// loop thread's own state — the connection table, tasks taken, flags, buffers — is a
/// `LoopState`, made on that thread when it starts and reachable from no other.
///
/// Time is checked every 250 ms by a sweep over the loop's connections: header deadline, idle
/// timeout, minimum body rate, lingering closes. No other thread watches a socket.
///
/// Each turn handles what epoll reported (at most 256 sockets), then at most `taskBudget`
/// posted tasks, oldest first; tasks left over wait for the next turn, which polls without
/// blocking. One event published to thousands of streams posts a wake for each of them: they
/// are taken in turns, with the sockets polled between, so a new connection or request waits
/// for one turn of writes, never for the whole fan-out.
package final class EventLoop: Sendable {
    /// What another thread asks of this loop.
    package enum Task: Sendable {
        /// A later reply's render closure for the connection with this token (and, on HTTP/2,
        /// the stream; 0 on HTTP/1.1).
        case resume(UInt64, stream: Int32, @Sendable () throws -> Response)
        /// A request's step on its route's executor is done (`RequestLifecycle.goAway`): the
        /// connection carries out its action, or — gone — the request is completed as it ended.
        case landed(UInt64, stream: Int32, RequestLifecycle.Trip)
        /// An interim response sent off the loop (from a route's executor), in order, for the
        /// exchange that sent it (`InterimSink.Ticket`).
        case interim(InterimSink, UInt64, HTTPStatus, HTTPHeaders)
        /// A streaming body has bytes (or its end) for the connection's stream.
        case wake(UInt64, stream: Int32)
        /// A request body's consumer caught up: reading the body of `stream` (0 on HTTP/1.1) goes on.
        case bodyReady(UInt64, stream: Int32)
        /// The connection's TLS session holds decrypted bytes: read them (no event will say so).
        case read(UInt64)
        /// The table is full and another loop admitted a connection it had none to evict for:
        /// close this loop's connection that has waited longest for its head.
        case evict
        /// The table is full and no loop has a connection waiting for its head: close this
        /// loop's oldest long-lived connection (an event stream, a body being read) of the
        /// address that holds the most connections — when that address holds more than
        /// `heavierThan`; otherwise (this loop's sweep was stale) `fallback`, the loop that
        /// posted, closes its own.
        case evictLongLived(heavierThan: Int, fallback: EventLoop?)
        /// A connection the stopping server took from the listener's queue
        /// (`HTTPServer.stopLoops`): served as one this loop accepted, read at once (its request
        /// was sent with it), then quiesced with the others.
        case adopt(fd: Int32, address: String)
        /// Stop accepting; end streams; close connections waiting for a request.
        case quiesce
        /// Close everything and end the thread.
        case stop
    }

    unowned let server: HTTPServer
    /// The server's clock (`HTTPServer.clock`): the loop's polls, sweeps and evictions, and the
    /// machine of every connection on it.
    let clock: MachineClock
    /// The epoll set and the listening socket: the loop thread's (`LoopState`) to use.
    fileprivate let epoll: Int32
    private let wakeFD: Int32
    fileprivate let listener: Int32
    private let inbox = Mutex<[Task]>([])
    private let thread = SystemThread()
    /// Since when this loop's connection that has waited longest for its head has waited (0:
    /// none waits), as of its last sweep: where another loop may send an eviction.
    let oldestHeadWait = Atomic<UInt64>(0)
    /// As of this loop's last sweep, how many connections the table holds from the heaviest
    /// address among this loop's evictable long-lived connections (0: none): where another
    /// loop sends a long-lived eviction.
    let heaviestLongLived = Atomic<Int>(0)

    static let listenerToken: UInt64 = 1
    static let wakeToken: UInt64 = 2
    package static let readBufferSize = 256 << 10
    static let sweepInterval: UInt64 = 250_000
    /// The most posted tasks one turn runs (as many as the sockets one poll reports).
    static let taskBudget = 256

    init(server: HTTPServer, listener: Int32) throws(ServerStartError) {
        self.server = server
        clock = server.clock
        self.listener = listener
        epoll = jotter_epoll_create()
        wakeFD = jotter_eventfd()
        guard epoll >= 0, wakeFD >= 0 else {
            throw ServerStartError(description: "cannot create the engine's event loop: \(String(cString: strerror(errno)))")
        }
        jotter_epoll_add(epoll, listener, Epoll.input | Epoll.exclusive, Self.listenerToken)
        jotter_epoll_add(epoll, wakeFD, Epoll.input, Self.wakeToken)
    }

    deinit {
        close(epoll)
        close(wakeFD)
    }

    /// Starts the loop's thread, which makes its `LoopState` and runs it until `.stop`.
    func start() throws(SystemThread.StartError) {
        try thread.start { [self] in LoopState(loop: self).run() }
    }

    func join() { thread.join() }

    /// Whether the calling thread is this loop's.
    var isCurrent: Bool { thread.isCurrent }

    /// Hands `task` to the loop. Any thread.
    func post(_ task: Task) {
        let first = inbox.withLock { inbox in
            inbox.append(task)
            return inbox.count == 1
        }
        if first {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Swaps what was posted since the last take into `taken` (empty). Loop thread.
    fileprivate func take(into taken: inout [Task]) {
        inbox.withLock { swap(&$0, &taken) }
    }

    /// Reads the eventfd a post wrote. Loop thread.
    fileprivate func clearWake() {
        var value: UInt64 = 0
        _ = read(wakeFD, &value, 8)
    }
}

/// An event loop's own state and its turns (`EventLoop`): made on the loop's thread when it
/// starts and used there only — by the loop, and by its connections and their machines, which
/// reach it as `SocketDriver.loop`. Not `Sendable`: the compiler keeps it on that thread, as
/// the one place other threads reach the loop is its `EventLoop`, the handle.
final class LoopState {
    /// What other threads hold of this loop: posting to it, its atomics.
    let handle: EventLoop
    unowned let server: HTTPServer
    let clock: MachineClock
    private let epoll: Int32
    private let listener: Int32
    /// Tasks taken from the inbox and not yet run, from `nextTask` on.
    private var taken: [EventLoop.Task] = []
    private var nextTask = 0
    /// Checked for exclusive access (about 125 instructions a request: docs/benchmarks.md,
    /// issue 34): the loop thread reads a connection out of it before it calls the connection,
    /// which may then remove itself (`forget`), so no access overlaps another.
    private var connections: [UInt64: any LoopConnection] = [:]
    private var nextToken: UInt64 = 16
    private var accepting = true
    private var running = true
    /// Bytes read from sockets land here first (a body straight into its reader from here).
    let readBuffer: UnsafeMutableRawBufferPointer
    /// A streaming body writes into this before the socket; only what the socket did not take
    /// is copied to the connection.
    let streamBuffer: UnsafeMutableRawBufferPointer
    let date = DateField()
    private var lastSweep: UInt64 = 0
    /// When epoll last returned: bytes that arrived before it have been read.
    private(set) var polledAt: UInt64 = 0

    fileprivate init(loop: EventLoop) {
        handle = loop
        server = loop.server
        clock = loop.clock
        epoll = loop.epoll
        listener = loop.listener
        readBuffer = .allocate(byteCount: EventLoop.readBufferSize, alignment: 16)
        streamBuffer = .allocate(byteCount: 64 << 10 + 16, alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
        streamBuffer.deallocate()
    }

    // MARK: - The loop

    fileprivate func run() {
        let tokens = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
        let events = UnsafeMutablePointer<UInt32>.allocate(capacity: 256)
        defer { tokens.deallocate(); events.deallocate() }
        lastSweep = clock.now()
        while running {
            // Tasks left from the last turn: poll without waiting, then run more of them.
            let count = jotter_epoll_wait(epoll, tokens, events, 256, nextTask < taken.count ? 0 : 250)
            polledAt = clock.now()
            date.refresh()
            var signalled = false
            if count > 0 {
                for index in 0..<Int(count) {
                    switch tokens[index] {
                    case EventLoop.listenerToken: acceptConnections()
                    case EventLoop.wakeToken:
                        handle.clearWake()
                        signalled = true
                    case let token:
                        connections[token]?.handle(events: events[index])
                    }
                }
            }
            if signalled || nextTask < taken.count { runTasks() }
            let now = clock.now()
            if now >= lastSweep + EventLoop.sweepInterval {
                lastSweep = now
                sweep(now: now)
            }
        }
        for connection in Array(connections.values) { connection.abort(.shutdown) }
        connections = [:]
    }

    /// Runs up to `taskBudget` posted tasks, oldest first, taking the inbox whenever what was
    /// taken before has run. Ends with the inbox taken when nothing taken is left, so that tasks
    /// posted before the eventfd was read are never left waiting for a poll that blocks.
    private func runTasks() {
        var ran = 0
        while ran < EventLoop.taskBudget, running {
            if nextTask == taken.count, !takeInbox() { break }
            let task = taken[nextTask]
            nextTask += 1
            ran += 1
            run(task)
        }
        if nextTask == taken.count { _ = takeInbox() }
        server.counters.noteTurn(tasks: ran)
    }

    /// Moves what was posted since the last take into `taken`; false when nothing was.
    private func takeInbox() -> Bool {
        taken.removeAll(keepingCapacity: true)
        nextTask = 0
        handle.take(into: &taken)
        return !taken.isEmpty
    }

    private func run(_ task: EventLoop.Task) {
        switch task {
        case .resume(let token, _, _), .landed(let token, _, _), .wake(let token, _), .read(let token), .bodyReady(let token, _):
            if let connection = connections[token] { connection.deliver(task) } else { SocketDriver.abandon(task) }
        case .interim(let sink, let exchange, let status, let headers):
            if sink.send(status, headers, exchange: exchange), let token = sink.connection { connections[token]?.deliver(task) }
        case .evict:
            if !evictOne() { handle.oldestHeadWait.store(0, ordering: .relaxed) }
        case .evictLongLived(let heavierThan, let fallback):
            let chosen = longLivedCandidate()
            if let chosen, chosen.count > heavierThan {
                evictLongLived(chosen.connection)
                return
            }
            handle.heaviestLongLived.store(chosen?.count ?? 0, ordering: .relaxed)
            fallback?.post(.evictLongLived(heavierThan: -1, fallback: nil))
        case .adopt(let fd, let address):
            if let token = adopt(ListeningSocket.Accepted(fd: fd, address: address)) { connections[token]?.handle(events: Epoll.input) }
            server.adopting.subtract(1, ordering: .releasing)
        case .quiesce:
            if accepting {
                accepting = false
                jotter_epoll_remove(epoll, listener)
            }
            for connection in Array(connections.values) { connection.quiesce() }
        case .stop:
            running = false
        }
    }

    private func sweep(now: UInt64) {
        var oldest = UInt64.max
        for connection in Array(connections.values) {
            connection.check(now: now, polledAt: polledAt)
            if let since = connection.waitingForHeadSince, since < oldest { oldest = since }
        }
        handle.oldestHeadWait.store(oldest == .max ? 0 : oldest, ordering: .relaxed)
        handle.heaviestLongLived.store(longLivedCandidate(now: now)?.count ?? 0, ordering: .relaxed)
    }

    // MARK: - Connections

    private func acceptConnections() {
        for _ in 0..<64 {
            guard let accepted = ListeningSocket.accept(listener) else { return }
            adopt(accepted)
        }
    }

    /// Serves a connection accepted from the listener, if the connection limits let it in; its
    /// token, or nil when it was refused (closed).
    @discardableResult
    private func adopt(_ accepted: ListeningSocket.Accepted) -> UInt64? {
        let fd = accepted.fd, text = accepted.address
        guard server.connections.admit(text) else {
            close(fd)
            return nil
        }
        // Past the limit a slow head makes room — on this loop, or on another whose last sweep
        // saw one waiting long enough (the kernel may give one loop every slow connection).
        // With none, the oldest long-lived connection of the address holding the most goes —
        // on this loop, or on the one whose last sweep saw a heavier address among its own
        // (the kernel may give one loop every connection of one client) — rather than every
        // newcomer refused.
        if server.connections.overLimit, !evictOne() {
            if let other = server.loopToEvict(besides: handle) {
                other.post(.evict)
            } else {
                let mine = longLivedCandidate()
                if let other = server.loopWithHeavierLongLived(than: mine?.count ?? 0, besides: handle) {
                    other.post(.evictLongLived(heavierThan: mine?.count ?? 0, fallback: mine == nil ? nil : handle))
                } else if let mine {
                    evictLongLived(mine.connection)
                } else {
                    server.connections.release(text)
                    server.counters.refused.add(1, ordering: .relaxed)
                    close(fd)
                    return nil
                }
            }
        }
        var session: UnsafeMutableRawPointer?
        if let context = server.tlsContext {
            session = context.session(fd: fd)
            if session == nil {
                server.connections.release(text)
                close(fd)
                return nil
            }
        }
        let token = nextToken
        nextToken += 1
        let connection = HTTP1Connection(loop: self, fd: fd, token: token, address: text, tls: session)
        connections[token] = connection
        jotter_epoll_add(epoll, fd, Epoll.input, token)
        // It waits for its head from now: the oldest such, if none waited (the sweep keeps it exact).
        if handle.oldestHeadWait.load(ordering: .relaxed) == 0 { handle.oldestHeadWait.store(connection.opened, ordering: .relaxed) }
        return token
    }

    /// Past the connection limit: closes the connection of this loop that has waited longest for
    /// its header section — never one opened in the last 100 ms, nor one being served. False
    /// when there is none (the new connection is refused instead).
    private func evictOne() -> Bool {
        let now = clock.now()
        var oldest: (any LoopConnection)?
        for connection in connections.values {
            guard let since = connection.waitingForHeadSince, now >= since + 100_000, now >= connection.opened + 100_000 else { continue }
            if let current = oldest, current.waitingForHeadSince! <= since { continue }
            oldest = connection
        }
        guard let oldest else { return false }
        server.counters.evicted.add(1, ordering: .relaxed)
        oldest.abort(.error)
        return true
    }

    /// What goes when the table is full and no connection waits for its head anywhere: this
    /// loop's oldest long-lived connection (`isLongLived`: an event stream, a body being read,
    /// HTTP/2 streams that wait on the client) of the address that holds the most connections in
    /// the table — so the client holding the most makes room, not every newcomer — with that
    /// address's count. Never one opened in the last second. nil when this loop has none.
    private func longLivedCandidate(now: UInt64? = nil) -> (connection: any LoopConnection, count: Int)? {
        let now = now ?? clock.now()
        var candidates: [String: any LoopConnection] = [:]
        for connection in connections.values where connection.isLongLived && now >= connection.opened + 1_000_000 {
            if let current = candidates[connection.address], current.opened <= connection.opened { continue }
            candidates[connection.address] = connection
        }
        guard !candidates.isEmpty else { return nil }
        let counts = server.connections.counts(of: candidates.keys)
        let chosen = candidates.max { a, b in
            let (countA, countB) = (counts[a.key] ?? 0, counts[b.key] ?? 0)
            return countA != countB ? countA < countB : a.value.opened > b.value.opened
        }!
        return (chosen.value, counts[chosen.key] ?? 0)
    }

    private func evictLongLived(_ connection: any LoopConnection) {
        server.counters.evicted.add(1, ordering: .relaxed)
        server.counters.evictedLongLived.add(1, ordering: .relaxed)
        connection.abort(.error)
    }

    /// Called by a connection that has closed its socket (`token`, from client `address`).
    func forget(token: UInt64, address: String) {
        connections.removeValue(forKey: token)
        server.connections.release(address)
    }

    /// An HTTP/1.1 connection that turned out to speak HTTP/2 hands its socket to `successor`.
    func replace(token: UInt64, with successor: any LoopConnection) {
        connections[token] = successor
    }

    func setInterest(_ fd: Int32, token: UInt64, _ events: UInt32) {
        jotter_epoll_modify(epoll, fd, events, token)
    }
}

/// Open connections in all and per client address, shared by the loops.
final class ConnectionTable: Sendable {
    private let counts = Mutex<(total: Int, byAddress: [String: Int])>((0, [:]))
    let limit: Int
    let perAddress: Int
    /// Peers whose connections carry many clients (trusted proxies): not held to `perAddress`.
    let unlimited: TrustedProxies

    init(limit: Int, perAddress: Int, unlimited: TrustedProxies = TrustedProxies()) {
        self.limit = max(1, limit)
        self.perAddress = perAddress
        self.unlimited = unlimited
    }

    /// Counts a new connection from `address`; false when that address has its share open
    /// (never for a trusted proxy).
    func admit(_ address: String) -> Bool {
        counts.withLock { counts in
            let current = counts.byAddress[address, default: 0]
            if perAddress > 0, current >= perAddress, !unlimited.contains(address) { return false }
            counts.byAddress[address] = current + 1
            counts.total += 1
            return true
        }
    }

    func release(_ address: String) {
        counts.withLock { counts in
            counts.total -= 1
            if let current = counts.byAddress[address] {
                if current <= 1 { counts.byAddress.removeValue(forKey: address) } else { counts.byAddress[address] = current - 1 }
            }
        }
    }

    /// Connections open from each of `addresses`.
    func counts(of addresses: some Sequence<String>) -> [String: Int] {
        counts.withLock { counts in
            var found: [String: Int] = [:]
            for address in addresses { found[address] = counts.byAddress[address] ?? 0 }
            return found
        }
    }

    /// More connections are open than the limit (the one just admitted included).
    var overLimit: Bool { counts.withLock { $0.total > limit } }

    var total: Int { counts.withLock { $0.total } }
}

/// What the loops count, for `HTTPServer.slowConnectionsClosed` and the logs.
final class EngineCounters: Sendable {
    let timedOut = Atomic<Int>(0)
    let evicted = Atomic<Int>(0)
    let slowBodies = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    /// Of `evicted`: long-lived connections (event streams, bodies being read) pushed out.
    let evictedLongLived = Atomic<Int>(0)
    /// Connections open now that speak HTTP/2 (the rest of the table speaks HTTP/1.x).
    let http2Connections = Atomic<Int>(0)
    /// The most posted tasks any loop ran in one turn, between two polls.
    let mostTasksInOneTurn = Atomic<Int>(0)

    /// A loop ran `tasks` posted tasks in one turn.
    func noteTurn(tasks: Int) {
        var seen = mostTasksInOneTurn.load(ordering: .relaxed)
        while tasks > seen {
            let (exchanged, current) = mostTasksInOneTurn.compareExchange(expected: seen, desired: tasks, ordering: .relaxed)
            if exchanged { break }
            seen = current
        }
    }
}

/// epoll's flags as the engine uses them.
enum Epoll {
    static let input = UInt32(JOTTER_EPOLL_IN)
    static let output = UInt32(JOTTER_EPOLL_OUT)
    static let error = UInt32(JOTTER_EPOLL_ERR)
    static let hangUp = UInt32(JOTTER_EPOLL_HUP)
    static let exclusive = UInt32(JOTTER_EPOLL_EXCLUSIVE)
}

/// What an event loop drives: one accepted socket, speaking HTTP/1.1 (`HTTP1Connection`) or
/// HTTP/2 (`HTTP2Connection`), each a state machine and its `SocketDriver`. Loop thread only.
protocol LoopConnection: AnyObject {
    var token: UInt64 { get }
    var address: String { get }
    /// When the connection was accepted.
    var opened: UInt64 { get }
    /// Since when it has been waiting for a request's header section; nil while serving one.
    var waitingForHeadSince: UInt64? { get }
    /// It holds its place for as long as its client likes with no work of the server's under
    /// way (an event stream, a body being read): it may be pushed out at the connection limit.
    var isLongLived: Bool { get }
    /// epoll reported `events` for the socket.
    func handle(events: UInt32)
    /// A task another thread posted for this connection: a later reply ready, a step back from a
    /// route's executor (a connection that ended completes its request: `SocketDriver.abandon`),
    /// interim responses taken, a streaming body woken, a body's consumer caught up, a read of
    /// bytes OpenSSL holds.
    func deliver(_ task: EventLoop.Task)
    /// The server stops: finish what is in flight, take nothing new.
    func quiesce()
    /// The sweep, at `now`; the loop last polled at `polledAt`: deadlines.
    func check(now: UInt64, polledAt: UInt64)
    /// Ends everything now.
    func abort(_ outcome: CompletedExchange.Outcome)
}

/// A `LoopConnection` that is a `ConnectionMachine` driven by a `SocketDriver` until it
/// finishes (its socket closed, or handed to another connection): each report of the loop
/// becomes an event of the machine, given through `drive`, and each action it returns is done
/// by the driver, until the machine waits. What differs — HTTP/1.1's TLS handshake and its hand
/// off to HTTP/2 — stays in each connection. Loop thread only.
protocol MachineConnection: LoopConnection {
    /// Gives the machine `report` as its event (`LoopReport.event`) and does what it asks until
    /// it waits or ends. false when the connection has finished: then nothing is given.
    @discardableResult func drive(_ report: LoopReport) -> Bool
}

extension MachineConnection {
    func handle(events: UInt32) { drive(.socket(events)) }

    func deliver(_ task: EventLoop.Task) { forward(task) }

    func quiesce() { drive(.quiesce) }

    func check(now: UInt64, polledAt: UInt64) { drive(.sweep(now: now, polledAt: polledAt)) }

    func abort(_ outcome: CompletedExchange.Outcome) { drive(.abort(outcome)) }

    /// A task another thread posted, to the machine; once the connection has finished, a step
    /// that landed completes its request (`SocketDriver.abandon`).
    @inline(__always) func forward(_ task: EventLoop.Task) {
        if !drive(.task(task)) { SocketDriver.abandon(task) }
    }
}

/// What the loop reports to a `MachineConnection`, the same for both protocols.
enum LoopReport {
    /// epoll reported these events for the socket.
    case socket(UInt32)
    /// A task another thread posted for the connection.
    case task(EventLoop.Task)
    /// The server stops.
    case quiesce
    /// The sweep, at `now`; the loop last polled at `polledAt`.
    case sweep(now: UInt64, polledAt: UInt64)
    /// Ends everything now.
    case abort(CompletedExchange.Outcome)

    /// The report as `machine`'s event: its action, nil when there is nothing to do.
    @inline(__always) func event<Machine: ConnectionMachine & ~Copyable>(_ machine: inout Machine) -> ConnectionAction? {
        switch self {
        case .socket(let events): SocketDriver.event(events, &machine)
        case .task(let task): SocketDriver.event(task, &machine)
        case .quiesce: machine.quiesce()
        case .sweep(let now, let polledAt): machine.tick(now: now, polledAt: polledAt, unread: nil)
        case .abort(let outcome): machine.abort(outcome)
        }
    }
}
