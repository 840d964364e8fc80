#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JotterSystem

/// A few MiB kept allocated in the data folder so that deletions still commit when the disk is
/// full: SQLite needs room in its WAL even to delete. When a batch fails for lack of space, the
/// writer releases the reserve and retries only the jobs that free space; once there is room
/// again, the reserve is taken back. Used by the writer thread only.
final class SpaceReserve {
    let path: String
    let size: Int
    private var lastAttempt: UInt64 = 0

    init(dataDirectory: String, size: Int = 4 << 20) {
        path = dataDirectory + "/space-reserve"
        self.size = size
        _ = take()
    }

    /// True when the reserve is in place.
    var isHeld: Bool { access(path, F_OK) == 0 }

    /// Frees the reserve; true when there was one to free.
    func release() -> Bool {
        unlink(path) == 0
    }

    /// Takes the reserve back if it is missing and at least three times its size is free
    /// (tried at most once a second).
    func restoreIfRoom() {
        guard !isHeld else { return }
        let seconds = MonotonicClock.microseconds() / 1_000_000
        guard seconds > lastAttempt else { return }
        lastAttempt = seconds
        var stats = statvfs()
        guard statvfs(path.withoutLastComponent, &stats) == 0,
            UInt64(stats.f_bavail) * UInt64(stats.f_frsize) >= UInt64(3 * size)
        else { return }
        _ = take()
    }

    @discardableResult
    private func take() -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if posix_fallocate(fd, 0, off_t(size)) != 0 {
            unlink(path)
            return false
        }
        return true
    }
}

private extension String {
    var withoutLastComponent: String {
        guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return String(self[..<slash])
    }
}
