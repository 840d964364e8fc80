extension Array where Element == UInt8 {
    /// The bytes `write` puts into room for `capacity` bytes (it returns how many it wrote), as
    /// `[UInt8](unsafeUninitializedCapacity:initializingWith:)` makes them but cheaper for small
    /// arrays: that initializer allocates through the standard library's unspecialized entry,
    /// which looks the storage class's generic metadata up at run time (~400 instructions per
    /// array), where copying from scratch room on the stack allocates through a specialized one.
    /// Above `stackLimit` bytes the initializer is used as it is (one copy fewer).
    static func written(capacity: Int, _ write: (UnsafeMutableBufferPointer<UInt8>) -> Int) -> [UInt8] {
        guard capacity <= stackLimit else {
            return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in count = write(buffer) }
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { scratch in
            let count = write(scratch)
            return [UInt8](UnsafeBufferPointer(rebasing: scratch[..<count]))
        }
    }

    /// What `written(capacity:_:)` writes on the stack (the standard library's own limit for a
    /// temporary allocation that needs no check of the stack's room).
    static let stackLimit = 1024
}
