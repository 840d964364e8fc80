#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JotterPostgres
import Synchronization
import JotterSystem

/// Delivers every committed event, in event-id order, to the store's observer — those of
/// every instance on the database, this one's included.
///
/// One thread with one connection of its own (outside the pool) that LISTENs on
/// `jotter_events`: every transaction that appends events ends with a NOTIFY there. When woken,
/// and every second in case a notification was lost with a connection, it reads the events
/// after its position below the horizon (`PostgresNoteRows.feed`) and hands them over. The
/// table is the truth; a notification carries nothing but the wake-up. The same thread trims
/// the backlog, at most once a second — less often while a trim has to leave events beyond it
/// (`TrimBackoff`): each try rescans up to `backlog` index entries.
///
/// The connection is also the instance's presence: it holds the session advisory lock of the
/// instance's number (`PostgresStore.instance`) from when it connects until the instance stops
/// or dies, and takes it again on every new connection. Other instances read it in `pg_locks`
/// to tell a claim whose instance died (`PostgresIdempotencyRows`).
///
/// The same connection LISTENs on `jotter_uploads`, where a request taking a resumable upload
/// over names it and the generation it displaces (`BucketPartialUploadStore.announcePartialUploadTakeOver`):
/// they go to the take-over handler as they arrive — which may be late (this thread reads the
/// events too): the generation says which request the announcement was for.
final class PostgresEventFeed: Sendable {
    /// The `application_name` of its session (`PostgresHistory.runningInstances` counts them).
    static let applicationName = "jotter events"
    /// The channel writers notify.
    static let channel = "jotter_events"
    /// The channel of resumable-upload take-overs (payload: `takeOverPayload`).
    static let uploadsChannel = "jotter_uploads"

    /// The upload's id, then a space and the displaced holder's generation when there is one.
    static func takeOverPayload(id: String, holder: Int64?) -> String {
        holder.map { id + " " + String($0) } ?? id
    }

    /// `takeOverPayload`'s parts.
    static func takeOver(_ payload: String) -> (id: String, holder: Int64?) {
        let fields = payload.split(separator: " ", maxSplits: 1)
        return (fields.first.map(String.init) ?? "", fields.count > 1 ? Int64(fields[1]) : nil)
    }

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
    /// The advisory lock the connection holds for the instance.
    private let presence: Int64
    /// The seconds from one trim to the next, as `TrimBackoff` says (read by tests).
    let trimInterval = Atomic<Double>(TrimBackoff.shortest)

    init(url: String, backlog: Int, position: Int64, presence: Int64) throws(StoreError) {
        self.url = url
        self.presence = presence
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
    func observeTakeOvers(_ handler: @escaping @Sendable (_ id: String, _ holder: Int64?) -> Void) {
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
        var due = true  // read (and trim) on the next turn
        var lastRead = MonotonicClock.seconds()
        var trims = TrimBackoff()
        var untrimmed = true  // events may have been added since the last trim
        while !stopped {
            do {
                if listener == nil {
                    let connection = try PostgresConnection(url: url, applicationName: Self.applicationName)
                    try connection.execute("LISTEN \(Self.channel); LISTEN \(Self.uploadsChannel)")
                    try connection.query("SELECT pg_advisory_lock($1)", [presence])
                    listener = connection
                    due = true
                    untrimmed = true
                }
                guard let db = listener else { continue }
                let now = MonotonicClock.seconds()
                if due || now - lastRead >= 1 {
                    if let handler = state.withLock({ $0.handler }) { try deliver(on: db, to: handler) }
                    if untrimmed && trims.isDue(at: now) {
                        // Events the horizon kept (or another instance's trim) are tried again
                        // later, not only after the next write.
                        let trim = try PostgresNoteRows.trim(backlog: backlog, on: db)
                        untrimmed = trim.left
                        trims.tried(at: now, progressed: trim.cut || !trim.left)
                        trimInterval.store(trims.interval, ordering: .relaxed)
                    }
                    lastRead = now
                    due = false
                }
                for notification in try db.notifications(timeoutMilliseconds: 100) {
                    if notification.channel == Self.uploadsChannel {
                        let (id, holder) = Self.takeOver(notification.payload)
                        state.withLock { $0.takeOvers }?.call(id, holder)
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

/// When the event feed trims the backlog next. At most once a second; while trims delete
/// nothing yet leave events beyond the backlog (a long transaction holds the horizon back, or
/// another instance is trimming), each try waits twice as long as the one before — 1 s, 2 s,
/// 4 s … up to a minute —, since each rescans up to `backlog` index entries to find nothing it
/// may delete. A trim that deletes events (on a busy server events arrive after every cut) or
/// leaves none beyond the backlog sets it back to a second.
struct TrimBackoff: Sendable, Equatable {
    static let shortest: Double = 1
    static let longest: Double = 60

    /// Seconds from the last try to the next.
    private(set) var interval = Self.shortest
    /// When the last try was (`MonotonicClock` seconds).
    private(set) var last = -Double.infinity
    /// Whether the last try made no progress.
    private var stuck = false

    func isDue(at now: Double) -> Bool { now - last >= interval }

    /// A try at `now`; `progressed`: it deleted events, or left none beyond the backlog.
    mutating func tried(at now: Double, progressed: Bool) {
        last = now
        interval = progressed || !stuck ? Self.shortest : min(interval * 2, Self.longest)
        stuck = !progressed
    }
}

/// The handler of resumable-upload take-overs.
final class TakeOverHandler: Sendable {
    let call: @Sendable (_ id: String, _ holder: Int64?) -> Void
    init(call: @escaping @Sendable (_ id: String, _ holder: Int64?) -> Void) { self.call = call }
}
