/// Bytes gathering into the parts of a multipart upload, in part-sized buffers that are reused.
///
/// A part of `partSize` bytes fills; what arrives once it is full waits in `overflow` (a writer
/// stops reading while that part cannot go yet, so this is at most a read's worth). `takePart`
/// hands the full part out and goes on filling the buffer of an earlier part given back with
/// `recycle` — so an upload of any size holds at most two part-sized buffers (the one filling
/// and the one on its way), each allocated once and never grown past a part, instead of a new
/// allocation, a copy and a doubled capacity for every part.
///
/// Invariant: `overflow` is empty unless the part filling is full. Hand buffers between
/// threads with `swap` (or by returning them) so that each stays uniquely referenced; one that
/// is shared when it comes back is dropped rather than reused.
public struct S3PartBuffer: Sendable {
    /// The size of every part but the last.
    public let partSize: Int
    /// The part filling: at most `partSize` bytes.
    public private(set) var filling: [UInt8] = []
    /// Bytes past a full part.
    public private(set) var overflow: [UInt8] = []
    /// An emptied buffer of an uploaded part, for the next one.
    private var spare: [UInt8] = []

    /// An empty buffer, or one holding `bytes` already (a resumed upload's tail).
    public init(partSize: Int, holding bytes: [UInt8] = []) {
        self.partSize = partSize
        bytes.withUnsafeBytes { append($0) }
    }

    /// The bytes here, not handed out yet.
    public var count: Int { filling.count + overflow.count }

    public var isEmpty: Bool { filling.isEmpty }

    /// A full part is here and more bytes after it: the part can go, and it is not the last.
    public var hasPartBeforeMore: Bool { filling.count == partSize && !overflow.isEmpty }

    /// Adds bytes at the end.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        var from = 0
        if overflow.isEmpty, filling.count < partSize {
            if filling.capacity < partSize { filling.reserveCapacity(partSize) }
            from = min(partSize - filling.count, bytes.count)
            filling.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[..<from]))
        }
        if from < bytes.count { overflow.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[from...])) }
    }

    /// Hands out the part filling (`partSize` bytes where `hasPartBeforeMore`) and fills the
    /// next from the overflow, in a recycled buffer when there is one.
    public mutating func takePart() -> [UInt8] {
        var part: [UInt8] = []
        swap(&part, &spare)
        swap(&part, &filling)
        if filling.capacity < partSize { filling.reserveCapacity(partSize) }
        let moved = min(partSize, overflow.count)
        filling.append(contentsOf: overflow[..<moved])
        overflow.removeFirst(moved)
        return part
    }

    /// Takes back the buffer of a part that has been uploaded (leaving `buffer` empty): the
    /// next `takePart` fills it instead of allocating.
    public mutating func recycle(_ buffer: inout [UInt8]) {
        var returned: [UInt8] = []
        swap(&returned, &buffer)
        guard returned.capacity >= partSize, spare.capacity < partSize else { return }
        returned.removeAll(keepingCapacity: true)  // in place when unique; a shared one is dropped
        if returned.capacity >= partSize { spare = returned }
    }

    /// Drops every byte and buffer.
    public mutating func removeAll() {
        filling = []
        overflow = []
        spare = []
    }
}
