import JotterBlobs
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Deletes upload bytes that no row names: what a crash left between storing an upload's bytes
/// and committing its row (or between deleting a row and its bytes).
///
/// Bytes younger than `minimumAge` are spared — their row may be committing right now, on this
/// instance or another — so any number of instances may sweep the same bucket at once. This is
/// the only way upload bytes without a row go: never by what one view of the rows, taken at one
/// moment (a start-up's), lacks — a commit that view did not include would then be left without
/// its bytes (issue 31). Every store runs it hourly (`PeriodicTask`): PostgreSQL's on every
/// instance, SQLite's on its folder, asking its writer (so the rows it sees are all committed ones).
///
/// ```swift
/// let sweep = UploadSweep(blobs: store.blobs) { ids in try store.knownUploadIDs(ids) }
/// let removed = try sweep.run(now: Int64(time(nil)))
/// ```
public struct UploadSweep: Sendable {
    public let blobs: any BlobStore
    /// Seconds an object must have existed before it may be swept.
    public var minimumAge: Int64 = 3600
    /// Which of the given upload ids have a row (asked in batches of at most 500).
    public let known: @Sendable ([String]) throws -> Set<String>
    /// Deletes one swept key; `blobs.delete` unless the store has its own way (SQLite's goes
    /// through its removal gate, which a backup in progress holds).
    public let delete: @Sendable (String) throws -> Void

    /// - Parameters:
    ///   - delete: how a swept key goes; nil: `blobs.delete`.
    public init(
        blobs: any BlobStore, minimumAge: Int64 = 3600, known: @escaping @Sendable ([String]) throws -> Set<String>,
        delete: (@Sendable (String) throws -> Void)? = nil
    ) {
        self.blobs = blobs
        self.minimumAge = minimumAge
        self.known = known
        self.delete = delete ?? { key in try blobs.delete(key) }
    }

    /// Lists `uploads/`, deletes the old objects without a row; returns the keys deleted.
    @discardableResult
    public func run(now: Int64) throws -> [String] {
        let prefix = UploadRecord.blobKey("")
        let candidates = try blobs.list(prefix: prefix).filter { info in
            // An object without a date is treated as new: never swept.
            guard let modified = info.modified else { return false }
            return now - modified >= minimumAge
        }
        var removed: [String] = []
        var start = 0
        while start < candidates.count {
            let batch = candidates[start..<min(start + 500, candidates.count)]
            start += batch.count
            let ids = batch.map { String($0.key.dropFirst(prefix.count)) }
            let rows = try known(ids)
            for (info, id) in zip(batch, ids) where !rows.contains(id) {
                try delete(info.key)
                removed.append(info.key)
            }
        }
        return removed
    }
}
