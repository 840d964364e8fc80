#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The files behind uploads: `<data>/uploads/<id>`, and `<data>/tmp/` for requests in flight.
///
/// A file enters `uploads/` by `rename` from `tmp/` (same file system: atomic) and the folder
/// is synced before the row's transaction commits; a crash in between leaves a file without a
/// row, which `removeOrphans` deletes at the next start. Nothing is ever named by the client.
struct UploadFiles: Sendable {
    let directory: String
    let temporaryDirectory: String
    /// Holds back removals while a backup copies files (`SQLiteNoteStore.backup(to:)`).
    let removals = RemovalGate()

    init(dataDirectory: String) throws(StoreError) {
        directory = dataDirectory + "/uploads"
        temporaryDirectory = dataDirectory + "/tmp"
        for folder in [directory, temporaryDirectory] where mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw .invalidArgument("cannot create \(folder): \(String(cString: strerror(errno)))")
        }
    }

    func path(of id: String) -> String { directory + "/" + id }

    /// A new random upload id.
    static func newID() -> String {
        var random = [UInt8](repeating: 0, count: 12)
        random.withUnsafeMutableBytes { _ = getentropy($0.baseAddress, $0.count) }
        return random.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Makes the temporary file's bytes durable, then moves it to its id's place.
    func adopt(_ temporaryPath: String, as id: String) throws(StoreError) {
        let fd = open(temporaryPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .invalidArgument("the uploaded file is gone: \(String(cString: strerror(errno)))") }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced else { throw .invalidArgument("cannot sync the uploaded file: \(String(cString: strerror(errno)))") }
        guard rename(temporaryPath, path(of: id)) == 0 else {
            throw .invalidArgument("cannot move the uploaded file into place: \(String(cString: strerror(errno)))")
        }
    }

    /// Syncs the uploads folder, so renames into it survive a crash.
    func syncDirectory() {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// Deletes the files of `ids` — later, if a backup is copying files right now.
    func remove(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        let paths = ids.map(path(of:))
        removals.remove(paths)
    }

    /// At start-up: empties `tmp/` and deletes files in `uploads/` that no row names.
    func removeOrphans(known: Set<String>) {
        for name in FileTransfer.entries(of: temporaryDirectory) { unlink(temporaryDirectory + "/" + name) }
        for name in FileTransfer.entries(of: directory) where !known.contains(name) { unlink(path(of: name)) }
    }
}
