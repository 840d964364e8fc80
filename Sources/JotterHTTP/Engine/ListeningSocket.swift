import CEngine
import Glibc

/// Why the server could not start.
public struct ServerStartError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(description: String) { self.description = description }
}

/// Opens a non-blocking, listening TCP socket on `host:port` (port 0: any free port).
///
/// A failure says exactly what went wrong ("127.0.0.1:8080 is already in use") and works for names, IPv4 and IPv6.
enum ListeningSocket {
    static func open(host: String, port: Int, backlog: Int32 = 1024) throws(ServerStartError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw ServerStartError(description: "cannot resolve host '\(host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }

        var lastError = ServerStartError(description: "no address for '\(host)'")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(
                info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                info.pointee.ai_protocol)
            guard fd >= 0 else { lastError = failure("socket", host, port); continue }
            var yes: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            if bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                lastError =
                    errno == EADDRINUSE
                    ? ServerStartError(
                        description: "\(display(host, port)) is already in use (another server is listening there); choose another --port")
                    : failure("bind", host, port)
                close(fd)
                continue
            }
            guard listen(fd, backlog) == 0 else { lastError = failure("listen", host, port); close(fd); continue }
            return fd
        }
        throw lastError
    }

    /// A connection taken from a listening socket: its socket and the peer's address.
    struct Accepted: Sendable {
        let fd: Int32
        let address: String
    }

    /// Accepts a connection from `listener` without waiting; nil when none is queued.
    static func accept(_ listener: Int32) -> Accepted? {
        var address = [CChar](repeating: 0, count: 64)
        while true {
            let fd = jotter_accept(listener, &address, 64)
            if fd >= 0 {
                return Accepted(fd: fd, address: String(decoding: address.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            // A connection reset while queued is skipped; nothing queued (or a failure) ends it.
            guard errno == ECONNABORTED || errno == EINTR else { return nil }
        }
    }

    /// Every connection queued on `listener` now (at most `limit`), taken without waiting.
    static func acceptQueued(_ listener: Int32, limit: Int = 4096) -> [Accepted] {
        var taken: [Accepted] = []
        while taken.count < limit, let accepted = accept(listener) { taken.append(accepted) }
        return taken
    }

    /// The port a listening socket is bound to.
    static func port(of fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { return 0 }
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { pointer -> Int in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    static func display(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func failure(_ call: String, _ host: String, _ port: Int) -> ServerStartError {
        ServerStartError(description: "cannot listen on \(display(host, port)): \(call): \(String(cString: strerror(errno)))")
    }
}
