import Glibc
import JotterHTTP
import JotterStore
import Synchronization
import JotterSystem

/// The bytes of partial uploads in the data folder of this instance (SQLite, or PostgreSQL with
/// the uploads in the data folder): `<data>/partial/<id>`, one file each, and who is appending
/// to each right now.
///
/// One request at a time writes to an upload. A request that takes an upload over (a new
/// `HEAD`, `PATCH` or `DELETE` on it: the draft's recommendation for concurrency) bumps its
/// generation under the upload's lock; the request it replaced finds that on its next chunk,
/// writes nothing more and is refused (its connection closed). So once a take-over returns,
/// the file's size is the upload's offset and stays so until the new request writes.
final class PartialFiles: PartialStorage {
    let directory: String
    let store: any DataStore
    private let entries = Mutex<[String: PartialFile]>([:])

    init(directory: String, store: any DataStore) throws {
        self.directory = directory
        self.store = store
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw HTTPError(.internalServerError, detail: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
    }

    func path(of id: String) -> String { directory + "/" + id }

    // MARK: - PartialStorage

    func create(_ record: PartialUploadRecord, owner: Owner, tentative: Bool) throws -> (record: PartialUploadRecord, writer: any PartialWriter) {
        let fd = open(path(of: record.id), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HTTPError(.insufficientStorage, detail: "cannot create the upload's file: \(String(cString: strerror(errno)))") }
        close(fd)
        do {
            try store.createPartialUpload(record, owner: owner)
        } catch {
            unlink(path(of: record.id))
            throw error
        }
        guard let (generation, offset) = entry(record.id).takeOver() else { throw HTTPError.takenOver(record.id) }
        return (record, try LocalPartialWriter(files: self, id: record.id, owner: owner, generation: generation, start: offset, tentative: tentative))
    }

    func takeOver(_ id: String, owner: Owner, appending: Bool, tentative: Bool) throws -> PartialTakeOver {
        guard let record = try store.partialUpload(id: id, owner: owner) else { return .missing }
        // Retired: completing right now (its bytes moved, its row not replaced yet), or cancelled.
        guard let (generation, offset) = entry(id).takeOver() else { return .completing }
        let writer =
            appending ? try LocalPartialWriter(files: self, id: id, owner: owner, generation: generation, start: offset, tentative: tentative) : nil
        return .held(record: record, offset: offset, writer: writer)
    }

    func cancel(_ id: String, owner: Owner) throws -> Bool {
        guard try store.partialUpload(id: id, owner: owner) != nil else { return false }
        entry(id).retire()
        let deleted = try store.deletePartialUpload(id: id, owner: owner)
        retire(id, removingFile: true)
        return deleted
    }

    func expire(_ record: PartialUploadRecord, owner: Owner) {
        entry(record.id).retire()
        _ = try? store.deletePartialUpload(id: record.id, owner: owner)
        retire(record.id, removingFile: true)
    }

    func sweepLeftovers(now: Int64, lifetime: Int64) -> Int {
        // Files no row names (a crash between a file and its row): untouched for longer than
        // any row lives, so whatever row they had has expired and gone.
        var removed = 0
        for (name, modified) in listing() where modified < now - lifetime - 60 {
            retire(name, removingFile: true)
            removed += 1
        }
        return removed
    }

    // MARK: - Files and their state

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

/// What one request appends to a partial file (`PartialFiles`).
final class LocalPartialWriter: PartialWriter, @unchecked Sendable {
    // @unchecked: `offset` belongs to the request's engine thread while its body arrives, then
    // to the one thread that keeps or completes the upload; the file's state is `entry`'s.
    private let files: PartialFiles
    private let id: String
    private let owner: Owner
    private let entry: PartialFile
    private let generation: UInt64
    private let fd: Int32
    /// Where this request's bytes start.
    private let start: Int64
    private var offset: Int64

    init(files: PartialFiles, id: String, owner: Owner, generation: UInt64, start: Int64, tentative: Bool) throws(HTTPError) {
        self.files = files
        self.id = id
        self.owner = owner
        entry = files.entry(id)
        self.generation = generation
        self.start = start
        offset = start
        fd = open(files.path(of: id), O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw HTTPError(
                errno == ENOSPC ? .insufficientStorage : .internalServerError,
                detail: "cannot open the upload's file: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    func append(_ chunk: UnsafeRawBufferPointer) throws(HTTPError) {
        guard try entry.write(chunk, at: offset, fd: fd, generation: generation) else { throw HTTPError.takenOver(id) }
        offset += Int64(chunk.count)
    }

    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool { false }

    func keep(length: Int64?, expiresAt: Int64, discarding: Bool) throws -> Bool {
        if discarding { entry.truncate(to: start, fd: fd, generation: generation) }
        guard entry.holds(generation) else { return false }
        guard fdatasync(fd) == 0 else { throw HTTPError(.insufficientStorage, detail: "cannot store the upload's bytes") }
        let progress = PartialUploadProgress(offset: discarding ? start : offset, length: length, expiresAt: expiresAt, backendState: "")
        return try files.store.updatePartialUpload(id: id, progress: progress, owner: owner)
    }

    func release() {}

    func complete(length: Int64, expected: String?) throws -> String {
        guard fsync(fd) == 0 else { throw HTTPError(.insufficientStorage, detail: "cannot store the upload's bytes") }
        let (sealed, running) = entry.seal(generation: generation, length: length)
        guard sealed else { throw HTTPError.takenOver(id) }
        let path = files.path(of: id)
        let sha256 = try running ?? fileSHA256(path)
        if let expected, expected != sha256 {
            files.retire(id, removingFile: true)
            throw PartialDigestMismatch(actual: sha256)
        }
        try files.store.blobs.put(UploadRecord.blobKey(id), movingFile: path)
        files.retire(id, removingFile: false)
        return sha256
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
                    throw HTTPError(
                        errno == ENOSPC ? .insufficientStorage : .internalServerError,
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
