import Foundation
import Glibc

/// `GET /notes/events` over its own socket, read as a client would: the response head, then the
/// chunked body decoded (a proxy may split or merge the server's chunks anywhere), then the
/// server-sent events in it. Heartbeat comments and the `retry:` line are skipped.
///
/// ```swift
/// let stream = try EventStreamConnection(port: server.port)
/// let events = try stream.next(2, within: 5)   // the next two events, in order
/// ```
public final class EventStreamConnection {
    public struct Event: Sendable, Equatable, CustomStringConvertible {
        public var id: Int64
        public var name: String
        /// The `id` of the note in `data` (nil for an event without one, such as `reload`).
        public var noteID: String?
        public var description: String { "\(id) \(name) \(noteID ?? "-")" }
    }

    /// The response's status code and head (status line and header lines).
    public private(set) var status = 0
    public private(set) var head = ""
    private let connection: RawHTTP
    private var fd: Int32 { connection.fd }
    private var raw: [UInt8] = []
    /// Decoded body bytes not yet parsed into events.
    private var text: [UInt8] = []
    private var chunkLeft = 0
    private var ended = false
    private var pending: [Event] = []

    /// Connects to 127.0.0.1:`port`, sends the request (with `Last-Event-ID` when given) and
    /// reads the response head; for a `200`, also waits for the `retry:` line that the server
    /// sends once the stream is subscribed.
    public init(port: Int, lastEventID: Int64? = nil, timeout: Double = 10) throws {
        connection = try RawHTTP(port: port, timeout: timeout)
        let fd = connection.fd
        var request = "GET /notes/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        let bytes = Array((request + "\r\n").utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw RawHTTP.Failure(message: "send to port \(port) failed")
        }
        let deadline = Date().addingTimeInterval(timeout)
        var headEnd: Int?
        while headEnd == nil {
            try receive(until: deadline)
            headEnd = Self.find([13, 10, 13, 10], in: raw)
        }
        head = String(decoding: raw[..<headEnd!], as: UTF8.self)
        raw.removeFirst(headEnd! + 4)
        status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        guard status == 200 else { return }
        guard head.lowercased().contains("transfer-encoding: chunked") else {
            throw RawHTTP.Failure(message: "event stream not chunked: \(head)")
        }
        while !String(decoding: text, as: UTF8.self).contains("retry:") {
            try decode()
            if String(decoding: text, as: UTF8.self).contains("retry:") { break }
            try receive(until: deadline)
        }
    }

    /// The next `count` events, in the order they came; throws when they have not all arrived
    /// within `seconds` (saying which did) or the stream ended.
    public func next(_ count: Int, within seconds: Double) throws -> [Event] {
        let deadline = Date().addingTimeInterval(seconds)
        while pending.count < count {
            try decode()
            parse()
            if pending.count >= count { break }
            do { try receive(until: deadline) } catch {
                throw RawHTTP.Failure(message: "\(error); got \(pending.count) of \(count) events: \(pending)")
            }
        }
        let events = Array(pending.prefix(count))
        pending.removeFirst(count)
        return events
    }

    /// Events that have arrived within `seconds` (waits the whole time; for "nothing more").
    public func drain(for seconds: Double) -> [Event] {
        let deadline = Date().addingTimeInterval(seconds)
        while (try? receive(until: deadline)) != nil {}
        try? decode()
        parse()
        defer { pending = [] }
        return pending
    }

    /// True once the server or the proxy ended the stream (EOF, or the terminating chunk)
    /// within `seconds`.
    public func ends(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !ended {
            try? decode()
            if ended { break }
            do { try receive(until: deadline) } catch { return ended }
        }
        return true
    }

    private func receive(until deadline: Date) throws {
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw RawHTTP.Failure(message: "timed out") }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining, 1) * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                ended = true
                throw RawHTTP.Failure(message: "the stream ended")
            }
            raw += chunk[..<count]
            return
        }
    }

    /// Moves complete chunk data from `raw` to `text`.
    private func decode() throws {
        while !ended {
            if chunkLeft > 0 {
                let take = min(chunkLeft, raw.count)
                guard take > 0 else { return }
                text += raw[..<take]
                raw.removeFirst(take)
                chunkLeft -= take
                if chunkLeft == 0 { chunkLeft = -2 }  // then its CRLF
                continue
            }
            if chunkLeft == -2 {
                guard raw.count >= 2 else { return }
                raw.removeFirst(2)
                chunkLeft = 0
                continue
            }
            guard let lineEnd = Self.find([13, 10], in: raw) else { return }
            let sizeText = String(decoding: raw[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw RawHTTP.Failure(message: "bad chunk size line '\(sizeText)'")
            }
            raw.removeFirst(lineEnd + 2)
            if size == 0 { ended = true; return }
            chunkLeft = size
        }
    }

    /// Moves complete events (ended by a blank line) from `text` to `pending`.
    private func parse() {
        while let end = Self.find([10, 10], in: text) {
            let block = String(decoding: text[..<end], as: UTF8.self)
            text.removeFirst(end + 2)
            var id: Int64?, name: String?, data: String?
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = Int64(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            guard let id, let name else { continue }
            let object = data.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let note = (object?["note"] as? [String: Any]) ?? object
            pending.append(Event(id: id, name: name, noteID: note?["id"] as? String))
        }
    }

    private static func find(_ marker: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= marker.count else { return nil }
        for start in 0...(bytes.count - marker.count) where bytes[start..<(start + marker.count)].elementsEqual(marker) {
            return start
        }
        return nil
    }
}
