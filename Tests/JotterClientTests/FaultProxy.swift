import Foundation
import Glibc
import Synchronization

/// A TCP proxy on a free loopback port in front of `upstream`, for the convergence harness: it
/// passes bytes both ways untouched until a fault is armed; the next write request (`POST`,
/// `PUT`, `PATCH`, `DELETE`) to arrive then meets it at a chosen point of its exchange.
/// Threads of its own (blocking sockets), not Swift's cooperative pool, which the test runs on.
///
/// ```swift
/// let proxy = try FaultProxy(upstream: server.port)
/// proxy.arm(FaultProxy.Fault(at: .answered) { })     // the next write's answer never arrives
/// try await engine.sync()                             // the client resends it
/// print(proxy.disarm() ?? "no write was sent")
/// ```
final class FaultProxy: @unchecked Sendable {
    /// Where in a write's exchange the fault strikes.
    enum Point: String, Sendable {
        /// The request reached the proxy; the upstream never sees it.
        case arrived = "before the server had it"
        /// The request went on; `delay` later, the action (while the server may be working on it).
        case sent = "while the server had it"
        /// The upstream's final answer came; the client never gets it.
        case answered = "after the server answered, the answer lost"
        /// The answer went on to the client; `delay` later, the action.
        case delivered = "after the answer reached the client"
    }

    /// What strikes, and where; `action` runs on the proxy's thread (a `kill`), after which the
    /// connection is cut unless the point is `sent` or `delivered`.
    struct Fault: Sendable {
        var at: Point
        var delay: Double = 0
        var action: @Sendable () -> Void
    }

    let port: Int
    let upstream: Int
    private let listener: Int32
    private let armed = Mutex<Fault?>(nil)
    /// While set, answers reach the client `bytes` at a time, `seconds` apart: a slow link.
    let throttle = Mutex<(bytes: Int, seconds: Double)?>(nil)
    /// What the last armed fault did, once it struck.
    private let struck = Mutex<String?>(nil)
    private let acceptor = DispatchGroup()

    /// Listens on a free loopback port and forwards every connection to `127.0.0.1:upstream`.
    init(upstream: Int) throws {
        self.upstream = upstream
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            throw ProxyError(message: "the fault proxy cannot listen: \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            _ = $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        acceptor.enter()
        let thread = Thread { [self] in
            defer { acceptor.leave() }
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                relay(client)
            }
        }
        thread.name = "fault proxy"
        thread.start()
    }

    deinit { stop() }

    /// Stops accepting (connections already relayed end with their peers).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        acceptor.wait()
        close(listener)
    }

    /// The next write request meets `fault` (one write only).
    func arm(_ fault: Fault) {
        struck.withLock { $0 = nil }
        armed.withLock { $0 = fault }
    }

    /// Takes the fault back if no write met it; what it did, if one did.
    @discardableResult
    func disarm() -> String? {
        armed.withLock { $0 = nil }
        return struck.withLock { $0 }
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// One client connection: its upstream connection and a thread per direction.
    private final class Link: @unchecked Sendable {
        let client: Int32
        let upstream: Int32
        let fault = Mutex<(fault: Fault, request: String)?>(nil)
        private let open = Atomic<Int>(2)

        init(client: Int32, upstream: Int32) {
            self.client = client
            self.upstream = upstream
        }

        /// Ends both connections (the other direction's thread wakes from its read).
        func cut() {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(upstream, Int32(SHUT_RDWR))
        }

        /// A direction is done; the last closes both sockets.
        func done() {
            cut()
            if open.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                close(client)
                close(upstream)
            }
        }
    }

    private func relay(_ client: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: upstream)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, connected == 0 else {
            // As a refused connection to the server itself: the client sees it closed at once.
            if fd >= 0 { close(fd) }
            close(client)
            return
        }
        let link = Link(client: client, upstream: fd)
        for (name, from, to, requests) in [("→", client, fd, true), ("←", fd, client, false)] {
            let thread = Thread { [self] in
                defer { link.done() }
                pump(link, from: from, to: to, requests: requests)
            }
            thread.name = "fault proxy \(name)"
            thread.start()
        }
    }

    private static let writes = ["POST ", "PUT ", "PATCH ", "DELETE "]

    /// Copies bytes from one socket to the other until either ends, applying the link's fault.
    private func pump(_ link: Link, from: Int32, to: Int32, requests: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(from, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            let chunk = Array(buffer[..<count])
            if requests {
                let text = String(decoding: chunk.prefix(200), as: UTF8.self)
                if Self.writes.contains(where: { text.hasPrefix($0) }),
                    let fault = armed.withLock({ armed in
                        defer { armed = nil }; return armed
                    })
                {
                    let request = String(text.prefix { $0 != "\r\n" && $0 != "\r" && $0 != "\n" })
                    link.fault.withLock { $0 = (fault, request) }
                    if fault.at == .arrived {
                        strike(fault, request)
                        return
                    }
                    guard send(all: chunk, to: to) else { return }
                    if fault.at == .sent {
                        usleep(useconds_t(fault.delay * 1_000_000))
                        strike(fault, request)
                    }
                    continue
                }
            } else if let pending = link.fault.withLock({ $0 }),
                pending.fault.at == .answered || pending.fault.at == .delivered,
                !String(decoding: chunk.prefix(10), as: UTF8.self).hasPrefix("HTTP/1.1 1")
            {
                // The final answer (an interim `100 Continue` passes).
                let (fault, request) = pending
                link.fault.withLock { $0 = nil }
                if fault.at == .answered {
                    strike(fault, request)
                    return
                }
                guard send(all: chunk, to: to) else { return }
                usleep(useconds_t(fault.delay * 1_000_000))
                strike(fault, request)
                continue
            }
            if !requests, let (bytes, seconds) = throttle.withLock({ $0 }) {
                for start in stride(from: 0, to: chunk.count, by: bytes) {
                    guard send(all: Array(chunk[start..<min(start + bytes, chunk.count)]), to: to) else { return }
                    usleep(useconds_t(seconds * 1_000_000))
                }
                continue
            }
            guard send(all: chunk, to: to) else { return }
        }
    }

    private func strike(_ fault: Fault, _ request: String) {
        fault.action()
        let delay = fault.delay > 0 ? String(format: " (%.1f ms)", fault.delay * 1000) : ""
        struck.withLock { $0 = "\(request): \(fault.at.rawValue)\(delay)" }
    }

    private func send(all bytes: [UInt8], to fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    struct ProxyError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
