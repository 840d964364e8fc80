import Foundation
import JotterBlobs
import Testing
@testable import JotterStore

/// The PostgreSQL store's orphan sweep asks its uploads table which listed ids have a row.
@Suite("PostgreSQL: upload sweep", .enabled(if: PostgresServer.available, PostgresServer.skipMessage))
struct PostgresSweepTests {
    @Test func rowsKeepTheirBytesOrphansGo() throws {
        let fixture = try StoreFixture(.postgres)
        let store = fixture.postgres
        let path = fixture.directory.path + "/tmp/kept"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        let kept = try store.stage(path, size: 3)
        _ = try store.perform(.addUploads([kept], noteID: nil), owner: .unclaimed)
        let orphan = UploadRecord.newID()
        try store.blobs.put(UploadRecord.blobKey(orphan), bytes: [9])

        #expect(try PostgresStore.knownUploadIDs([kept.id, orphan], pool: store.pool) == [kept.id])
        let removed = try PostgresStore.uploadSweep(blobs: store.blobs, pool: store.pool).run(now: Int64(Date().timeIntervalSince1970) + 3600)
        #expect(removed == [UploadRecord.blobKey(orphan)])
        #expect(try store.hasContent(kept.id))
        #expect(try !store.hasContent(orphan))
    }
}
