import Foundation
import JotterBlobs
import Testing

/// The multipart primitives of `S3BlobStore`, against the SeaweedFS scripts/test-services starts.
@Suite(.enabled(if: Backend.s3Available, Backend.s3SkipMessage))
struct S3MultipartTests {
    static let fiveMiB = 5 << 20

    /// A store and a key prefix; whatever uploads a test leaves open are aborted afterwards.
    final class Fixture {
        let store = S3BlobStore(Backend.s3Configuration())
        let prefix = "t-multipart-\(UInt64.random(in: 0...UInt64.max))/"

        deinit {
            for upload in (try? store.listMultipartUploads(prefix: prefix)) ?? [] {
                try? store.abortMultipartUpload(upload.key, uploadID: upload.uploadID)
            }
            for blob in (try? store.list(prefix: prefix)) ?? [] { try? store.delete(blob.key) }
        }
    }

    @Test func partsOutOfOrderCompleteToTheWholeObject() throws {
        let fixture = Fixture()
        let store = fixture.store, key = fixture.prefix + "whole"
        let first = patternChunk(1, size: Self.fiveMiB), second = patternChunk(2, size: 1234)
        let uploadID = try store.createMultipartUpload(key)
        #expect(try store.listMultipartUploads(prefix: fixture.prefix).map(\.key) == [key])
        #expect(try store.listMultipartUploads(prefix: fixture.prefix).first?.uploadID == uploadID)
        // Nothing is visible before completion.
        #expect(try store.head(key) == nil)
        let two = try store.uploadPart(key, uploadID: uploadID, number: 2, bytes: second)
        let one = try store.uploadPart(key, uploadID: uploadID, number: 1, bytes: first)
        #expect(one.size == Int64(first.count) && two.size == Int64(second.count))
        #expect(one.etag.hasPrefix("\"") && one.etag != two.etag)
        let listed = try store.listParts(key, uploadID: uploadID)
        #expect(listed.map(\.number) == [1, 2])
        #expect(listed.map(\.size) == [one.size, two.size])
        let info = try store.completeMultipartUpload(key, uploadID: uploadID, parts: [two, one])
        #expect(info.size == Int64(first.count + second.count))
        #expect(try store.bytes(key) == first + second)
        #expect(try store.head(key)?.size == info.size)
        #expect(try store.listMultipartUploads(prefix: fixture.prefix).isEmpty)
    }

    @Test func anotherStoreResumesFromTheListedParts() throws {
        let fixture = Fixture()
        let key = fixture.prefix + "resumed"
        let first = patternChunk(3, size: Self.fiveMiB), second = patternChunk(4, size: 10)
        let uploadID = try fixture.store.createMultipartUpload(key)
        try fixture.store.uploadPart(key, uploadID: uploadID, number: 1, bytes: first)
        // A second instance (its own handles and connections) knows only the key and upload id.
        let other = S3BlobStore(Backend.s3Configuration())
        var parts = try other.listParts(key, uploadID: uploadID)
        #expect(parts.map(\.number) == [1])
        parts.append(try other.uploadPart(key, uploadID: uploadID, number: parts.count + 1, bytes: second))
        try other.completeMultipartUpload(key, uploadID: uploadID, parts: parts)
        #expect(try fixture.store.bytes(key) == first + second)
    }

    @Test func abortLeavesNoUploadNoPartsNoObject() throws {
        let fixture = Fixture()
        let store = fixture.store, key = fixture.prefix + "aborted"
        let uploadID = try store.createMultipartUpload(key)
        try store.uploadPart(key, uploadID: uploadID, number: 1, bytes: patternChunk(5, size: 1000))
        try store.abortMultipartUpload(key, uploadID: uploadID)
        #expect(try store.listMultipartUploads(prefix: fixture.prefix).isEmpty)
        #expect(try store.head(key) == nil)
        try store.abortMultipartUpload(key, uploadID: uploadID)  // aborting again succeeds
        #expect(throws: BlobError.notFound(key)) { try store.listParts(key, uploadID: uploadID) }
        #expect(throws: BlobError.notFound(key)) {
            try store.completeMultipartUpload(key, uploadID: uploadID, parts: [.init(number: 1, etag: "\"x\"", size: 1000)])
        }
        #expect(try store.head(key) == nil)
    }

    @Test func uploadsAreListedByPrefixAndPartNumbersChecked() throws {
        let fixture = Fixture()
        let store = fixture.store
        let ids = try ["b", "a/2", "a/1"].map { ($0, try store.createMultipartUpload(fixture.prefix + $0)) }
        #expect(try store.listMultipartUploads(prefix: fixture.prefix).map(\.key) == ["a/1", "a/2", "b"].map { fixture.prefix + $0 })
        #expect(try store.listMultipartUploads(prefix: fixture.prefix + "a/").count == 2)
        let now = Int64(Date().timeIntervalSince1970)
        for upload in try store.listMultipartUploads(prefix: fixture.prefix) {
            #expect(upload.initiated.map { abs(now - $0) <= 120 } == true, "\(upload)")
        }
        for bad in [0, S3BlobStore.maximumPartNumber + 1] {
            #expect(throws: BlobError.self) { try store.uploadPart(fixture.prefix + "b", uploadID: ids[0].1, number: bad, bytes: [1]) }
        }
        #expect(throws: BlobError.invalidKey("/abs")) { try store.createMultipartUpload("/abs") }
    }
}
