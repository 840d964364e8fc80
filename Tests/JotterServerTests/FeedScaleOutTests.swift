import Foundation
import JotterServerTestSupport
import JotterTestSupport
import Testing

/// `GET /notes/changes` through two `jotter serve` processes on one PostgreSQL database and
/// bucket (`ScaleOutCluster`): the feed is ordered by commit across instances, so each instance
/// pages out the same changes in the same order, and its cursors are the event stream's ids.
@Suite(
    "The change feed across two instances on PostgreSQL", .tags(.timing), .serialized,
    .enabled(if: ScaleOutBackend.unavailable == nil, Comment(rawValue: ScaleOutBackend.unavailable ?? "")))
struct FeedScaleOutTests {
    static let form = [("Content-Type", "application/x-www-form-urlencoded")]

    /// One change as the feed shows it: `id v<version>` and the body, or `id v<version> deleted`.
    typealias Change = String

    /// Every page of `GET /notes/changes` from `since` on the instance at `port`, `limit` at a
    /// time: the changes in order, and the last cursor.
    static func pull(_ cluster: ScaleOutCluster, _ port: Int, since: Int64?, limit: Int) throws -> (changes: [Change], cursor: Int64) {
        var changes: [Change] = []
        var since = since
        for _ in 0..<1000 {
            let target = "/notes/changes?limit=\(limit)" + (since.map { "&since=\($0)" } ?? "")
            let answer = try cluster.request(port, "GET", target)
            try #require(answer.status == 200, "\(target) on \(port): \(answer.text)")
            let json = try answer.json()
            for change in try #require(json["changes"] as? [[String: Any]]) {
                let id = change["id"] as? String ?? "?", version = change["version"] as? Int ?? -1
                changes.append(
                    change["deleted"] as? Bool == true ? "\(id) v\(version) deleted" : "\(id) v\(version) \(change["body"] as? String ?? "?")")
            }
            let cursor = try #require(json["cursor"] as? Int).int64
            guard json["more"] as? Bool == true else { return (changes, cursor) }
            since = cursor
        }
        throw RawHTTP.Failure(message: "the feed on \(port) never ended")
    }

    /// Both instances' complete feeds, once they agree (an instance reads below the horizon of
    /// transactions still open anywhere, so a commit of a moment ago may take a moment to show).
    static func agreed(_ cluster: ScaleOutCluster, since: Int64?, limit: Int, count: Int) throws -> (changes: [Change], cursor: Int64) {
        let ports = cluster.instances.map(\.port)
        var last: [(changes: [Change], cursor: Int64)] = []
        for _ in 0..<100 {
            last = try ports.map { try pull(cluster, $0, since: since, limit: limit) }
            if last[0].changes.count == count, last[0].changes == last[1].changes, last[0].cursor == last[1].cursor { return last[0] }
            usleep(100_000)
        }
        Issue.record("the instances' feeds differ: \(last[0]) vs \(last[1])")
        return last[0]
    }

    @Test("interleaved commits on both instances: each one pages out the same changes in the same order, deletes and restores included")
    func sameFeedFromEachInstance() throws {
        let cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend())
        defer { cluster.stop() }
        let ports = cluster.instances.map(\.port)
        var ids: [String] = []
        for step in 0..<10 { ids.append(try cluster.createNote(ports[step % 2], "note+\(step)")) }
        // Both instances write at once: their commits interleave.
        let frozenIDs = ids
        DispatchQueue.concurrentPerform(iterations: 2) { side in
            for step in 0..<10 {
                let id = frozenIDs[(step * 3 + side) % frozenIDs.count]
                _ = try? cluster.request(ports[side], "PUT", "/notes/\(id)", headers: Self.form, body: Array("body=edit+\(side)+\(step)".utf8))
            }
        }
        #expect(try cluster.request(ports[1], "DELETE", "/notes/\(ids[3])").status == 200)
        #expect(try cluster.request(ports[0], "DELETE", "/notes/\(ids[5])").status == 200)
        #expect(try cluster.request(ports[1], "POST", "/notes/\(ids[5])/restore").status == 200)

        let whole = try Self.agreed(cluster, since: nil, limit: 3, count: 10)
        // Each note once, in its latest state; the deleted one as a tombstone.
        #expect(Set(whole.changes.map { $0.split(separator: " ")[0] }).count == 10)
        #expect(whole.changes.contains { $0.hasPrefix("\(ids[3]) ") && $0.hasSuffix(" deleted") })
        for id in ids where id != ids[3] {
            let note = try #require(try cluster.request(ports[0], "GET", "/notes/\(id)").json()["note"] as? [String: Any])
            #expect(whole.changes.contains("\(id) v\(note["version"] as? Int ?? 0) \(note["body"] as? String ?? "")"), "\(id): \(whole.changes)")
        }
        // In commit order: the last change listed is the restore, the one before it the deletes.
        #expect(whole.changes.last?.hasPrefix("\(ids[5]) ") == true, "\(whole.changes)")
        let beforeLast = whole.changes.dropLast().last ?? ""
        #expect(beforeLast.hasPrefix("\(ids[3]) ") && beforeLast.hasSuffix(" deleted"), "\(whole.changes)")
        // Paged differently, from either instance, the same.
        #expect(try Self.pull(cluster, ports[1], since: nil, limit: 1000).changes == whole.changes)
        #expect(try Self.pull(cluster, ports[0], since: 0, limit: 7).changes == whole.changes)
    }

    @Test("a pull from one instance, then an event stream on the other from the same cursor: each later change once, none before")
    func pullThenSubscribe() throws {
        let cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend())
        defer { cluster.stop() }
        let ports = cluster.instances.map(\.port)
        var ids: [String] = []
        for step in 0..<4 { ids.append(try cluster.createNote(ports[step % 2], "before+\(step)")) }
        let pulled = try Self.agreed(cluster, since: nil, limit: 2, count: 4)

        // Two changes between the pull and the subscription: the stream replays them.
        #expect(try cluster.request(ports[0], "PUT", "/notes/\(ids[0])", headers: Self.form, body: Array("body=after+0".utf8)).status == 200)
        ids.append(try cluster.createNote(ports[1], "after+1"))
        let stream = try EventStreamConnection(port: ports[1], lastEventID: pulled.cursor)
        // Two more once it is open, one through each instance: live.
        #expect(try cluster.request(ports[0], "DELETE", "/notes/\(ids[1])").status == 200)
        #expect(try cluster.request(ports[1], "PUT", "/notes/\(ids[4])", headers: Self.form, body: Array("body=after+2".utf8)).status == 200)

        let events = try stream.next(4, within: 15)
        #expect(events.map(\.name) == ["note.updated", "note.created", "note.deleted", "note.updated"], "\(events)")
        #expect(events.map(\.noteID) == [ids[0], ids[4], ids[1], ids[4]], "\(events)")
        #expect(events.allSatisfy { $0.id > pulled.cursor }, "\(events) after \(pulled.cursor)")
        #expect(events.map(\.id) == events.map(\.id).sorted() && Set(events.map(\.id)).count == 4)
        // Nothing more: no change twice.
        #expect(stream.drain(for: 1).isEmpty)
        // And the feed from the same cursor names the same notes, each once, up to the last event.
        let later = try Self.agreed(cluster, since: pulled.cursor, limit: 2, count: 3)
        #expect(later.changes.map { String($0.split(separator: " ")[0]) } == [ids[0], ids[1], ids[4]], "\(later.changes)")
        #expect(later.cursor == events.last?.id)
    }
}

private extension Int {
    var int64: Int64 { Int64(self) }
}
