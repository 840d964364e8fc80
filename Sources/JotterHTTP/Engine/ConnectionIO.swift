import CEngine
import Glibc

/// A connection's socket and, on an HTTPS listener, its OpenSSL session: every read and write of
/// `HTTP1Connection` and `HTTP2Connection` goes through here, the same for both.
///
/// Results: a byte count (0 from `receive` at the peer's end), or one of the negative codes.
struct ConnectionIO {
    static let wouldBlock = -1
    static let failed = -2
    /// A TLS read that can go on only once the socket takes bytes (a record OpenSSL must send).
    static let readWantsWrite = -3

    let fd: Int32
    /// The OpenSSL session of an HTTPS connection; nil for plain HTTP.
    var tls: UnsafeMutableRawPointer?

    /// Reads into `buffer`.
    func receive(_ buffer: UnsafeMutableRawPointer, _ capacity: Int) -> Int {
        guard let tls else {
            let count = recv(fd, buffer, capacity, 0)
            if count >= 0 { return count }
            return errno == EAGAIN || errno == EINTR ? Self.wouldBlock : Self.failed
        }
        let count = jotter_tls_read(tls, buffer, capacity)
        switch count {
        case 0...: return count
        case Int(JOTTER_TLS_WANT_READ): return Self.wouldBlock
        case Int(JOTTER_TLS_WANT_WRITE): return Self.readWantsWrite
        case Int(JOTTER_TLS_CLOSED): return 0
        default: return Self.failed
        }
    }

    /// Writes what the socket takes of `buffer`.
    func transmit(_ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        guard let tls else {
            let written = send(fd, buffer, count, Int32(MSG_NOSIGNAL))
            if written >= 0 { return written }
            return errno == EAGAIN || errno == EINTR ? Self.wouldBlock : Self.failed
        }
        let written = jotter_tls_write(tls, buffer, count)
        switch written {
        case 0...: return written
        case Int(JOTTER_TLS_WANT_READ), Int(JOTTER_TLS_WANT_WRITE): return Self.wouldBlock
        default: return Self.failed
        }
    }

    /// Writes `first` then `second` as far as the socket takes them: one `sendmsg` for plain
    /// HTTP, records one after the other over TLS.
    func transmit(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int {
        guard tls == nil else {
            var total = 0
            for part in [first, second] where part.count > 0 {
                let written = transmit(part.baseAddress!, part.count)
                if written < 0 { return total > 0 ? total : written }
                total += written
                if written < part.count { break }
            }
            return total
        }
        var vectors = (
            iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count)
        )
        let written = withUnsafeMutableBytes(of: &vectors) { raw in
            var message = msghdr()
            message.msg_iov = raw.baseAddress!.assumingMemoryBound(to: iovec.self)
            message.msg_iovlen = second.count > 0 ? 2 : 1
            return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
        }
        if written >= 0 { return written }
        return errno == EAGAIN || errno == EINTR ? Self.wouldBlock : Self.failed
    }

    /// Sends up to `count` bytes of `file` from `offset`: `sendfile` for plain HTTP; over TLS,
    /// read into `buffer` and written from there. 0 when the file ended early.
    func transmit(file: Int32, offset: Int, count: Int, buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard tls != nil else {
            var position = off_t(offset)
            let sent = sendfile(fd, file, &position, count)
            if sent >= 0 { return sent }
            return errno == EAGAIN || errno == EINTR ? Self.wouldBlock : Self.failed
        }
        let read = pread(file, buffer.baseAddress, min(count, buffer.count), off_t(offset))
        if read <= 0 { return read == 0 ? 0 : Self.failed }
        return transmit(buffer.baseAddress!, read)
    }

    /// Bytes wait to be read: the loop was busy, the client was not late (the sweep asks before
    /// it closes a connection for a deadline).
    var hasUnreadBytes: Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0 || holdsBytes
    }

    /// OpenSSL holds decrypted bytes the socket will not announce again.
    var holdsBytes: Bool { tls.map { jotter_tls_pending($0) > 0 } ?? false }

    /// The protocol ALPN chose, if any.
    var negotiatedProtocol: String? {
        guard let tls else { return nil }
        var name = [CChar](repeating: 0, count: 32)
        let length = jotter_tls_alpn(tls, &name, name.count)
        guard length > 0 else { return nil }
        return String(decoding: name[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Sends close_notify (TLS) and shuts the write side.
    func shutdownWrites() {
        if let tls { jotter_tls_shutdown(tls) }
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Frees the session and closes the socket.
    mutating func close() {
        if let tls {
            jotter_tls_free(tls)
            self.tls = nil
        }
        Glibc.close(fd)
    }
}
