#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Synchronization

/// One open `SQLiteStore` on its data folder, as its `Idempotency-Key` claims name it: a random
/// number, and the file `<data>/instances/<number>` it holds locked (`flock`, exclusive) for as
/// long as it is open. The kernel drops the lock when the process dies, however it dies.
///
/// A claim with neither an answer nor a committed write whose instance's file is no longer
/// locked — its server was killed, crashed, or closed the store without answering — is taken
/// over by the next request with that key (`IdempotencyRows.claim`), instead of answering `409`
/// until the claim's five-minute lease ends: the SQLite side of what `PostgresStore.instance`
/// and its advisory lock do for PostgreSQL.
final class SQLiteInstance: Sendable {
    /// This instance's number, in the claims it makes.
    let number: Int64
    private let folder: String
    private let descriptor: Atomic<Int32>

    /// Takes a new number and locks its file; removes the files of instances that are gone.
    init(dataDirectory: String) throws(StoreError) {
        folder = (dataDirectory.hasSuffix("/") ? dataDirectory : dataDirectory + "/") + "instances"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .system("cannot create \(folder): \(error)")
        }
        var number: Int64
        var fd: Int32
        repeat {
            number = Int64.random(in: 1...Int64.max)
            fd = open(folder + "/\(number)", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        } while fd < 0 && errno == EEXIST
        guard fd >= 0 else { throw .system("cannot create \(folder)/\(number): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            Glibc.close(fd)
            throw .system("cannot lock \(folder)/\(number): \(String(cString: strerror(errno)))")
        }
        self.number = number
        descriptor = Atomic(fd)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            if let other = Int64(name), other != number { _ = isAlive(other) }
        }
    }

    /// Whether instance `other` is open, in this process or another: its file is locked. A file
    /// found unlocked (its instance is gone) is removed.
    func isAlive(_ other: Int64) -> Bool {
        if other == number { return descriptor.load(ordering: .relaxed) >= 0 }
        let path = folder + "/\(other)"
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return errno != ENOENT }  // no file: gone (a file we may not open: say alive)
        defer { Glibc.close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return true }
        unlink(path)
        return false
    }

    /// Unlocks and removes this instance's file. Idempotent.
    func close() {
        let fd = descriptor.exchange(-1, ordering: .relaxed)
        guard fd >= 0 else { return }
        unlink(folder + "/\(number)")
        Glibc.close(fd)
    }
}
