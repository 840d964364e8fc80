import CEngine
import Glibc
import JotterSystem

/// One HTTP/1.1 connection on its event loop: an `HTTP1StateMachine`, which holds everything
/// about requests and answers, driven by a `SocketDriver`, which does its I/O. Each report of the
/// loop (the socket ready, a later reply, a stream woken, the sweep) becomes an event of the
/// machine; each action it returns is done by the driver and its result fed back, until the
/// machine waits.
///
/// On an HTTPS listener the TLS handshake is done here first; then every read and write goes
/// through the connection's OpenSSL session (`ConnectionIO`), and files are read into the
/// loop's stream buffer and written through it, as TLS cannot `sendfile`. A connection that
/// turns out to speak HTTP/2 hands its socket to an `HTTP2Connection`. Loop thread only.
final class HTTP1Connection: MachineConnection {
    let address: String
    let opened: UInt64
    // The state below is unchecked for exclusive access (no runtime check per access: checked,
    // with `HTTP2Connection`'s, a hello costs 430 instructions, +1.8 %; docs/benchmarks.md,
    // issue 34 item 3, which names the tests): only the loop thread touches it, and nothing the
    // machine calls (middleware, handlers, bodies) can reach this connection but by posting a
    // task to the loop. Closing tells the loop the token (`SocketDriver.close`), so no access
    // to `socket` overlaps another.
    @exclusivity(unchecked) private var socket: SocketDriver
    @exclusivity(unchecked) private var machine: HTTP1StateMachine
    @exclusivity(unchecked) private var handshaking: Bool
    @exclusivity(unchecked) private var handshakeStarted = false
    /// The socket was closed or handed to an `HTTP2Connection`: nothing more is done here.
    @exclusivity(unchecked) private var finished = false

    init(loop: LoopState, fd: Int32, token: UInt64, address: String, tls: UnsafeMutableRawPointer? = nil) {
        socket = SocketDriver(loop: loop, io: ConnectionIO(fd: fd, tls: tls), token: token)
        self.address = address
        handshaking = tls != nil
        let parts = MachineParts(loop: loop, address: address, handback: socket.handback)
        opened = parts.now
        machine = HTTP1StateMachine(parts)
    }

    var token: UInt64 { socket.token }
    var waitingForHeadSince: UInt64? { machine.waitingForHeadSince }
    var isLongLived: Bool { !handshaking && machine.isLongLived }

    // MARK: - Events

    /// Until the TLS handshake is done, the socket's readiness goes to it, not to the machine
    /// (the sweep still reaches the machine: the handshake counts against the header deadline).
    func handle(events: UInt32) {
        if handshaking, !finished, !SocketDriver.hungUp(events) { return continueHandshake() }
        drive(.socket(events))
    }

    func deliver(_ task: EventLoop.Task) {
        if handshaking, case .read = task { return }  // the handshake reads for itself
        forward(task)
    }

    @discardableResult func drive(_ report: LoopReport) -> Bool {
        guard !finished else { return false }
        if let action = report.event(&machine) { run(action) }
        return true
    }

    /// Does what the machine asks until it waits or ends.
    private func run(_ action: ConnectionAction) {
        switch socket.run(&machine, action) {
        case .waiting: break
        case .closed:
            finished = true
            socket.close(self)
        case .handOff(let bytes): handOff(bytes: bytes)
        }
    }

    // MARK: - TLS

    /// What the access log shows for the request of a client that spoke plain HTTP to the
    /// HTTPS port (no request line was read: the bytes were refused as they came).
    static let plainHTTPOnHTTPSPort = "<plain-http-on-https-port>"

    /// The TLS handshake, as far as the socket allows. A client that sends plain HTTP to the
    /// HTTPS port gets a plain `400` saying so.
    private func continueHandshake() {
        guard let tls = socket.io.tls else { return }
        if !handshakeStarted {
            // The first byte of a TLS connection starts a handshake record (22); a letter starts a
            // plain HTTP request line.
            var first: UInt8 = 0
            let peeked = recv(socket.io.fd, &first, 1, Int32(MSG_PEEK))
            if peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EINTR) {
                run(machine.abort(.clientAbort))  // closed (or failed) before a byte: nothing was asked
                return
            }
            if peeked < 0 { return }  // nothing to read yet
            if first != 0x16 {
                jotter_tls_free(tls)
                socket.io.tls = nil
                handshaking = false
                run(
                    machine.refuse(
                        HTTPError(.badRequest, detail: "this port serves HTTPS: send the request to https://", closesConnection: true),
                        target: Self.plainHTTPOnHTTPSPort))
                return
            }
            handshakeStarted = true
        }
        switch jotter_tls_handshake(tls) {
        case 0:
            handshaking = false
            if socket.io.negotiatedProtocol == "h2" {
                handOff(bytes: UnsafeRawBufferPointer(start: nil, count: 0))
                return
            }
            run(machine.handshakeFinished(now: machine.clock.now()))
        case Int(JOTTER_TLS_WANT_READ):
            socket.setInterest(.init(read: true, write: false))
        case Int(JOTTER_TLS_WANT_WRITE):
            socket.setInterest(.init(read: false, write: true))
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
        let successor = HTTP2Connection(socket: socket, address: address, opened: opened)
        socket.loop.replace(token: token, with: successor)
        successor.start(with: bytes)
    }
}
