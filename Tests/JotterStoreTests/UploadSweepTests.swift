import Foundation
import JotterBlobs
import Testing
@testable import JotterStore

/// The orphan sweep: old bytes without a row go; bytes with a row, and young bytes (an upload
/// whose row may be committing on another instance), stay.
@Suite("Upload sweep")
struct UploadSweepTests {
    @Test func oldOrphansGoRowsAndYoungBytesStay() throws {
        let directory = try TemporaryDirectory()
        let blobs = try LocalBlobStore(root: directory.path)
        let ids = (0..<3).map { _ in UploadRecord.newID() }
        for id in ids { try blobs.put(UploadRecord.blobKey(id), bytes: [1]) }
        try blobs.put("other/keep", bytes: [2])  // outside uploads/: never the sweep's
        let now = Int64(Date().timeIntervalSince1970)
        let asked = LockedIDs()
        // ids[0] has a row; ids[1] and ids[2] do not. Swept as if an hour had passed:
        let later = UploadSweep(
            blobs: blobs,
            known: { batch in
                asked.add(batch); return [ids[0]]
            })
        #expect(try later.run(now: now + 3600).sorted() == [ids[1], ids[2]].map(UploadRecord.blobKey).sorted())
        #expect(asked.all.sorted() == ids.sorted())
        #expect(try blobs.head(UploadRecord.blobKey(ids[0])) != nil)
        #expect(try blobs.head("other/keep") != nil)
        // Young bytes are spared, row or not.
        let young = UploadRecord.newID()
        try blobs.put(UploadRecord.blobKey(young), bytes: [3])
        #expect(try UploadSweep(blobs: blobs, known: { _ in [] }).run(now: now).isEmpty)
        #expect(try blobs.head(UploadRecord.blobKey(young)) != nil)
    }
}

private final class LockedIDs: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [String] = []
    func add(_ batch: [String]) { lock.withLock { ids += batch } }
    var all: [String] { lock.withLock { ids } }
}
