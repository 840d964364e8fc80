import JotterBlobs

/// Deletes upload bytes that no row names: what a crash left between storing an upload's bytes
/// and committing its row (or between deleting a row and its bytes).
///
/// Bytes younger than `minimumAge` are spared — their row may be committing right now, on this
/// instance or another — so any number of instances may sweep the same bucket at once.
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

    public init(blobs: any BlobStore, minimumAge: Int64 = 3600, known: @escaping @Sendable ([String]) throws -> Set<String>) {
        self.blobs = blobs
        self.minimumAge = minimumAge
        self.known = known
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
                try blobs.delete(info.key)
                removed.append(info.key)
            }
        }
        return removed
    }
}
