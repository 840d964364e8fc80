import Foundation
import Testing
import JotterSystem

/// A running SHA-256's state saved and restored (what lets another request, on another
/// instance, go on hashing a resumable upload): the digest is the one of all the bytes at once,
/// wherever the saves fall — inside a block, on a block's edge, at zero bytes.
@Suite("SHA-256 state")
struct SHA256StateTests {
    static func bytes(_ count: Int, seed: UInt32) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: state >> 16)
        }
    }

    @Test("saved and restored at any points, the digest is the whole input's", arguments: [0, 1, 63, 64, 65, 1000, 200_003])
    func restoredAnywhere(_ count: Int) throws {
        let input = Self.bytes(count, seed: UInt32(count) &+ 1)
        let whole = SHA256.hex(input)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var cuts = (0..<3).map { _ in Int.random(in: 0...count, using: &generator) }.sorted()
            cuts.append(count)
            var hash = SHA256()
            var start = 0
            for cut in cuts {
                input[start..<cut].withUnsafeBytes { hash.update($0) }
                start = cut
                #expect(hash.count == Int64(cut))
                let saved = hash.state
                #expect(saved.count == 42 + cut % 64)
                guard let restored = SHA256(state: saved) else {
                    Issue.record("state of \(cut) bytes refused")
                    return
                }
                hash = restored
            }
            #expect(hash.finish() == whole, "cuts \(cuts)")
        }
        let empty = SHA256(state: SHA256().state)?.finish()
        #expect(empty == SHA256.hex([UInt8]()))
    }

    @Test("what is not a saved state is refused")
    func refused() {
        var hash = SHA256()
        Self.bytes(100, seed: 3).withUnsafeBytes { hash.update($0) }
        let saved = hash.state
        func refuses(_ state: [UInt8]) -> Bool {
            guard SHA256(state: state) != nil else { return true }
            return false
        }
        #expect(refuses([]))
        #expect(refuses([2] + saved.dropFirst()), "another format")
        #expect(refuses(Array(saved.dropLast())), "a waiting byte missing")
        var count = saved
        count[36] ^= 8  // one byte more in the count than is waiting
        #expect(refuses(count))
        #expect(!refuses(saved))
    }
}
