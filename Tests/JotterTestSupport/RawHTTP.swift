import Foundation
import Glibc

/// A response as read off the wire.
public struct WireResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole response text as received (for raw assertions).
    public var raw: String

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body decoded as a JSON object.
    public func json() throws -> [String: Any] {
        try require(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    }
}

private func require<T>(_ value: T?) throws -> T {
    guard let value else { throw RawHTTP.Failure(message: "unexpected nil") }
    return value
}

/// A minimal HTTP/1.1 client over a plain socket, so tests control every byte they send and
/// see exactly what comes back, including whether the server closed the connection.
public final class RawHTTP {
    public struct Failure: Error, CustomStringConvertible {
        public let message: String
        public init(message: String) { self.message = message }
        public var description: String { message }
    }

    public let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `127.0.0.1:port`, optionally from another loopback source address.
    public init(port: Int, sourceAddress: String? = nil, timeout: Double = 5) throws {
        fd = try Self.connect(port: port, sourceAddress: sourceAddress, timeout: timeout)
    }

    /// A connected socket, or an error with nothing left open. `fd` is assigned only on success:
    /// a class whose initializer throws once every property is set still runs `deinit`, which
    /// would close the descriptor a second time — by then perhaps another thread's file (the
    /// tests run servers in this process).
    private static func connect(port: Int, sourceAddress: String?, timeout: Double) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: "socket failed") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if let sourceAddress {
            var source = sockaddr_in()
            source.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, sourceAddress, &source.sin_addr)
            let ok = withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard ok else { close(fd); throw Failure(message: "bind to \(sourceAddress) failed") }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(message: "connect to port \(port) failed: \(reason)")
        }
        return fd
    }

    deinit { close(fd) }

    /// Ends the connection with a reset (RST), as a client that crashed or lost its network: the
    /// socket is closed with a zero linger, and `fd` then names `/dev/null` until `deinit` closes
    /// it (so the number is never closed twice).
    public func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        dup2(null, fd)
        close(null)
    }

    /// Closes the connection now with an ordinary FIN, unread bytes and all (the kernel then
    /// answers what the server still sends with a reset); `fd` then names `/dev/null` as after
    /// `reset`.
    public func closeNow() {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        dup2(null, fd)
        close(null)
    }

    /// Sends raw bytes. When the server closed the connection before taking them all, the
    /// error says how far the send got and what the server answered before it closed (that
    /// answer is still there for `readResponse`).
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else {
                let reason = String(cString: strerror(errno))
                // Kept for the reads after: a caller may still read the answer.
                buffer += readWaiting()
                let answer = String(decoding: buffer, as: UTF8.self)
                throw Failure(
                    message: "send failed: \(reason) after \(offset) of \(bytes.count) bytes; the server answered "
                        + (answer.isEmpty ? "nothing" : "«\(answer.prefix(2000))»"))
            }
            offset += sent
        }
    }

    /// The bytes already received and not read, without waiting for more.
    private func readWaiting() -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return received }
            received += chunk[..<count]
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads one response (status line, headers, Content-Length or chunked body).
    public func readResponse(head: Bool = false) throws -> WireResponse {
        let headerEnd = try readUntil([13, 10, 13, 10])
        let headText = String(decoding: buffer[..<headerEnd], as: UTF8.self)
        buffer.removeFirst(headerEnd + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(message: "bad status line '\(statusLine)'") }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (name: String(line[..<colon]), value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        func value(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
        var body: [UInt8] = []
        if head || status == 304 || status == 204 || (100..<200).contains(status) {
            body = []
        } else if value("transfer-encoding")?.lowercased() == "chunked" {
            while true {
                let lineEnd = try readUntil([13, 10])
                let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";")[0]
                buffer.removeFirst(lineEnd + 2)
                guard let size = Int(sizeText, radix: 16) else { throw Failure(message: "bad chunk size") }
                try fill(size + 2)
                body += buffer[..<size]
                buffer.removeFirst(size + 2)
                if size == 0 { break }
            }
        } else if let length = value("content-length").flatMap(Int.init) {
            try fill(length)
            body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else {
            body = readToEnd()
        }
        return WireResponse(status: status, headers: headers, body: body, raw: headText + "\r\n\r\n" + String(decoding: body, as: UTF8.self))
    }

    /// Reads responses until a final one (2xx–5xx), skipping interim ones (`104` progress).
    public func readFinalResponse(head: Bool = false) throws -> WireResponse {
        while true {
            let response = try readResponse(head: head)
            if !(100..<200).contains(response.status) || response.status == 101 { return response }
        }
    }

    /// Sends a request and reads its response.
    public func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [],
        close closeAfter: Bool = false
    ) throws -> WireResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { text += "Content-Length: \(body.count)\r\n" }
        if closeAfter { text += "Connection: close\r\n" }
        try send(Array((text + "\r\n").utf8) + body)
        return try readResponse(head: method == "HEAD")
    }

    /// True when the server has closed the connection (reads EOF within the timeout); any bytes
    /// that arrive first are discarded.
    public func isClosedByServer() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }

    /// Reads raw bytes until `marker` has arrived; returns everything read so far (and keeps
    /// nothing buffered). For streaming responses.
    public func readStream(until marker: String) throws -> String {
        let bytes = Array(marker.utf8)
        _ = try readUntil(bytes)
        let text = String(decoding: buffer, as: UTF8.self)
        buffer = []
        return text
    }

    /// Everything until the server closes the connection (or the timeout).
    public func readToEnd() -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { break }
            buffer += chunk[..<count]
        }
        defer { buffer = [] }
        return buffer
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for start in searchFrom...(buffer.count - marker.count) where buffer[start..<(start + marker.count)].elementsEqual(marker) {
                    return start
                }
                searchFrom = max(0, buffer.count - marker.count + 1)
            }
            try readMore()
        }
    }

    private func fill(_ count: Int) throws {
        while buffer.count < count { try readMore() }
    }

    private func readMore() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &chunk, chunk.count, 0)
        guard count > 0 else {
            throw Failure(message: count == 0 ? "connection closed by server" : "recv failed: \(String(cString: strerror(errno)))")
        }
        buffer += chunk[..<count]
    }
}
