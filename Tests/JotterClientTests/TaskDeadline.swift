import Foundation

extension Task where Success: Sendable {
    /// Cancels the task from another thread (a cancellation that deadlocks leaves the caller
    /// free), then whether it ends within `seconds`: false, not a hung test, when it does not.
    func cancelAndEnds(within seconds: Double) async -> Bool {
        DispatchQueue.global().async { self.cancel() }
        let (ended, continuation) = AsyncStream.makeStream(of: Bool.self)
        Task<Void, Never> {
            _ = await self.result; continuation.yield(true)
        }
        Task<Void, Never> {
            try? await Task<Never, Never>.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            continuation.yield(false)
        }
        var iterator = ended.makeAsyncIterator()
        return await iterator.next() == true
    }
}
