import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

/// One change from `GET /notes/events`.
public struct NoteEvent: Sendable, Hashable {
    /// What happened to which note.
    public enum Change: Sendable, Hashable {
        case created(Note)
        case updated(Note)
        /// The note as it was before it was deleted.
        case deleted(Note)
        /// The server could not replay what was missed: list the notes again.
        case reload
    }

    /// The event id (it grows across all events and server restarts).
    public var id: Int64?
    /// What happened.
    public var change: Change
    /// For `.deleted`: when the note was deleted, which none of the note's own times say; nil
    /// from a server that does not send it.
    public var deletedAt: Date?

    /// The note the event is about (`nil` for `.reload`).
    public var note: Note? {
        switch change {
        case .created(let note), .updated(let note), .deleted(let note): note
        case .reload: nil
        }
    }

    init?(_ event: EventStreamParser.Event) {
        id = event.id.flatMap { Int64($0) }
        if event.type == "reload" { change = .reload; return }
        guard let note = try? JSONDecoder().decode(Note.self, from: Data(event.data.utf8)) else { return nil }
        struct Deletion: Decodable {
            @Timestamped var deletedAt: Date?
            enum CodingKeys: String, CodingKey { case deletedAt = "deleted_at" }
        }
        if event.type == "note.deleted" { deletedAt = (try? JSONDecoder().decode(Deletion.self, from: Data(event.data.utf8)))?.deletedAt }
        switch event.type {
        case "note.created": change = .created(note)
        case "note.updated": change = .updated(note)
        case "note.deleted": change = .deleted(note)
        default: return nil  // a kind this SDK does not know yet
        }
    }
}

/// Why and for how long an event stream waits before it connects again (`events(onReconnect:)`).
public struct EventStreamInterruption: Sendable {
    /// Seconds before the next attempt.
    public var delay: Double
    /// What ended the connection.
    public var reason: JotterClientError
}

extension JotterClient.Notes {
    /// The live changes to notes, as they happen.
    ///
    /// The stream stays open until you stop iterating (or cancel the task). When the connection
    /// drops after it was established it reconnects by itself, after the delay the server asked
    /// for (`retry:`, doubling while the server stays away, at most 30 s), sending
    /// `Last-Event-ID` so the events missed meanwhile are replayed; when they can't be, you get
    /// `.reload`. The first connection is retried as `RetryPolicy` says; errors are
    /// `JotterClientError`.
    ///
    /// ```swift
    /// for try await event in client.notes.events() {
    ///     switch event.change {
    ///     case .created(let note), .updated(let note): show(note)
    ///     case .deleted(let note): remove(note.id)
    ///     case .reload: reloadEverything()
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - lastEventID: resume after this event (a `NoteEvent.id` you saw before).
    ///   - onReconnect: called when an established connection dropped, before waiting to
    ///     connect again (to tell the user).
    public func events(
        lastEventID: Int64? = nil,
        onReconnect: (@Sendable (EventStreamInterruption) -> Void)? = nil
    ) -> NoteEvents {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: NoteEvent.self)
        let client = self.client
        let task = Task {
            var subscription = EventSubscription(client: client, lastEventID: lastEventID, onReconnect: onReconnect)
            do throws(JotterClientError) {
                try await subscription.run { continuation.yield($0) }
            } catch {
                continuation.finish(throwing: error.isCancelled ? nil : error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return NoteEvents(stream: stream)
    }
}

/// The live changes of `notes.events()`: an `AsyncSequence` whose errors are
/// `JotterClientError`, so a `catch` has the error's kind, status and problem without a cast.
/// It ends when the task iterating it is cancelled (without an error) or on an error that
/// reconnecting can't mend; stopping the iteration closes the connection.
public struct NoteEvents: AsyncSequence, Sendable {
    public typealias Element = NoteEvent
    public typealias Failure = JotterClientError

    let stream: AsyncThrowingStream<NoteEvent, any Error>

    /// The iterator: one per stream (a second iteration of the same `NoteEvents` gets nothing).
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = NoteEvent
        public typealias Failure = JotterClientError

        var base: AsyncThrowingStream<NoteEvent, any Error>.AsyncIterator

        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(JotterClientError) -> NoteEvent? {
            do {
                return try await base.next(isolation: actor)
            } catch {
                // The stream finishes only with a `JotterClientError`.
                throw JotterClientError.wrapping(error, url: nil)
            }
        }

        public mutating func next() async throws(JotterClientError) -> NoteEvent? {
            try await next(isolation: nil)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }
}

/// The connect–read–reconnect loop behind `events()`.
struct EventSubscription {
    let client: JotterClient
    var lastEventID: Int64?
    let onReconnect: (@Sendable (EventStreamInterruption) -> Void)?
    /// Milliseconds before reconnecting, as the server last said.
    private var retry = 3000

    init(client: JotterClient, lastEventID: Int64?, onReconnect: (@Sendable (EventStreamInterruption) -> Void)? = nil) {
        self.client = client
        self.lastEventID = lastEventID
        self.onReconnect = onReconnect
    }

    /// Runs until cancelled, or until an error that reconnecting can't mend.
    mutating func run(_ deliver: (NoteEvent) -> Void) async throws(JotterClientError) -> Never {
        var opened = false  // a connection was established at least once
        var failures = 0  // consecutive failed attempts
        while true {
            var reason = JotterClientError(kind: .transport, message: "the server ended the event stream")
            do {
                try await connect(deliver) {
                    opened = true
                    failures = 0
                }
            } catch {
                reason = error
                if error.isCancelled { throw error }
                failures += 1
                guard opened else {
                    // Never connected: retried as any GET is, then the error is the caller's.
                    guard let delay = client.configuration.retry.delay(after: error, attempt: failures, method: "GET") else { throw error }
                    try await JotterClient.pause(delay)
                    continue
                }
                // Connected before: wait for the server to come back; other errors end the stream.
                guard error.isTransport || error.status.map(RetryPolicy.retryableStatuses.contains) == true else { throw error }
            }
            let seconds = Double(retry) / 1000
            let delay = min(max(seconds, 30), seconds * pow(2, Double(min(max(failures - 1, 0), 5))))
            onReconnect?(EventStreamInterruption(delay: delay, reason: reason))
            try await JotterClient.pause(delay)
        }
    }

    /// One connection: delivers its events until the server ends it.
    private mutating func connect(_ deliver: (NoteEvent) -> Void, onOpen: () -> Void) async throws(JotterClientError) {
        var request = client.makeRequest("GET", "/notes/events", headers: ["Accept": "text/event-stream"])
        if let lastEventID { request.setValue(String(lastEventID), forHTTPHeaderField: "Last-Event-ID") }
        var parser = EventStreamParser()
        try await client.stream(request, response: { _ in onOpen() }) { chunk in
            for event in parser.feed(chunk) {
                if let id = event.id.flatMap({ Int64($0) }) { lastEventID = id }
                if let noteEvent = NoteEvent(event) { deliver(noteEvent) }
            }
            // The server's first message has only an `id:` (the cursor it goes on from): kept,
            // so a reconnect before any event still resumes without a gap.
            if let id = parser.lastEventID.flatMap({ Int64($0) }) { lastEventID = id }
            if let retry = parser.retry { self.retry = retry }
        }
    }
}
