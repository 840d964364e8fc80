import Foundation
import JotterBlobs
import JotterPostgres
import Synchronization
import JotterTestSupport
import Testing
@testable import JotterStore

/// The state of resumable uploads kept in a bucket (PostgreSQL only: a bucket is only used with
/// it): who holds an upload, its parts and tail pieces, the seal, and the take-over
/// announcements that reach every instance.
@Suite("Partial uploads in a bucket: their state in PostgreSQL", .enabled(if: PostgresServer.available, PostgresServer.skipMessage))
struct BucketPartialUploadStoreTests {
    let fixture: StoreFixture
    var store: PostgresStore { fixture.store as! PostgresStore }
    let owner = Owner(id: 1)
    static let empty: [UInt8] = [1, 0xAA]

    init() throws {
        fixture = try StoreFixture(.postgres)
    }

    func record(_ id: String = UploadRecord.newID(), length: Int64? = 100) -> PartialUploadRecord {
        PartialUploadRecord(
            id: id, protocolName: "ietf-8", filename: "a.bin", contentType: "application/octet-stream", length: length,
            offset: 0, noteID: nil, expectedSHA256: nil, backendState: "multipart-1", createdAt: 1, expiresAt: 4_000_000_000)
    }

    func held(_ outcome: PartialUploadTakeOver, sourceLocation: SourceLocation = #_sourceLocation) throws -> PartialUploadHold {
        guard case .held(let hold) = outcome else {
            Issue.record("not held: \(outcome)", sourceLocation: sourceLocation)
            throw StoreError.database("not held")
        }
        return hold
    }

    @Test("a take-over bumps the generation: the earlier holder can reserve and record nothing more")
    func takeOverEndsTheEarlierHolder() throws {
        let made = record()
        try store.createPartialUpload(made, owner: owner, leaseSeconds: 0, emptySHA256: Self.empty)
        #expect(try store.reservePartialUploadPart(id: made.id, owner: owner, generation: 1, leaseSeconds: 0) == 1)
        let hold = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: true))
        #expect(hold.generation == 2)
        #expect(hold.partsSHA256 == Self.empty)
        #expect(hold.record.backendState == "multipart-1")
        #expect(try store.reservePartialUploadPart(id: made.id, owner: owner, generation: 1, leaseSeconds: 0) == nil)
        #expect(try store.recordPartialUpload(id: made.id, owner: owner, generation: 1, PartialUploadRecording(offset: 50)) == nil)
        #expect(try store.partialUpload(id: made.id, owner: owner)?.offset == 0)
        // Numbers are never handed out twice, whoever holds the upload.
        #expect(try store.reservePartialUploadPart(id: made.id, owner: owner, generation: 2, leaseSeconds: 0) == 2)
        // Another owner's upload is missing to this one.
        #expect(
            try {
                if case .missing = try store.takeOverPartialUpload(
                    id: made.id, owner: Owner(id: 2), leaseSeconds: 0, force: true, loadingBytes: false)
                {
                    true
                } else {
                    false
                }
            }())
    }

    @Test(
        "an appending holder's lease makes a take-over busy (naming the holder's generation) until it gives the lease up, or the take-over is forced")
    func leases() throws {
        let made = record()
        try store.createPartialUpload(made, owner: owner, leaseSeconds: 30, emptySHA256: Self.empty)
        #expect(
            try {
                if case .busy(holder: 1) = try store.takeOverPartialUpload(
                    id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: false)
                {
                    true
                } else {
                    false
                }
            }())
        #expect(try store.recordPartialUpload(id: made.id, owner: owner, generation: 1, PartialUploadRecording(leaseSeconds: 0)) != nil)
        let second = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 30, force: false, loadingBytes: true))
        #expect(second.generation == 2)
        #expect(
            try {
                if case .busy(holder: 2) = try store.takeOverPartialUpload(
                    id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: false)
                {
                    true
                } else {
                    false
                }
            }())
        let forced = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: true, loadingBytes: false))
        #expect(forced.generation == 3)
        // A lease that ran out holds nobody up.
        let leased = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 1, force: false, loadingBytes: false))
        usleep(2_100_000)
        #expect(
            try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: false)).generation == leased
                .generation + 1)
    }

    @Test("parts and tail pieces come back in order; a part drops the pieces it covers; nothing recorded twice")
    func partsAndTail() throws {
        let made = record(length: nil)
        try store.createPartialUpload(made, owner: owner, leaseSeconds: 0, emptySHA256: Self.empty)
        // Two requests' pieces of tail, then a part that covers them and more, then a new piece.
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(
            try store.recordPartialUpload(
                id: made.id, owner: owner, generation: 1,
                PartialUploadRecording(tailPiece: (0, Array(bytes[0..<40])), offset: 40, expiresAt: 5_000_000_000)) != nil)
        var hold = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: true))
        #expect(hold.tail == Array(bytes[0..<40]))
        #expect(hold.record.expiresAt == 5_000_000_000)
        #expect(
            try store.recordPartialUpload(
                id: made.id, owner: owner, generation: hold.generation,
                PartialUploadRecording(tailPiece: (40, Array(bytes[40..<90])), offset: 90, length: 300)) != nil)
        hold = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: true))
        #expect(hold.tail == Array(bytes[0..<90]))
        #expect(hold.record.length == 300)
        let number = try #require(try store.reservePartialUploadPart(id: made.id, owner: owner, generation: hold.generation, leaseSeconds: 0))
        let part = S3BlobStore.UploadedPart(number: number, etag: "\"e1\"", size: 100)
        // Recording a part hands out the next one's number in the same transaction.
        let recorded = try store.recordPartialUpload(
            id: made.id, owner: owner, generation: hold.generation,
            PartialUploadRecording(
                parts: [part], partsSHA256: [1, 0xBB], partsEnd: 100, offset: 100,
                reservesNextPart: true))
        #expect(recorded == PartialUploadRecorded(reservedPart: number + 1))
        #expect(try store.reservePartialUploadPart(id: made.id, owner: owner, generation: hold.generation, leaseSeconds: 0) == number + 2)
        #expect(
            try store.recordPartialUpload(
                id: made.id, owner: owner, generation: hold.generation,
                PartialUploadRecording(tailPiece: (100, Array(bytes[100..<130])), offset: 130)) != nil)
        hold = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: true))
        #expect(hold.parts == [part])
        #expect(hold.partsEnd == 100)
        #expect(hold.partsSHA256 == [1, 0xBB])
        #expect(hold.tail == Array(bytes[100..<130]))
        #expect(hold.record.offset == 130)
        // The row goes, and its parts and pieces with it.
        #expect(try store.knownPartialUploadIDs([made.id, UploadRecord.newID(), "not-hex"]) == [made.id])
        #expect(try store.deletePartialUpload(id: made.id, owner: owner))
        let db = try fixture.connect()
        #expect(
            try db.query("SELECT (SELECT count(*) FROM partial_upload_parts) + (SELECT count(*) FROM partial_upload_tails)")[0].value(
                0, as: Int64.self) == 0)
        #expect(try store.knownPartialUploadIDs([made.id]).isEmpty)
    }

    @Test("a tail piece of megabytes, every byte value, goes in and comes back whole")
    func largeTail() throws {
        let made = record(length: nil)
        try store.createPartialUpload(made, owner: owner, leaseSeconds: 0, emptySHA256: Self.empty)
        var bytes = [UInt8](repeating: 0, count: 8 << 20)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 7) }
        #expect(
            try store.recordPartialUpload(
                id: made.id, owner: owner, generation: 1,
                PartialUploadRecording(tailPiece: (0, bytes), offset: Int64(bytes.count))) != nil)
        let hold = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: true))
        #expect(hold.tail == bytes)
    }

    @Test("a sealed upload is not taken over while its sealer's lease runs; once it ran out, it is unsealed and taken over")
    func seal() throws {
        let made = record()
        try store.createPartialUpload(made, owner: owner, leaseSeconds: 0, emptySHA256: Self.empty)
        #expect(
            try store.recordPartialUpload(
                id: made.id, owner: owner, generation: 1,
                PartialUploadRecording(offset: 100, leaseSeconds: 1, seal: true)) != nil)
        #expect(
            try {
                if case .sealed = try store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: true, loadingBytes: false) {
                    true
                } else {
                    false
                }
            }())
        usleep(2_100_000)
        let hold = try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: false))
        #expect(hold.record.offset == 100)
        #expect(
            try held(store.takeOverPartialUpload(id: made.id, owner: owner, leaseSeconds: 0, force: false, loadingBytes: false)).generation == hold
                .generation + 1)
    }

    @Test("an announced take-over reaches the observer of every store on the database, another instance's too, with the generation it is for")
    func announcements() throws {
        let other = try StoreFixture.openPostgres(url: fixture.database!.url, directory: fixture.directory)
        defer { other.close() }
        let heard = Mutex<[String]>([])
        other.observePartialUploadTakeOvers { id, holder in heard.withLock { $0.append("\(id) \(holder.map(String.init) ?? "any")") } }
        store.observePartialUploadTakeOvers { id, holder in heard.withLock { $0.append("self \(id) \(holder.map(String.init) ?? "any")") } }
        // A store's feed LISTENs once its connection is up: until then an announcement passes it
        // by (a take-over then waits out the lease instead), so this one is repeated.
        let deadline = Date().addingTimeInterval(10)
        while Set(heard.withLock({ $0 })).count < 4, Date() < deadline {
            store.announcePartialUploadTakeOver(id: "0123456789abcdef01234567", holder: 7)
            store.announcePartialUploadTakeOver(id: "89abcdef0123456789abcdef", holder: nil)
            usleep(200_000)
        }
        #expect(
            Set(heard.withLock { $0 }) == [
                "0123456789abcdef01234567 7", "self 0123456789abcdef01234567 7",
                "89abcdef0123456789abcdef any", "self 89abcdef0123456789abcdef any",
            ])
    }
}
