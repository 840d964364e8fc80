#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JotterPostgres
import Synchronization

/// Delivers every committed event, in event-id order, to the store's observer — those of
/// every instance on the database, this one's included.
///
/// One thread with one connection of its own (outside the pool) that LISTENs on
/// `jotter_events`: every transaction that appends events ends with a NOTIFY there. When woken,
/// and every second in case a notification was lost with a connection, it reads the events
/// after its position below the horizon (`PostgresNoteRows.feed`) and hands them over. The
/// table is the truth; a notification carries nothing but the wake-up. The same thread trims
/// the backlog, at most once a second.
///
/// The same connection LISTENs on `jotter_uploads`, where a request taking a resumable upload
/// over names it (`BucketPartialUploadStore.announcePartialUploadTakeOver`): the payload goes
/// to the take-over handler as it arrives.
final class PostgresEventFeed: Sendable {
    /// The channel writers notify.
    static let channel = "jotter_events"
    /// The channel of resumable-upload take-overs (payload: the upload's id).
    static let uploadsChannel = "jotter_uploads"

    private struct State {
        var handler: (@Sendable (NoteEvent, Owner) -> Void)?
        /// Boxed: a closure kept in the `Mutex` itself is re-thunked by every `withLock` that
        /// hands it out (see `EventObserver`).
        var takeOvers: TakeOverHandler?
        var stopped = false
    }

    private let state = Mutex(State())
    private let thread: StoreThreads
    private let url: String
    private let backlog: Int
    /// The last event id handed over (or skipped before a handler was set: none are).
    private let position: Atomic<Int64>

    init(url: String, backlog: Int, position: Int64) throws(StoreError) {
        self.url = url
        self.backlog = backlog
        self.position = Atomic(position)
        thread = try StoreThreads(count: 1)
        thread.run { [self] in run() }
    }

    /// Sets the handler; the events after `position` (when given) are delivered to it.
    func observe(_ handler: @escaping @Sendable (NoteEvent, Owner) -> Void, from position: Int64?) {
        state.withLock { state in
            if let position { self.position.store(position, ordering: .relaxed) }
            state.handler = handler
        }
    }

    /// Sets the handler of resumable-upload take-overs (`uploadsChannel`).
    func observeTakeOvers(_ handler: @escaping @Sendable (String) -> Void) {
        let boxed = TakeOverHandler(call: handler)
        state.withLock { $0.takeOvers = boxed }
    }

    /// Ends the thread (within about 0.1 s) and closes its connection. Idempotent.
    func stop() {
        state.withLock { $0.stopped = true }
        thread.stop()
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func run() {
        var listener: PostgresConnection?
        var due = true                 // read (and trim) on the next turn
        var lastRead = monotonicSeconds(), lastTrim = 0.0
        var untrimmed = true           // events may have been added since the last trim
        while !stopped {
            do {
                if listener == nil {
                    let connection = try PostgresConnection(url: url, applicationName: "jotter events")
                    try connection.execute("LISTEN \(Self.channel); LISTEN \(Self.uploadsChannel)")
                    listener = connection
                    due = true
                    untrimmed = true
                }
                guard let db = listener else { continue }
                let now = monotonicSeconds()
                if due || now - lastRead >= 1 {
                    if let handler = state.withLock({ $0.handler }) { try deliver(on: db, to: handler) }
                    if untrimmed && now - lastTrim >= 1 {
                        try PostgresNoteRows.trim(backlog: backlog, on: db)
                        lastTrim = now
                        untrimmed = false
                    }
                    lastRead = now
                    due = false
                }
                for notification in try db.notifications(timeoutMilliseconds: 100) {
                    if notification.channel == Self.uploadsChannel {
                        state.withLock { $0.takeOvers }?.call(notification.payload)
                    } else {
                        due = true
                        untrimmed = true
                    }
                }
            } catch {
                // The server went away (or refused us): try again shortly, from the same position.
                listener = nil
                for _ in 0..<5 where !stopped { usleep(100_000) }
            }
        }
    }

    private func deliver(on db: PostgresConnection, to handler: @Sendable (NoteEvent, Owner) -> Void) throws {
        while !stopped {
            let batch = try PostgresNoteRows.feed(after: position.load(ordering: .relaxed), limit: 500, on: db)
            for (event, owner) in batch {
                handler(event, owner)
                position.store(event.id, ordering: .relaxed)
            }
            if batch.count < 500 { return }
        }
    }
}

/// The handler of resumable-upload take-overs.
final class TakeOverHandler: Sendable {
    let call: @Sendable (String) -> Void
    init(call: @escaping @Sendable (String) -> Void) { self.call = call }
}

/// Seconds on a clock that never jumps.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
