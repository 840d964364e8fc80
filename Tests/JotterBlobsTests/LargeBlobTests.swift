import Foundation
import JotterBlobs
import JotterTestSupport
import Testing

/// A 64 MiB object streamed up and down while this process's peak RSS is watched. Runs in the
/// TIMING_TESTS pass, alone, so no other test moves the peak.
@Suite(.tags(.timing), .serialized)
struct LargeBlobTests {
    static let chunk = 1 << 20
    static let chunks = 64

    @Test(arguments: Backend.available) func sixtyFourMiBInBoundedMemory(_ backend: Backend) throws {
        let fixture = try BlobFixture(backend)
        let key = fixture.key("large")
        ResidentMemory.resetPeak()
        let before = ResidentMemory.current
        var index = 0
        var sentSum: UInt64 = 0
        let stored = try fixture.store.put(key) {
            guard index < Self.chunks else { return nil }
            defer { index += 1 }
            let bytes = patternChunk(index, size: Self.chunk)
            sentSum = bytes.reduce(sentSum) { $0 &* 31 &+ UInt64($1) }
            return bytes
        }
        #expect(stored.size == Int64(Self.chunk * Self.chunks))
        var receivedSum: UInt64 = 0
        var received = 0
        let info = try fixture.store.get(key, range: nil) { buffer in
            receivedSum = buffer.reduce(receivedSum) { $0 &* 31 &+ UInt64($1) }
            received += buffer.count
        }
        let growth = ResidentMemory.peak - before
        print("LargeBlobTests[\(backend)]: 64 MiB up and down, peak RSS grew \(growth >> 10) KiB")
        #expect(received == Self.chunk * Self.chunks)
        #expect(receivedSum == sentSum)
        #expect(info.size == stored.size)
        #expect(try fixture.store.head(key)?.size == stored.size)
        // One 5 MiB part (plus its copy into libcurl's buffers and the test's 1 MiB chunks), not 64 MiB.
        #expect(growth < 24 << 20)
    }
}
