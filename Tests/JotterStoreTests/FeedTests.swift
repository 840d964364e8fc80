import Foundation
import JotterPostgres
import Synchronization
import Testing
@testable import JotterStore
import JotterSystem

@Suite("The change feed: once per note, commit order, cursors of the event ids, resets")
struct FeedTests {
    /// Every page from `since` until `more` is false, `limit` at a time: the entries, each
    /// page's walk flag, and the last cursor.
    static func pull(_ store: any DataStore, since: Int64?, limit: Int, owner: Owner = .unclaimed) throws
        -> (entries: [NoteFeedEntry], notes: [NoteRecord?], walks: [Bool], cursor: Int64)
    {
        var entries: [NoteFeedEntry] = [], notes: [NoteRecord?] = [], walks: [Bool] = []
        var cursor = since
        for _ in 0..<10_000 {
            let page = try store.changes(NoteFeedQuery(since: cursor, limit: limit + 1), owner: owner)
            let count = min(page.entries.count, limit), more = page.entries.count > limit
            entries += page.entries.prefix(count)
            notes += page.records.prefix(count)
            walks.append(page.walk)
            cursor = page.cursor(count: count, more: more)
            if !more { return (entries, notes, walks, cursor!) }
        }
        throw FixtureError("the feed never ended")
    }

    @Test(arguments: Backend.all) func eachNoteOnceInItsLatestStateAcrossARestart(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        var store = fixture.store
        let start = try store.lastEventID()
        let a = try fixture.create("a")
        let b = try fixture.create("b")
        let e3 = try #require(try store.perform(.update(id: a.id, body: "a2", ifVersion: nil)).event)
        let e4 = try #require(try store.perform(.delete(id: b.id, ifVersion: nil)).event)
        let c = try fixture.create("c")
        let head = try store.lastEventID()

        // From the start: a walk of everything (the tombstone too), each note once, in commit order.
        let all = try Self.pull(store, since: nil, limit: 100)
        #expect(all.entries.map(\.noteID) == [a.id, b.id, c.id])
        #expect(all.entries.map(\.deleted) == [false, true, false])
        #expect(all.notes[0]?.body == "a2" && all.entries[0].version == 2 && all.entries[1].version == 1)
        #expect(all.walks == [true] && all.cursor == head)

        // A walk one at a time: negative cursors go on with it; the last page's is the head.
        let walked = try Self.pull(store, since: nil, limit: 1)
        #expect(walked.entries == all.entries && walked.walks == [true, true, true] && walked.cursor == head)
        #expect(try store.changes(NoteFeedQuery(since: nil, limit: 2), owner: .unclaimed).cursor(count: 1, more: true) == -e3.id)

        // From an event id: the changes after it, the cursor of each page an event id.
        let after = try Self.pull(store, since: start, limit: 1)
        #expect(after.entries == all.entries && after.walks == [false, false, false])
        let fromE3 = try Self.pull(store, since: e3.id, limit: 100)
        #expect(fromE3.entries.map(\.noteID) == [b.id, c.id] && fromE3.walks == [false])
        let page = try store.changes(NoteFeedQuery(since: e3.id, limit: 2), owner: .unclaimed)
        #expect(page.cursor(count: 1, more: true) == e4.id)
        #expect(try Self.pull(store, since: head, limit: 10).entries.isEmpty)

        // A restart changes nothing: the same cursors go on.
        store.close()
        store = try fixture.reopen()
        defer { store.close() }
        let again = try Self.pull(store, since: e3.id, limit: 100)
        #expect(again.entries == fromE3.entries && again.cursor == head)
        let d = try #require(try store.perform(.create(body: "d")).note)
        let next = try Self.pull(store, since: head, limit: 100)
        let newHead = try store.lastEventID()
        #expect(next.entries.map(\.noteID) == [d.id] && next.walks == [false] && next.cursor == newHead)
        // Another owner sees none of it.
        #expect(try Self.pull(store, since: nil, limit: 100, owner: Owner(id: 7)).entries.isEmpty)
    }

    @Test(arguments: Backend.all) func deletesRecreatesAndRestoresInsideOnePage(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let a = try fixture.create("one")
        let since = try store.lastEventID()
        _ = try store.perform(.update(id: a.id, body: "two", ifVersion: nil))
        let restored = try store.restoreNote(id: a.id, version: 1, ifVersion: nil, owner: .unclaimed)
        #expect(restored.change?.note.version == 3)
        let b = try fixture.create("gone soon")
        _ = try store.perform(.update(id: b.id, body: "gone", ifVersion: nil))
        _ = try store.perform(.delete(id: b.id, ifVersion: nil))
        let c = try fixture.create("again")

        let page = try Self.pull(store, since: since, limit: 100)
        #expect(page.entries.map(\.noteID) == [a.id, b.id, c.id])
        #expect(page.notes[0]?.body == "one" && page.entries[0].version == 3)
        #expect(page.entries[1].deleted && page.entries[1].version == 2)
        #expect(page.notes[2]?.body == "again")
        // In commit order: each entry's place is its latest event's id.
        #expect(page.entries.map(\.seq) == page.entries.map(\.seq).sorted())
        let events = try #require(try store.events(after: since, limit: 100))
        #expect(page.entries.map(\.seq) == [events[1].id, events[4].id, events[5].id])
    }

    @Test(arguments: Backend.all) func aCursorOlderThanAPrunedTombstoneWalksEverything(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let kept = try fixture.create("kept")
        let old = try store.lastEventID()
        let gone = try fixture.create("deleted")
        let deletion = try #require(try store.perform(.delete(id: gone.id, ifVersion: nil)).event)
        let later = try fixture.create("later")

        // Within retention nothing is pruned and the old cursor gets the changes.
        #expect(try store.pruneFeed(FeedRetention(days: 1)) == 0)
        #expect(try Self.pull(store, since: old, limit: 100).entries.map(\.noteID) == [gone.id, later.id])
        // Past it the tombstone goes: the old cursor is walked, never answered with a gap.
        #expect(try store.pruneFeed(FeedRetention(days: 1), asOf: WallClock.seconds() + 2 * 86_400) == 1)
        let reset = try Self.pull(store, since: old, limit: 1)
        #expect(reset.walks == [true, true] && reset.entries.map(\.noteID) == [kept.id, later.id])
        #expect(reset.cursor == (try store.lastEventID()))
        // A cursor at or after the pruned tombstone still gets only the changes.
        #expect(try Self.pull(store, since: deletion.id, limit: 100).entries.map(\.noteID) == [later.id])
        #expect(try Self.pull(store, since: deletion.id, limit: 100).walks == [false])
        // A cursor beyond the last event (a restored older backup): walked too.
        let ahead = try Self.pull(store, since: try store.lastEventID() + 1_000, limit: 100)
        #expect(ahead.walks == [true] && ahead.entries.map(\.noteID) == [kept.id, later.id])
    }

    @Test(arguments: Backend.all) func mergedEventsCarryTheirBase(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let note = try fixture.create("a\nb\nc\n")
        let since = try store.lastEventID()
        _ = try store.perform(.update(id: note.id, body: "A\nb\nc\n", ifVersion: nil))
        let merged = try store.mergeNote(id: note.id, base: 1, body: "a\nb\nC\n", ifVersion: nil, owner: .unclaimed)
        let change = try #require(merged.change)
        #expect(change.note.body == "A\nb\nC\n" && change.event.mergeBase == 1)
        let events = try #require(try store.events(after: since, limit: 10))
        #expect(events.map(\.mergeBase) == [nil, 1])
        #expect(events.map(\.note.version) == [2, 3])
    }

    @Test(arguments: Backend.all) func recentlyUpdatedListsTheLastChangedFirst(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let notes = try (0..<5).map { try fixture.create("note \($0)") }
        _ = try store.perform(.update(id: notes[1].id, body: "note 1, edited", ifVersion: nil))
        _ = try store.perform(.touch(id: notes[3].id, ifVersion: nil))
        _ = try store.perform(.delete(id: notes[2].id, ifVersion: nil))
        let expected = [notes[3].id, notes[1].id, notes[4].id, notes[0].id]

        var seen: [Int64] = [], after: Int64?
        repeat {
            let page = try store.notesWithAttachments(NoteQuery(limit: 3, after: after, order: .recentlyUpdated))
            seen += page.notes.prefix(2).map(\.id)
            after = page.count > 2 ? page[1].position : nil
        } while after != nil
        #expect(seen == expected)
        #expect(try store.notes(NoteQuery(limit: 10, order: .recentlyUpdated)).map(\.id) == expected)
        #expect(try store.notes(NoteQuery(limit: 10, order: .recentlyUpdated, search: "edited")).map(\.id) == [notes[1].id])
    }

    @Test func migrationGivesExistingNotesDistinctPlacesAndWalksOldCursors() throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        var store: any DataStore = try SQLiteStore(dataDirectory: directory.path)
        let a = try #require(try store.perform(.create(body: "a")).note)
        let b = try #require(try store.perform(.create(body: "b")).note)
        _ = try store.perform(.update(id: a.id, body: "a2", ifVersion: nil))
        let head = try store.lastEventID()
        store.close()
        // Back to schema version 8, as a database from before the feed.
        let db = try SQLiteConnection(path: directory.databasePath, flags: SQLiteConnection.readWrite)
        try db.execute(
            """
            DROP TABLE note_changes; DROP TABLE feed_marks; ALTER TABLE events DROP COLUMN note_merge_base;
            ALTER TABLE idempotency_keys DROP COLUMN claimer;
            DROP TABLE trash_places; DROP INDEX trashed_notes_by_owner; ALTER TABLE trashed_notes DROP COLUMN deleted_seq;
            CREATE INDEX trashed_notes_by_owner ON trashed_notes (owner, deleted_at);
            ALTER TABLE partial_uploads DROP COLUMN tus_metadata; ALTER TABLE uploads DROP COLUMN tus_metadata;
            UPDATE schema_version SET version = 8;
            """)
        db.close()

        store = try SQLiteStore(dataDirectory: directory.path)
        defer { store.close() }
        let all = try Self.pull(store, since: nil, limit: 1)
        #expect(all.entries.map(\.noteID) == [b.id, a.id])  // in order of last change
        #expect(Set(all.entries.map(\.seq)).count == 2 && all.entries.allSatisfy { $0.seq <= head })
        #expect(all.cursor == head)
        #expect(try Self.pull(store, since: head - 1, limit: 10).walks == [true])
        #expect(try Self.pull(store, since: head, limit: 10).entries.isEmpty)
    }
}

@Suite("The change feed on two PostgreSQL instances")
struct FeedScaleOutTests {
    /// Two stores on one database write at once, interleaving their commits, while a reader
    /// pulls the feed from one of them a few entries at a time: every page is in event-id
    /// order above its cursor, and once the writes end the reader has every note's last version
    /// — nothing passed over by a commit that landed late.
    @Test(.enabled(if: PostgresServer.available)) func interleavedCommitsOfTwoInstancesAreAllSeenInOrder() throws {
        let fixture = try StoreFixture(.postgres)
        let other = try fixture.reopen()
        defer { other.close() }
        let stores = [fixture.store, other]
        final class Seen: @unchecked Sendable {
            var versions: [Int64: Int64] = [:]
            var deleted: Set<Int64> = []
            var problems: [String] = []
            var cursor: Int64 = 0
            let done = Atomic(false)

            /// One page after the cursor; whether more follow.
            func pullOnce(_ store: any DataStore) throws -> Bool {
                let page = try store.changes(NoteFeedQuery(since: cursor, limit: 4), owner: .unclaimed)
                let count = min(page.entries.count, 3), more = page.entries.count > 3
                var last = cursor
                for entry in page.entries.prefix(count) {
                    if entry.seq <= last { problems.append("seq \(entry.seq) after \(last)") }
                    last = entry.seq
                    if entry.deleted { deleted.insert(entry.noteID) } else { deleted.remove(entry.noteID) }
                    versions[entry.noteID] = entry.version
                }
                if page.walk { problems.append("a walk from \(cursor)") }
                cursor = page.cursor(count: count, more: more)
                return more
            }
        }
        let seen = Seen()
        let reading = fixture.store
        let group = DispatchGroup()
        group.enter()
        Thread {
            while !seen.done.load(ordering: .acquiring) { _ = try? seen.pullOnce(reading) }
            group.leave()
        }.start()
        onThreads(6) { index in
            let store = stores[index % 2]
            var ids: [Int64] = []
            for step in 0..<40 {
                if step % 3 == 0 || ids.isEmpty {
                    if let note = try? store.createNote(body: "w\(index) \(step)", owner: .unclaimed) { ids.append(note.note.id) }
                } else if step % 7 == 0 {
                    _ = try? store.deleteNote(id: ids.removeLast(), ifVersion: nil, owner: .unclaimed)
                } else {
                    _ = try? store.updateNote(id: ids[step % ids.count], body: "w\(index) \(step)", ifVersion: nil, owner: .unclaimed)
                }
            }
        }
        seen.done.store(true, ordering: .releasing)
        group.wait()
        // The last writes become visible below the horizon: pull until the cursor is the head.
        for _ in 0..<200 {
            while try seen.pullOnce(reading) {}
            if seen.cursor >= (try fixture.store.lastEventID()) { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(seen.problems.isEmpty, "\(seen.problems.prefix(5))")
        let live = try fixture.store.notes(NoteQuery(limit: 1000, order: .oldestFirst))
        let seenLive = seen.versions.filter { !seen.deleted.contains($0.key) }
        #expect(seenLive == Dictionary(uniqueKeysWithValues: live.map { ($0.id, $0.version) }))
    }
}
