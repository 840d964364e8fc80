import JotterSystem
/// One HTTP/2 connection on its event loop: an `HTTP2StateMachine` (libnghttp2's session, the
/// streams, their requests and answers) driven by a `SocketDriver`, which does its I/O, as an
/// HTTP/1.1 connection's machine is driven. Each report of the loop becomes an event of the
/// machine; each action it returns is done by the driver and its result fed back, until the
/// machine waits.
///
/// It begins as an `HTTP1Connection` that hands over: after a TLS handshake that chose `h2` by
/// ALPN, or when a plain connection starts with the client preface (prior knowledge; no
/// `Upgrade: h2c`). It keeps the socket, the TLS session and the epoll interest. Loop thread only.
final class HTTP2Connection: MachineConnection {
    let address: String
    let opened: UInt64
    // Unchecked for exclusive access, as `HTTP1Connection`'s (its comment has the measured
    // cost): the loop thread only. nghttp2's callbacks reach the machine through its address,
    // which stays put while it runs.
    @exclusivity(unchecked) private var socket: SocketDriver
    @exclusivity(unchecked) private var machine: HTTP2StateMachine
    /// The socket was closed: nothing more is done here.
    @exclusivity(unchecked) private var finished = false

    init(socket: SocketDriver, address: String, opened: UInt64) {
        self.socket = socket
        self.address = address
        self.opened = opened
        machine = HTTP2StateMachine(MachineParts(loop: socket.loop, address: address, handback: socket.handback))
    }

    var token: UInt64 { socket.token }
    var waitingForHeadSince: UInt64? { machine.waitingForHeadSince }
    var isLongLived: Bool { machine.isLongLived }

    /// Starts the session with the bytes read so far (the preface, perhaps more).
    func start(with bytes: UnsafeRawBufferPointer) {
        run(machine.begin(with: bytes, now: machine.clock.now()))
    }

    // MARK: - Events (the rest: `MachineConnection`)

    @discardableResult func drive(_ report: LoopReport) -> Bool {
        guard !finished else { return false }
        if let action = report.event(&machine) { run(action) }
        return true
    }

    /// Does what the machine asks until it waits or ends (an HTTP/2 machine never hands off).
    private func run(_ action: ConnectionAction) {
        guard case .closed = socket.run(&machine, action) else { return }
        finished = true
        socket.close(self)
    }
}
