#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The file work of backups and restores: placing upload files (link or copy, synced),
/// folders, sizes, listings.
enum FileTransfer {
    /// The file to place is gone (deleted after the snapshot that named it).
    struct SourceMissing: Error {
        let path: String
    }

    /// Puts `source` at `target` (which must not exist): a hard link when `link` and the two
    /// are on one file system, else a copy whose bytes are synced before this returns.
    static func place(_ source: String, at target: String, link: Bool) throws {
        if link {
            if Glibc.link(source, target) == 0 { return }
            if errno == ENOENT { throw SourceMissing(path: source) }
            guard errno == EXDEV || errno == EPERM || errno == EMLINK else { throw failure("link \(source) to \(target)") }
        }
        try copy(source, to: target)
    }

    /// Copies `source` to a new file `target` and syncs it.
    static func copy(_ source: String, to target: String) throws {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else {
            if errno == ENOENT { throw SourceMissing(path: source) }
            throw failure("open \(source)")
        }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw failure("create \(target)") }
        var complete = false
        defer {
            close(output)
            if !complete { unlink(target) }
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw failure("read \(source)") }
            if count == 0 { break }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes { write(output, $0.baseAddress! + offset, count - offset) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { throw failure("write \(target)") }
                offset += written
            }
        }
        guard fsync(output) == 0 else { throw failure("sync \(target)") }
        complete = true
    }

    /// Creates `folder` and its missing parents (mode 0700 for the new ones).
    static func makeFolder(_ folder: String) throws(StoreError) {
        var path = folder.hasPrefix("/") ? "/" : ""
        for component in folder.split(separator: "/") {
            path += (path.isEmpty || path.hasSuffix("/") ? "" : "/") + component
            if mkdir(path, 0o700) != 0 && errno != EEXIST { throw failure("create \(path)") }
        }
    }

    /// Syncs a folder, so the names created in it survive a crash.
    static func syncFolder(_ folder: String) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// The size of a regular file, or nil when there is none.
    static func size(of path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// The names in `folder` but `.` and `..`; empty when it can't be read.
    static func entries(of folder: String) -> [String] {
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private static func failure(_ what: String) -> StoreError {
        .system("cannot \(what): \(String(cString: strerror(errno)))")
    }
}

/// An advisory lock (`flock`) on a data folder: every open store holds it shared, a restore
/// needs it exclusive — so a restore never replaces the files under a running server.
final class DataFolderLock: Sendable {
    private let descriptor: Atomic<Int32>

    /// Takes the lock without waiting; throws `.inUse` when it is held the other way.
    init(_ folder: String, exclusive: Bool) throws(StoreError) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .system("cannot open \(folder): \(String(cString: strerror(errno)))") }
        guard flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 else {
            close(fd)
            throw exclusive
                ? .inUse("\(folder) is in use by a running jotter server; stop it first")
                : .inUse("\(folder) is being restored; try again when the restore is done")
        }
        descriptor = Atomic(fd)
    }

    /// The descriptor that holds the lock (-1 once released).
    var fd: Int32 { descriptor.load(ordering: .relaxed) }

    /// Releases the lock. Idempotent.
    ///
    /// Unlocked before it is closed: a child process another thread forks keeps a copy of the
    /// descriptor until its `exec` (`O_CLOEXEC` closes it only then), and the lock belongs to
    /// the open file, so closing ours alone would leave the folder locked for that moment.
    func unlock() {
        let fd = descriptor.exchange(-1, ordering: .relaxed)
        guard fd >= 0 else { return }
        flock(fd, LOCK_UN)
        close(fd)
    }
}
