import Foundation
import Glibc
import Testing
@testable import JotterHTTP
import JotterTestSupport

/// Event streams under load: one copy of an event for all streams, a bounded backlog per
/// stream, a slow reader cut between events, any event size delivered, replay linear.
@Suite("Event fan-out", .tags(.timing))
struct EventFanOutTests {
    /// Reads everything the body has now, in blocks of `block` bytes; nil once it has ended.
    private func drain(_ body: EventStreamBody, block: Int = 64 << 10) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: block)
        while true {
            let result = buffer.withUnsafeMutableBytes { body.read(into: $0, at: 0) }
            switch result {
            case .bytes(let count): out += buffer[..<count]
            case .wait: return out
            case .end, .failed: return out.isEmpty ? nil : out
            }
        }
    }

    private func residentBytes() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
        return (Int(text.split(separator: " ")[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test("one event for 256 streams that never read is held once")
    func sharedCopy() {
        let hub = EventBroadcaster(heartbeat: 0.02)
        let bodies = (0..<256).map { _ in hub.subscribe() }
        for body in bodies { body.release(replay: [], after: 0) }
        let before = residentBytes()
        hub.publish(ServerSentEvent(id: 1, event: "big", data: String(repeating: "x", count: 1 << 20)))
        hub.flush()
        let grown = residentBytes() - before
        #expect(grown < 32 << 20, "RSS grew \(grown >> 20) MiB for one 1 MiB event")
        // Every stream still has the whole event.
        let first = drain(bodies[0]) ?? []
        #expect(first.count > 1 << 20)
        #expect(drain(bodies[255])?.count == first.count)
        hub.stop()
    }

    @Test("an event over 64 KiB reaches a reading subscriber", arguments: [66_000, 1 << 20, 6 << 20])
    func largeEvent(_ size: Int) throws {
        let body = EventStreamBody()
        body.release(replay: [], after: 0)
        let event = ServerSentEvent(id: 1, event: "big", data: String(repeating: "y", count: size)).encoded
        body.send(id: 1, event)
        let received = try #require(drain(body, block: 32 << 10))
        #expect(received == event)
        body.send(id: 2, Array("id: 2\ndata: small\n\n".utf8))
        #expect(drain(body).map { String(decoding: $0, as: UTF8.self) } == "id: 2\ndata: small\n\n")
    }

    @Test("a reader that falls behind is cut after a whole event, and what it missed is later events")
    func slowReaderCutBetweenEvents() throws {
        let body = EventStreamBody(maxPending: 100_000)
        body.release(replay: [], after: 0)
        let events = (1...50).map { ServerSentEvent(id: Int64($0), data: String(repeating: "z", count: 10_000)).encoded }
        // The reader takes part of the first event, then stops reading while events pile up.
        var buffer = [UInt8](repeating: 0, count: 5_000)
        body.send(id: 1, events[0])
        guard case .bytes(let count) = buffer.withUnsafeMutableBytes({ body.read(into: $0, at: 0) }) else {
            Issue.record("nothing to read"); return
        }
        var received = Array(buffer[..<count])
        for (index, event) in events.enumerated().dropFirst() { body.send(id: Int64(index + 1), event) }
        received += drain(body) ?? []
        // Ended (not waiting) — and on an event boundary, with whole events only.
        #expect(drain(body) == nil)
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.hasSuffix("\n\n"))
        let ids = text.split(separator: "\n").filter { $0.hasPrefix("id: ") }.compactMap { Int($0.dropFirst(4)) }
        #expect(ids == Array(1...ids.count))
        #expect(ids.count >= 2 && ids.count < 50)
        #expect(received.count == events[..<ids.count].reduce(0) { $0 + $1.count })
    }

    @Test("a replay longer than a heartbeat is sent whole")
    func longReplay() throws {
        let replay = (1...256).map { (Int64($0), ServerSentEvent(id: Int64($0), data: String(repeating: "r", count: 32_000)).encoded) }
        let hub = EventBroadcaster(heartbeat: 0.02)
        let body = hub.subscribe()
        body.release(replay: replay, after: 0)
        let total = replay.reduce(0) { $0 + $1.1.count }
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let deadline = Date.now.addingTimeInterval(20)
        while received < total, Date.now < deadline {
            let result = buffer.withUnsafeMutableBytes { body.read(into: $0, at: 0) }
            guard case .bytes(let count) = result else { break }
            received += count
            usleep(1_000)  // slower than the heartbeat
        }
        // Nothing more of the replay. A heartbeat may follow it: once the replay is read, the
        // queue is empty, and on a loaded machine 50 ms can pass before this read.
        let tail = buffer.withUnsafeMutableBytes { body.read(into: $0, at: 0) }
        if case .bytes(let count) = tail, Array(buffer[..<count]) != ServerSentEvent.heartbeat {
            Issue.record("\(count) more bytes: \(String(decoding: buffer[..<min(count, 80)], as: UTF8.self))")
        }
        #expect(received == total)
        hub.stop()
    }

    @Test("one event to many streams: their wakes are run in turns, the sockets polled between")
    func wakesRunInTurns() throws {
        let count = 3 * EventLoop.taskBudget
        let fixture = try EngineFixture {
            $0.threads = 1
            $0.connectionsPerAddress = count + 8
        }
        let streams = try (0..<count).map { _ in
            let stream = try fixture.connect(timeout: 10)
            try stream.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            return stream
        }
        for stream in streams { _ = try stream.readStream(until: "\r\n\r\n") }
        while fixture.hub.count < count { usleep(1_000) }
        // The loop is held inside a task while the event wakes every stream: all their wakes
        // are queued when it goes on.
        let holder = try fixture.connect(timeout: 10)
        try holder.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        fixture.held.wait()
        fixture.hub.publish(ServerSentEvent(id: 1, event: "test", data: "fan-out"))
        fixture.hub.flush()
        fixture.server.counters.mostTasksInOneTurn.store(0, ordering: .relaxed)
        fixture.gate.signal()
        #expect(try holder.readResponse().body == Array("released".utf8))
        for stream in streams { #expect(try stream.readStream(until: "\n\n").contains("id: 1\n")) }
        let most = fixture.server.counters.mostTasksInOneTurn.load(ordering: .relaxed)
        #expect(most > 0 && most <= EventLoop.taskBudget, "\(most) tasks ran between two polls")
    }

    @Test("over a socket: a 200 KB event reaches the stream")
    func largeEventOverSocket() throws {
        let fixture = try EngineFixture()
        let stream = try fixture.connect(timeout: 5)
        try stream.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try stream.readStream(until: "\r\n\r\n")
        while fixture.hub.count == 0 { usleep(1_000) }
        let data = String(repeating: "q", count: 200_000)
        fixture.hub.publish(ServerSentEvent(id: 7, event: "test", data: data))
        let text = try stream.readStream(until: "\n\n")
        #expect(text.contains("id: 7\n"))
        // Chunk-size lines aside, the whole data arrived.
        #expect(text.filter { $0 == "q" }.count == data.count)
    }
}
