import Glibc
import JotterHTTP
import Synchronization

/// The bytes of partial uploads on this instance: `<data>/partial/<id>`, one file each, and who
/// is appending to each right now.
///
/// One request at a time writes to an upload. A request that takes an upload over (a new
/// `HEAD`, `PATCH` or `DELETE` on it: the draft's recommendation for concurrency) bumps its
/// generation under the upload's lock; the request it replaced finds that on its next chunk,
/// writes nothing more and is refused (its connection closed). So once a take-over returns,
/// the file's size is the upload's offset and stays so until the new request writes.
final class PartialFiles: Sendable {
    let directory: String
    private let entries = Mutex<[String: PartialFile]>([:])

    init(directory: String) throws {
        self.directory = directory
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw HTTPError(.internalServerError, detail: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
    }

    func path(of id: String) -> String { directory + "/" + id }

    /// Every partial file's name and modification time (Unix seconds).
    func listing() -> [(name: String, modified: Int64)] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var found: [(String, Int64)] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } }
            guard name != ".", name != ".." else { continue }
            var status = stat()
            if stat(path(of: name), &status) == 0 { found.append((name, Int64(status.st_mtim.tv_sec))) }
        }
        return found
    }

    /// Creates the empty file of a new upload.
    func create(_ id: String) throws(HTTPError) {
        let fd = open(path(of: id), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HTTPError(.insufficientStorage, detail: "cannot create the upload's file: \(String(cString: strerror(errno)))") }
        close(fd)
    }

    /// The upload's shared state on this instance (made on first use, from the file's size).
    func entry(_ id: String) -> PartialFile {
        entries.withLock { entries in
            if let found = entries[id] { return found }
            let made = PartialFile(path: path(of: id))
            entries[id] = made
            return made
        }
    }

    /// Stops whoever writes and forgets the upload's state; removes its file when asked.
    func retire(_ id: String, removingFile: Bool) {
        let entry = entries.withLock { $0.removeValue(forKey: id) }
        entry?.retire()
        if removingFile { unlink(path(of: id)) }
    }
}

/// One partial upload's state on this instance, guarded by its lock.
final class PartialFile: Sendable {
    struct State: ~Copyable {
        /// Bumped by every take-over: only the request holding the current one may write.
        var generation: UInt64 = 0
        /// The SHA-256 of bytes 0..<hashed, while every byte went through it in this process.
        var hash: SHA256? = SHA256()
        var hashed: Int64 = 0
        /// Gone: cancelled, completed or expired; nobody may write.
        var retired = false
    }

    let path: String
    private let state = Mutex<State>(State())

    init(path: String) { self.path = path }

    /// The current size of the file (the upload's offset), -1 when it is missing.
    private func size() -> Int64 {
        var status = stat()
        return stat(path, &status) == 0 ? Int64(status.st_size) : -1
    }

    /// Ends any request writing now; the generation the caller now holds and the offset.
    /// nil when the upload is retired or its file is missing (its state is lost).
    func takeOver() -> (generation: UInt64, offset: Int64)? {
        state.withLock { state in
            guard !state.retired else { return nil }
            state.generation &+= 1
            let offset = size()
            guard offset >= 0 else { return nil }
            if state.hashed != offset { state.hash = nil }
            return (state.generation, offset)
        }
    }

    /// Writes `chunk` at `offset` if `generation` still holds the upload; false when it was
    /// taken over (nothing written). Throws when the disk refuses.
    func write(_ chunk: UnsafeRawBufferPointer, at offset: Int64, fd: Int32, generation: UInt64) throws(HTTPError) -> Bool {
        try state.withLock { (state: inout State) throws(HTTPError) -> Bool in
            guard !state.retired, state.generation == generation else { return false }
            var done = 0
            while done < chunk.count {
                let n = pwrite(fd, chunk.baseAddress! + done, chunk.count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    let reason = String(cString: strerror(errno))
                    // Nothing half-written stays: back to where this chunk began.
                    _ = ftruncate(fd, off_t(offset))
                    throw HTTPError(errno == ENOSPC ? .insufficientStorage : .internalServerError,
                                    detail: "cannot store the upload's bytes: \(reason)", closesConnection: true)
                }
                done += n
            }
            if state.hashed == offset, var hash = state.hash.take() {
                hash.update(chunk)
                state.hash = consume hash
                state.hashed += Int64(chunk.count)
            }
            return true
        }
    }

    /// Cuts the file back to `offset` (a tus chunk whose checksum failed), if `generation` holds.
    func truncate(to offset: Int64, fd: Int32, generation: UInt64) {
        state.withLock { state in
            guard state.generation == generation else { return }
            _ = ftruncate(fd, off_t(offset))
            state.hash = nil
        }
    }

    /// For completion: retires the upload if `generation` still holds it; the running SHA-256
    /// when it covers all `length` bytes. nil: taken over meanwhile (nothing to complete).
    func seal(generation: UInt64, length: Int64) -> (sealed: Bool, sha256: String?) {
        state.withLock { state in
            guard !state.retired, state.generation == generation else { return (false, nil) }
            state.retired = true
            state.generation &+= 1
            guard state.hashed == length, let hash = state.hash.take() else { return (true, nil) }
            return (true, hash.finish())
        }
    }

    func retire() {
        state.withLock { state in
            state.retired = true
            state.generation &+= 1
        }
    }

    /// True while `generation` holds the upload.
    func holds(_ generation: UInt64) -> Bool { state.withLock { !$0.retired && $0.generation == generation } }
}

/// SHA-256 of a file's bytes, read in 1 MiB chunks (a completed upload whose bytes were not all
/// hashed as they arrived: resumed after a restart).
func fileSHA256(_ path: String) throws(HTTPError) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw HTTPError(.internalServerError, detail: "cannot read the upload's bytes") }
    defer { close(fd) }
    var hash = SHA256()
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
    defer { buffer.deallocate() }
    while true {
        let n = read(fd, buffer.baseAddress, buffer.count)
        if n < 0 { if errno == EINTR { continue }; throw HTTPError(.internalServerError, detail: "cannot read the upload's bytes") }
        if n == 0 { break }
        hash.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
    }
    return hash.finish()
}
