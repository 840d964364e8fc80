#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The files behind uploads: `<data>/uploads/<id>`, and `<data>/tmp/` for requests in flight.
///
/// A file enters `uploads/` through `LocalBlobStore.put(_:movingFile:)` — `rename` from `tmp/`
/// (same file system: atomic), the folder synced — before its row's transaction commits; a
/// crash in between leaves a file without a row, which the store's `UploadSweep` deletes once
/// it is an hour old (never at start-up: a row may be committing). Nothing is ever named by
/// the client.
struct UploadFiles: Sendable {
    let directory: String
    let temporaryDirectory: String
    /// Holds back removals while a backup copies files (`SQLiteStore.backup(to:)`).
    let removals = RemovalGate()

    init(dataDirectory: String) throws(StoreError) {
        directory = dataDirectory + "/uploads"
        temporaryDirectory = dataDirectory + "/tmp"
        for folder in [directory, temporaryDirectory] where mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw .invalidArgument("cannot create \(folder): \(String(cString: strerror(errno)))")
        }
    }

    func path(of id: String) -> String { directory + "/" + id }

    /// Deletes the files of `ids` — later, if a backup is copying files right now.
    func remove(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        let paths = ids.map(path(of:))
        removals.remove(paths)
    }

    /// At start-up: empties `tmp/` (requests in flight when the last process ended).
    func emptyTemporary() {
        for name in FileTransfer.entries(of: temporaryDirectory) { unlink(temporaryDirectory + "/" + name) }
    }
}
