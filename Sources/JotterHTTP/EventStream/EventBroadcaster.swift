import Dispatch
import Glibc
import JotterSystem
import Synchronization

/// Sends events to every open event stream, and a heartbeat comment to each at a fixed
/// interval so that idle streams survive proxies (and dead clients are noticed).
///
/// ```swift
/// let hub = EventBroadcaster(heartbeat: 15)
/// let body = hub.subscribe()
/// hub.publish(ServerSentEvent(id: 7, event: "note.created", data: json))
/// ```
public final class EventBroadcaster: Sendable {
    /// Each open stream with whose events it gets and the credential it was opened with.
    private let subscribers = Mutex<Subscribers>(Subscribers())
    private struct Subscriber {
        let body: EventStreamBody
        let audience: Int64
        let credential: Int64?
    }
    private struct Subscribers {
        var all: [ObjectIdentifier: Subscriber] = [:]
        /// Open streams by audience and by credential, for the caps of `subscribe`.
        var byAudience: [Int64: Int] = [:]
        var byCredential: [Int64: Int] = [:]

        mutating func add(_ subscriber: Subscriber) {
            all[ObjectIdentifier(subscriber.body)] = subscriber
            byAudience[subscriber.audience, default: 0] += 1
            if let credential = subscriber.credential { byCredential[credential, default: 0] += 1 }
        }

        mutating func remove(_ id: ObjectIdentifier) {
            guard let gone = all.removeValue(forKey: id) else { return }
            Self.decrement(&byAudience, gone.audience)
            if let credential = gone.credential { Self.decrement(&byCredential, credential) }
        }

        private static func decrement(_ counts: inout [Int64: Int], _ key: Int64) {
            if let count = counts[key], count > 1 { counts[key] = count - 1 } else { counts.removeValue(forKey: key) }
        }
    }

    /// Why `subscribe` refused a stream: its audience or its credential has as many open as allowed.
    public struct TooManyStreams: Error, Sendable {
        /// The streams open already, and the cap they reached.
        public let open: Int
        public let limit: Int
        /// True when the credential's cap was reached, false the audience's.
        public let perCredential: Bool
    }
    /// Events are made and fanned out here, in order, so that whoever publishes — the database
    /// writer, say — never waits for thousands of streams.
    private let queue = DispatchQueue(label: "jotter.events")
    private let stopped = Atomic<Bool>(false)
    public let heartbeatInterval: Double
    /// Sends the heartbeat; it holds the broadcaster weakly and ends with it.
    private let heartbeat: PeriodicTask

    public init(heartbeat seconds: Double = 15) {
        heartbeatInterval = seconds
        let box = WeakBox()
        heartbeat = PeriodicTask.repeating(every: max(0.05, seconds), firstAfter: max(0.05, seconds)) { box.value?.beat() ?? false }
        box.value = self
        heartbeat.start()
    }

    deinit { heartbeat.stop() }

    /// A new stream body, held until `release` is called on it. It gets the events published to
    /// its `audience` (or to everyone); `credential` names what it was opened with, for `end(credential:)`.
    public func subscribe(audience: Int64 = 0, credential: Int64? = nil) -> EventStreamBody {
        let body = EventStreamBody { [weak self] body in self?.unsubscribe(body) }
        subscribers.withLock { $0.add(Subscriber(body: body, audience: audience, credential: credential)) }
        return body
    }

    /// As `subscribe(audience:credential:)`, but refused (`TooManyStreams`) when `audience`
    /// has `perAudience` streams open already, or `credential` has `perCredential` (nil: no cap).
    public func subscribe(audience: Int64, credential: Int64?, perAudience: Int?, perCredential: Int?) throws(TooManyStreams) -> EventStreamBody {
        let body = EventStreamBody { [weak self] body in self?.unsubscribe(body) }
        let refusal = subscribers.withLock { subscribers -> TooManyStreams? in
            if let credential, let perCredential, let open = subscribers.byCredential[credential], open >= perCredential {
                return TooManyStreams(open: open, limit: perCredential, perCredential: true)
            }
            if let perAudience, let open = subscribers.byAudience[audience], open >= perAudience {
                return TooManyStreams(open: open, limit: perAudience, perCredential: false)
            }
            subscribers.add(Subscriber(body: body, audience: audience, credential: credential))
            return nil
        }
        if let refusal { throw refusal }
        return body
    }

    /// The credentials that open streams were opened with (to check they are still valid).
    public var openCredentials: Set<Int64> {
        subscribers.withLock { Set($0.byCredential.keys) }
    }

    /// Ends every stream opened with `credential` (it was revoked).
    public func end(credential: Int64) {
        let ended = subscribers.withLock { $0.all.values.filter { $0.credential == credential }.map(\.body) }
        for body in ended { body.end() }
    }

    func unsubscribe(_ body: EventStreamBody) {
        subscribers.withLock { $0.remove(ObjectIdentifier(body)) }
    }

    /// Queues `event` on every stream, on the broadcaster's own thread; returns at once.
    public func publish(_ event: ServerSentEvent) {
        publish(audience: nil) { event }
    }

    /// Makes the event on the broadcaster's thread (it may read or encode), then queues it on
    /// every stream of `audience` (nil: every stream). Events are made and sent in the order
    /// they were published; one that fails to be made is skipped, and one that no stream of
    /// `audience` is open for is not made at all. (A stream that opens meanwhile starts after
    /// the last event already issued, this one included: it would not send it anyway.)
    public func publish(audience: Int64? = nil, _ make: @escaping @Sendable () throws -> ServerSentEvent) {
        queue.async { [self] in
            let bodies = current(audience: audience)
            guard !bodies.isEmpty, let event = try? make() else { return }
            let bytes = event.encoded
            for body in bodies { body.send(id: event.id, bytes) }
        }
    }

    /// Waits until everything published so far has been queued on the streams.
    public func flush() {
        queue.sync {}
    }

    /// The number of open streams.
    public var count: Int { subscribers.withLock { $0.all.count } }

    /// Ends every stream and the heartbeat.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        heartbeat.stop()
        for body in current() { body.end() }
    }

    private func current(audience: Int64? = nil) -> [EventStreamBody] {
        subscribers.withLock { subscribers in
            guard let audience else { return subscribers.all.values.map(\.body) }
            return subscribers.all.values.filter { $0.audience == audience }.map(\.body)
        }
    }

    fileprivate func beat() -> Bool {
        guard !stopped.load(ordering: .relaxed) else { return false }
        for body in current() { body.heartbeat() }
        return true
    }
}

/// The broadcaster, held weakly by its heartbeat.
private final class WeakBox: Sendable {
    private let reference = Mutex(Weak(value: nil))
    struct Weak: Sendable { weak let value: EventBroadcaster? }
    var value: EventBroadcaster? {
        get { reference.withLock { $0.value } }
        set { reference.withLock { $0 = Weak(value: newValue) } }
    }
}
