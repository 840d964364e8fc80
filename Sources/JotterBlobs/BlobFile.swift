#if canImport(Glibc)
import Glibc
#endif

/// A file descriptor, closed when this goes away. For chunked reads and durable writes.
final class BlobFile {
    let descriptor: Int32

    init(readingFrom path: String) throws {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BlobError.io("\(path): \(errorText())") }
    }

    init(creating path: String) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BlobError.io("\(path): \(errorText())") }
    }

    init(adopting descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Up to `count` bytes, or nil at the end of the file.
    func read(upTo count: Int) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + filled, count - filled) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw BlobError.io(errorText()) }
            if n == 0 { break }
            filled += n
        }
        guard filled > 0 else { return nil }
        buffer.removeLast(count - filled)
        return buffer
    }

    /// Reads from `offset`, up to `count` bytes, into `buffer`; returns how many (0 at the end).
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        while true {
            let n = pread(descriptor, buffer.baseAddress!, buffer.count, off_t(offset))
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw BlobError.io(errorText()) }
            return n
        }
    }

    func write(_ bytes: [UInt8]) throws {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw BlobError.io(errorText()) }
            written += n
        }
    }

    func sync() throws {
        guard fsync(descriptor) == 0 else { throw BlobError.io("fsync: \(errorText())") }
    }
}

func errorText() -> String { String(cString: strerror(errno)) }
