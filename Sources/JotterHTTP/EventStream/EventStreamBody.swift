import Synchronization

/// The body of one `text/event-stream` response: events are queued by any thread and sent
/// by the engine; while the queue is empty the connection is suspended.
///
/// A new subscriber starts *held*: live events are kept aside while the missed ones are
/// replayed, then `release` sends the replay and the held events in id order, without
/// duplicates or gaps.
public final class EventStreamBody: StreamingBody {
    struct State {
        var pending: [UInt8] = []
        var held: [(id: Int64?, bytes: [UInt8])] = []
        var holding = true
        var lastID: Int64 = 0
        var waker: ConnectionWaker?
        var finished = false
    }

    private let state = Mutex(State())
    /// Called once when the connection is done with the stream (to unsubscribe).
    private let onFinish: @Sendable (EventStreamBody) -> Void
    /// Bytes queued beyond this mean the client is not reading: the stream is ended (it can
    /// reconnect with `Last-Event-ID` and have what it missed replayed).
    let maxPending: Int

    public init(maxPending: Int = 64 << 10, onFinish: @escaping @Sendable (EventStreamBody) -> Void = { _ in }) {
        self.maxPending = maxPending
        self.onFinish = onFinish
    }

    /// Queues a live event (or a heartbeat comment when `id` is nil).
    public func send(id: Int64?, _ bytes: [UInt8]) {
        let waker: ConnectionWaker? = state.withLock { state in
            guard !state.finished else { return nil }
            if state.holding {
                state.held.append((id, bytes))
                return nil
            }
            if let id {
                guard id > state.lastID else { return nil }
                state.lastID = id
            }
            state.pending += bytes
            if state.pending.count > maxPending { state.finished = true }
            return state.waker
        }
        waker?.wake()
    }

    /// Sends `replay` (events the client missed, oldest first), then everything held since the
    /// subscription began, skipping ids already sent; from now on events go out as they come.
    public func release(replay: [(id: Int64, bytes: [UInt8])], after lastID: Int64) {
        let waker: ConnectionWaker? = state.withLock { state in
            state.lastID = max(state.lastID, lastID)
            for event in replay where event.id > state.lastID {
                state.pending += event.bytes
                state.lastID = event.id
            }
            for event in state.held {
                if let id = event.id {
                    guard id > state.lastID else { continue }
                    state.lastID = id
                }
                state.pending += event.bytes
            }
            state.held = []
            state.holding = false
            return state.waker
        }
        waker?.wake()
    }

    public func start(waker: ConnectionWaker) {
        state.withLock { $0.waker = waker }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> StreamRead {
        state.withLock { state in
            if state.finished { return .end }
            guard !state.pending.isEmpty else { return .wait }
            let count = min(buffer.count, state.pending.count)
            state.pending.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            state.pending.removeFirst(count)
            return .bytes(count)
        }
    }

    public func finish() {
        state.withLock { $0.finished = true; $0.waker = nil }
        onFinish(self)
    }

    /// Ends the stream (the server stopping, a client too slow to keep up).
    public func end() {
        let waker = state.withLock { state -> ConnectionWaker? in
            state.finished = true
            return state.waker
        }
        waker?.wake()
    }
}
