import Testing
import JotterBlobs

/// The part buffer behind every multipart upload: parts of exactly `partSize` but the last,
/// every byte once and in order, and the buffers reused rather than allocated per part.
@Suite("S3PartBuffer")
struct S3PartBufferTests {
    /// Feeds `total` bytes in reads of `read` bytes and uploads a part whenever one can go,
    /// recycling its buffer: the parts' sizes, their bytes joined, and how many distinct buffers
    /// the parts were handed out in.
    func run(total: Int, read: Int, partSize: Int) -> (sizes: [Int], bytes: [UInt8], buffers: Int) {
        let source = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        var parts = S3PartBuffer(partSize: partSize)
        var sizes: [Int] = [], joined: [UInt8] = [], addresses = Set<UInt>()
        func upload(_ part: inout [UInt8]) {
            sizes.append(part.count)
            joined += part
            _ = part.withUnsafeBufferPointer { addresses.insert(UInt(bitPattern: $0.baseAddress)) }
            parts.recycle(&part)
        }
        var from = 0
        while from < total {
            let end = min(total, from + read)
            source[from..<end].withUnsafeBytes { parts.append($0) }
            from = end
            #expect(parts.filling.count <= partSize)
            #expect(parts.overflow.isEmpty || parts.filling.count == partSize)
            while parts.hasPartBeforeMore {
                var part = parts.takePart()
                upload(&part)
            }
        }
        if !parts.isEmpty {
            var last = parts.takePart()
            upload(&last)
        }
        #expect(parts.count == 0)
        #expect(joined == source)
        return (sizes, joined, addresses.count)
    }

    @Test(
        "parts are a part long but the last, each byte once in order, in two buffers reused",
        arguments: [(100, 7, 10), (100, 10, 10), (101, 10, 10), (1000, 33, 64), (64, 64, 64), (65, 64, 64), (5, 100, 10)])
    func parts(total: Int, read: Int, partSize: Int) {
        let (sizes, _, buffers) = run(total: total, read: read, partSize: partSize)
        #expect(sizes.dropLast().allSatisfy { $0 == partSize })
        #expect((1...partSize).contains(sizes.last ?? 0))
        #expect(sizes.reduce(0, +) == total)
        #expect(sizes.count == (total + partSize - 1) / partSize)
        #expect(buffers <= 2, "\(buffers) buffers for \(sizes.count) parts")
    }

    @Test("a resumed upload's tail is where the parts start from")
    func holding() {
        var parts = S3PartBuffer(partSize: 4, holding: [1, 2, 3])
        ([4, 5, 6] as [UInt8]).withUnsafeBytes { parts.append($0) }
        #expect(parts.hasPartBeforeMore)
        #expect(parts.takePart() == [1, 2, 3, 4])
        #expect(parts.filling == [5, 6])
        #expect(!parts.hasPartBeforeMore)
    }
}
