import Synchronization

/// The body of one `text/event-stream` response: events are queued by any thread and sent
/// by the engine; while the queue is empty the connection is suspended.
///
/// A new subscriber starts *held*: live events are kept aside while the missed ones are
/// replayed, then `release` sends the replay and the held events in id order, without
/// duplicates or gaps.
///
/// Memory: the queue holds the encoded events themselves — arrays shared by every stream (the
/// broadcaster encodes each event once), never copies — and is read from front to back, so a
/// replay of any size is sent in time linear in its size. An event of any size is taken while
/// the stream's backlog (queued bytes after the event being sent) is empty; a stream whose
/// backlog would pass `maxPending` is *cut*: nothing more is queued, what is queued (whole
/// events) is sent and the stream ends, so the client reconnects with `Last-Event-ID` and has what it
/// missed replayed. Every stream's queue is a run of the same recent events, so all streams
/// together hold at most `maxPending` plus two events' bytes.
public final class EventStreamBody: StreamingBody {
    struct State {
        /// Encoded events (and heartbeats) not yet sent completely, oldest first from `first`.
        var queue = ChunkQueue()
        var held: [(id: Int64?, bytes: [UInt8])] = []
        var holding = true
        var lastID: Int64 = 0
        var waker: ConnectionWaker?
        var finished = false
        /// Too far behind: what is queued is sent, then the stream ends.
        var cut = false

        /// Queued bytes after the event being sent.
        var backlog: Int { queue.backlog }

        mutating func append(_ bytes: [UInt8]) { queue.append(bytes) }

    }

    private let state = Mutex(State())
    /// Called once when the connection is done with the stream (to unsubscribe).
    private let onFinish: @Sendable (EventStreamBody) -> Void
    /// The largest backlog, in bytes, of a stream that is not reading: past it the stream is cut.
    let maxPending: Int

    public init(maxPending: Int = 1 << 20, onFinish: @escaping @Sendable (EventStreamBody) -> Void = { _ in }) {
        self.maxPending = maxPending
        self.onFinish = onFinish
    }

    /// Queues a heartbeat comment, unless something is queued (bytes are flowing anyway) or the
    /// stream is still held.
    func heartbeat() {
        let waker: ConnectionWaker? = state.withLock { state in
            guard !state.finished, !state.cut, !state.holding, state.queue.count == 0 else { return nil }
            state.append(ServerSentEvent.heartbeat)
            return state.waker
        }
        waker?.wake()
    }

    /// Queues a live event (or other bytes, such as a `retry:` line, when `id` is nil).
    public func send(id: Int64?, _ bytes: [UInt8]) {
        let waker: ConnectionWaker? = state.withLock { state in
            guard !state.finished, !state.cut else { return nil }
            if state.holding {
                state.held.append((id, bytes))
                return nil
            }
            if let id {
                guard id > state.lastID else { return nil }
                state.lastID = id
            }
            if state.backlog > 0, state.backlog + bytes.count > maxPending {
                state.cut = true
                return state.waker
            }
            state.append(bytes)
            return state.waker
        }
        waker?.wake()
    }

    /// Sends `preface` (a first message: `retry:`, the cursor), `replay` (events the client
    /// missed, oldest first), then everything held since the subscription began, skipping ids
    /// already sent; from now on events go out as they come.
    public func release(preface: [UInt8] = [], replay: [(id: Int64, bytes: [UInt8])], after lastID: Int64) {
        let waker: ConnectionWaker? = state.withLock { state in
            if !preface.isEmpty { state.append(preface) }
            state.lastID = max(state.lastID, lastID)
            for event in replay where event.id > state.lastID {
                state.append(event.bytes)
                state.lastID = event.id
            }
            for event in state.held {
                if let id = event.id {
                    guard id > state.lastID else { continue }
                    state.lastID = id
                }
                state.append(event.bytes)
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
            let written = state.queue.drain(into: buffer)
            if written > 0 { return .bytes(written) }
            if state.cut { return .end }
            return .wait
        }
    }

    public func finish() {
        state.withLock {
            $0.finished = true; $0.waker = nil; $0.queue.removeAll(); $0.held = []
        }
        onFinish(self)
    }

    /// Ends the stream (the server stopping).
    public func end() {
        let waker = state.withLock { state -> ConnectionWaker? in
            state.finished = true
            return state.waker
        }
        waker?.wake()
    }
}
