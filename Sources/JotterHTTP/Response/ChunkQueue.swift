/// Byte chunks waiting to be sent by a `StreamingBody`, oldest first: appended whole (an array
/// shared with whoever else holds it, never copied), drained into the engine's buffer in any
/// sizes. A sent chunk's reference is dropped at once.
///
/// ```swift
/// var queue = ChunkQueue()
/// queue.append(encodedEvent)
/// let written = queue.drain(into: buffer)   // in a `read(into:at:)`
/// ```
public struct ChunkQueue: Sendable {
    private var chunks: [[UInt8]] = []
    private var first = 0
    /// Bytes of `chunks[first]` already sent.
    private var offset = 0
    /// Bytes queued and not yet sent.
    public private(set) var count = 0

    public init() {}

    /// Bytes queued after the chunk being sent.
    public var backlog: Int { first < chunks.count ? count - (chunks[first].count - offset) : 0 }

    /// Queues `bytes` (nothing for an empty array).
    public mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        count += bytes.count
    }

    /// Copies as many queued bytes as fit into `buffer`, in order; returns how many.
    public mutating func drain(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var written = 0
        while written < buffer.count, first < chunks.count {
            let chunk = chunks[first]
            let n = min(buffer.count - written, chunk.count - offset)
            chunk.withUnsafeBytes { bytes in
                UnsafeMutableRawBufferPointer(rebasing: buffer[written..<(written + n)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]))
            }
            written += n
            offset += n
            count -= n
            if offset == chunk.count {
                chunks[first] = []  // sent: release this queue's reference
                first += 1
                offset = 0
            }
        }
        if first == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            first = 0
        } else if first >= 64, first * 2 >= chunks.count {
            chunks.removeSubrange(..<first)
            first = 0
        }
        return written
    }

    /// Drops everything queued.
    public mutating func removeAll() {
        chunks = []
        first = 0
        offset = 0
        count = 0
    }
}
