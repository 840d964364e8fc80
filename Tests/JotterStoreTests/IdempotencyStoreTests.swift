import Foundation
import Glibc
import Testing
@testable import JotterStore

/// `IdempotencyStore` on both backends: claims, answers, expiry and the per-owner byte budget.
@Suite("Idempotency keys in the store")
struct IdempotencyStoreTests {
    static let print: [UInt8] = Array(repeating: 1, count: 32)

    static func answer(_ body: Int, location: String? = "/notes/1") -> IdempotentAnswer {
        IdempotentAnswer(status: 201, head: "Content-Type: application/json\n", body: Array(repeating: 0x61, count: body), location: location)
    }

    static func complete(_ store: any DataStore, _ key: String, _ answer: IdempotentAnswer, owner: Owner, now: Int64) throws {
        try StoreWait.wait { store.completeIdempotencyKey(key, answer: answer, owner: owner, now: now, completion: $0) }
    }

    @Test(
        "a claimed key is running until answered, then replays; another fingerprint is a mismatch; keys are per owner; a release frees it",
        arguments: Backend.all)
    func claims(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store, ann = Owner(id: 1), bob = Owner(id: 2)
        #expect(try store.claimIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1000) == .claimed)
        #expect(try store.claimIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1001) == .running)
        #expect(try store.claimIdempotencyKey("k", fingerprint: Self.print, owner: bob, now: 1001) == .claimed)
        try Self.complete(store, "k", Self.answer(10), owner: ann, now: 1002)
        #expect(try store.claimIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1003) == .replay(Self.answer(10)))
        #expect(try store.claimIdempotencyKey("k", fingerprint: [2], owner: ann, now: 1003) == .mismatch)
        try StoreWait.wait { store.releaseIdempotencyKey("k", owner: bob, completion: $0) }
        #expect(try store.claimIdempotencyKey("k", fingerprint: Self.print, owner: bob, now: 1004) == .claimed)
    }

    @Test(
        "a lookup says what a claim would, and claims nothing: free is nil, running, mismatch, replay; expired is free",
        arguments: Backend.all)
    func lookups(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store, ann = Owner(id: 1)
        #expect(try store.lookUpIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1000) == nil)
        #expect(try store.lookUpIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1000) == nil, "the lookup claimed nothing")
        #expect(try store.claimIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1000) == .claimed)
        #expect(try store.lookUpIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1001) == .running)
        #expect(try store.lookUpIdempotencyKey("k", fingerprint: [2], owner: ann, now: 1001) == .mismatch)
        #expect(try store.lookUpIdempotencyKey("k", fingerprint: Self.print, owner: Owner(id: 2), now: 1001) == nil)
        #expect(try store.lookUpIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1000 + IdempotencyLimits.lease) == nil)
        try Self.complete(store, "k", Self.answer(10), owner: ann, now: 1002)
        #expect(try store.lookUpIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1003) == .replay(Self.answer(10)))
        #expect(try store.lookUpIdempotencyKey("k", fingerprint: Self.print, owner: ann, now: 1002 + IdempotencyLimits.lifetime) == nil)
        // A free key looked up is still free; a released one is free again.
        #expect(try store.claimIdempotencyKey("free", fingerprint: Self.print, owner: ann, now: 1004) == .claimed)
        try StoreWait.wait { store.releaseIdempotencyKey("free", owner: ann, completion: $0) }
        #expect(try store.lookUpIdempotencyKey("free", fingerprint: Self.print, owner: ann, now: 1005) == nil)
        #expect(try store.claimIdempotencyKey("free", fingerprint: [3], owner: ann, now: 1005) == .claimed)
    }

    @Test(
        "SQLite: an unanswered claim of a store that is gone — closed, or its process killed — is taken over after answerGrace; a living one's stays running"
    )
    func goneInstancesClaimsGiveWay() throws {
        let fixture = try StoreFixture(.sqlite)
        let survivor = try #require(fixture.sqlite)
        let other = try SQLiteStore(dataDirectory: fixture.directory.path)
        defer { other.close() }
        let now = Int64(time(nil)), key = "/uploads k", fingerprint: [UInt8] = [1, 2, 3], ann = Owner(id: 1)
        #expect(try other.claimIdempotencyKey(key, fingerprint: fingerprint, owner: ann, now: now) == .claimed)
        #expect(
            try survivor.claimIdempotencyKey(key, fingerprint: fingerprint, owner: ann, now: now + 10) == .running,
            "its claimer lives: the request may still answer")
        other.close()
        #expect(try survivor.claimIdempotencyKey(key, fingerprint: [9], owner: ann, now: now + 10) == .mismatch)
        #expect(
            try survivor.claimIdempotencyKey(key, fingerprint: fingerprint, owner: ann, now: now + 1) == .running,
            "not within the claim's first answerGrace seconds")
        #expect(try survivor.lookUpIdempotencyKey(key, fingerprint: fingerprint, owner: ann, now: now + 1) == .running)
        #expect(try survivor.lookUpIdempotencyKey(key, fingerprint: fingerprint, owner: ann, now: now + 10) == nil, "a lookup finds it free")
        #expect(try survivor.claimIdempotencyKey(key, fingerprint: fingerprint, owner: ann, now: now + 10) == .claimed)
        #expect(
            try survivor.claimIdempotencyKey(key, fingerprint: fingerprint, owner: ann, now: now + 20) == .running,
            "now the survivor's own claim, which lives")

        // A process killed with kill -9 leaves its instance's file, unlocked (the kernel drops
        // the lock), and its claims: one without a write is taken over, one whose write
        // committed (a location) replays a reference to it.
        let instances = fixture.directory.path + "/instances"
        #expect(FileManager.default.createFile(atPath: instances + "/4242", contents: nil))
        let db = try SQLiteConnection(path: survivor.path, flags: SQLiteConnection.readWrite)
        for (claimed, location) in [("/notes a", nil), ("/notes b", "/notes/7")] as [(String, String?)] {
            try db.run(
                """
                INSERT INTO idempotency_keys (owner, key, fingerprint, claimed_at, expires_at, claimer, location)
                VALUES (1, ?, x'010203', ?, ?, 4242, ?)
                """, [.text(claimed), .integer(now), .integer(now + 300), location.map { .text($0) } ?? .null])
        }
        #expect(
            try survivor.claimIdempotencyKey("/notes b", fingerprint: fingerprint, owner: ann, now: now + 10)
                == .replay(.reference(location: "/notes/7")))
        #expect(FileManager.default.fileExists(atPath: instances + "/4242"), "nothing was taken over yet")
        #expect(try survivor.claimIdempotencyKey("/notes a", fingerprint: fingerprint, owner: ann, now: now + 10) == .claimed)
        #expect(!FileManager.default.fileExists(atPath: instances + "/4242"), "the gone instance's file is removed")
        #expect(try db.first("SELECT claimer FROM idempotency_keys WHERE key = '/notes a'") { $0.int64(0) } == survivor.instance.number)
        #expect(try FileManager.default.contentsOfDirectory(atPath: instances) == ["\(survivor.instance.number)"])
    }

    @Test(
        "a keyed note: the claim and a reference answer commit with the note; the key then replays it and nothing more is written",
        arguments: Backend.all)
    func claimedInTheNotesTransaction(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store, ann = Owner(id: 1), now = Int64(Date().timeIntervalSince1970)
        let claim = IdempotencyKeyClaim(key: "/notes k", fingerprint: Self.print, now: now)
        guard case .done(let change) = try StoreWait.wait({ store.createNote(body: "once", owner: ann, claiming: claim, completion: $0) }) else {
            Issue.record("the first keyed create was refused")
            return
        }
        // Until the full answer is stored, the key is running (a racing retry is 409) …
        #expect(try store.claimIdempotencyKey("/notes k", fingerprint: Self.print, owner: ann, now: now + 1) == .running)
        guard case .refused(.running) = try StoreWait.wait({ store.createNote(body: "once", owner: ann, claiming: claim, completion: $0) }) else {
            Issue.record("the same key wrote again")
            return
        }
        // … and a moment later without one (its instance died right after the commit: issue 31
        // item 3, where this waited for the whole 300 s lease and every retry got 409), it
        // replays as a reference to the note: never a second note, and a release cannot free it.
        try StoreWait.wait { store.releaseIdempotencyKey("/notes k", owner: ann, completion: $0) }
        let later = now + IdempotencyLimits.answerGrace
        let reference = IdempotentAnswer.reference(location: "/notes/\(change.note.id)")
        #expect(try store.claimIdempotencyKey("/notes k", fingerprint: Self.print, owner: ann, now: later) == .replay(reference))
        let retried = IdempotencyKeyClaim(key: "/notes k", fingerprint: Self.print, now: later)
        guard
            case .refused(.replay(reference)) = try StoreWait.wait({ store.createNote(body: "once", owner: ann, claiming: retried, completion: $0) })
        else {
            Issue.record("the same key wrote again after the lease")
            return
        }
        let other = IdempotencyKeyClaim(key: "/notes k", fingerprint: [9], now: now)
        guard case .refused(.mismatch) = try StoreWait.wait({ store.createNote(body: "other", owner: ann, claiming: other, completion: $0) }) else {
            Issue.record("another body under the same key was not a mismatch")
            return
        }
        #expect(try store.notes(NoteQuery(), owner: ann).map(\.id) == [change.note.id])
        // The full answer replaces the reference.
        let full = Self.answer(10, location: "/notes/\(change.note.id)")
        try Self.complete(store, "/notes k", full, owner: ann, now: now + 2)
        #expect(try store.claimIdempotencyKey("/notes k", fingerprint: Self.print, owner: ann, now: now + 3) == .replay(full))
        // A key held by a request still running refuses the keyed write.
        #expect(try store.claimIdempotencyKey("/notes held", fingerprint: Self.print, owner: ann, now: now) == .claimed)
        let held = IdempotencyKeyClaim(key: "/notes held", fingerprint: Self.print, now: now)
        guard case .refused(.running) = try StoreWait.wait({ store.createNote(body: "x", owner: ann, claiming: held, completion: $0) }) else {
            Issue.record("a held key did not refuse the write")
            return
        }
        #expect(try store.notes(NoteQuery(), owner: ann).count == 1)
    }

    @Test(
        "a keyed edit: the claim and a reference commit with the merge; a retry after a crash before the answer replays it, never merges again",
        arguments: Backend.all)
    func claimedInTheEditsTransaction(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store, ann = Owner(id: 1), now = Int64(Date().timeIntervalSince1970)
        let note = try StoreWait.wait { store.createNote(body: "milk\nbread\n", owner: ann, completion: $0) }.note
        _ = try StoreWait.wait { store.updateNote(id: note.id, body: "oat milk\nbread\n", ifVersion: nil, owner: ann, completion: $0) }
        let key = "/notes/\(note.id) edit"
        func edit(_ claim: IdempotencyKeyClaim, ifVersion: Int64? = nil) throws -> KeyedOutcome<NoteWriteOutcome> {
            try StoreWait.wait {
                store.editNote(
                    id: note.id, base: 1, body: "milk\nbread\njam\n", ifVersion: ifVersion, owner: ann,
                    claiming: claim, completion: $0)
            }
        }
        // A write refused by its precondition leaves the key free (only successes are kept).
        guard case .done(.versionMismatch) = try edit(IdempotencyKeyClaim(key: key, fingerprint: Self.print, now: now), ifVersion: 1) else {
            Issue.record("a stale If-Match was not refused")
            return
        }
        guard case .done(.done(let merged)) = try edit(IdempotencyKeyClaim(key: key, fingerprint: Self.print, now: now)) else {
            Issue.record("the keyed merge was refused")
            return
        }
        #expect(merged.note.body == "oat milk\nbread\njam\n" && merged.note.version == 3)
        // The server dies here, before the full answer is stored. The retry finds the key
        // running for a moment, then a reference to the note: never a second merge.
        let reference = IdempotentAnswer.reference(location: "/notes/\(note.id)")
        guard case .refused(.running) = try edit(IdempotencyKeyClaim(key: key, fingerprint: Self.print, now: now + 1)) else {
            Issue.record("the retry ran while the first was answering")
            return
        }
        let later = now + IdempotencyLimits.answerGrace
        guard case .refused(.replay(reference)) = try edit(IdempotencyKeyClaim(key: key, fingerprint: Self.print, now: later)) else {
            Issue.record("the retry after the crash merged again")
            return
        }
        #expect(try store.note(id: note.id, owner: ann)?.version == 3)
        #expect(try store.revisions(noteID: note.id, before: nil, limit: 10, owner: ann, inTrash: false)?.map(\.version) == [3, 2, 1])
    }

    @Test(
        "answers expire after 24 h and unanswered claims after their lease: both are swept and the key is free again",
        arguments: Backend.all)
    func expiry(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store, ann = Owner(id: 1)
        #expect(try store.claimIdempotencyKey("done", fingerprint: Self.print, owner: ann, now: 1000) == .claimed)
        try Self.complete(store, "done", Self.answer(10), owner: ann, now: 1000)
        #expect(try store.claimIdempotencyKey("stuck", fingerprint: Self.print, owner: ann, now: 1000) == .claimed)
        #expect(try store.claimIdempotencyKey("stuck", fingerprint: Self.print, owner: ann, now: 1000 + IdempotencyLimits.lease - 1) == .running)
        #expect(try store.claimIdempotencyKey("stuck", fingerprint: Self.print, owner: ann, now: 1000 + IdempotencyLimits.lease) == .claimed)
        let later = 1000 + IdempotencyLimits.lifetime
        #expect(try store.claimIdempotencyKey("done", fingerprint: Self.print, owner: ann, now: later - 1) == .replay(Self.answer(10)))
        #expect(try store.claimIdempotencyKey("other", fingerprint: Self.print, owner: ann, now: later) == .claimed)
        // The sweep of that claim removed the expired answer: the key is free.
        #expect(try store.claimIdempotencyKey("done", fingerprint: [9], owner: ann, now: later) == .claimed)
    }

    @Test(
        "an owner's answers stay within their byte budget: large and older answers are kept as references (no body), those without a Location go",
        arguments: Backend.all)
    func budget(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store, ann = Owner(id: 1), bob = Owner(id: 2)
        // Over the per-answer bound: kept without the body.
        #expect(try store.claimIdempotencyKey("big", fingerprint: Self.print, owner: ann, now: 1000) == .claimed)
        try Self.complete(store, "big", Self.answer(IdempotencyLimits.maxAnswerBytes), owner: ann, now: 1000)
        guard case .replay(let big) = try store.claimIdempotencyKey("big", fingerprint: Self.print, owner: ann, now: 1001) else {
            Issue.record("no replay"); return
        }
        #expect(big.body == nil && big.location == "/notes/1" && big.status == 201)
        // Without a Location a large answer cannot be a reference: the key is released.
        #expect(try store.claimIdempotencyKey("big-anonymous", fingerprint: Self.print, owner: ann, now: 1000) == .claimed)
        try Self.complete(store, "big-anonymous", Self.answer(IdempotencyLimits.maxAnswerBytes, location: nil), owner: ann, now: 1000)
        #expect(try store.claimIdempotencyKey("big-anonymous", fingerprint: Self.print, owner: ann, now: 1001) == .claimed)
        // 40 answers of 60 KiB (2.4 MiB) for a budget of 1 MiB: the newest are whole, the oldest references.
        let size = 60 * 1024
        for index in 0..<40 {
            #expect(try store.claimIdempotencyKey("n\(index)", fingerprint: Self.print, owner: ann, now: 2000 + Int64(index)) == .claimed)
            try Self.complete(
                store, "n\(index)", Self.answer(size, location: index % 2 == 0 ? "/notes/\(index)" : nil), owner: ann,
                now: 2000 + Int64(index))
        }
        var whole = 0, references = 0, gone = 0
        for index in 0..<40 {
            switch try store.claimIdempotencyKey("n\(index)", fingerprint: Self.print, owner: ann, now: 3000) {
            case .replay(let answer) where answer.body != nil: whole += 1
            case .replay: references += 1
            default: gone += 1
            }
        }
        #expect(whole * size <= Int(IdempotencyLimits.maxBytesPerOwner) && whole >= 15)
        #expect(references >= 10 && gone >= 10, "whole \(whole), references \(references), gone \(gone)")
        if case .replay(let newest) = try store.claimIdempotencyKey("n39", fingerprint: Self.print, owner: ann, now: 3000) {
            #expect(newest.body?.count == size)
        } else {
            Issue.record("the newest answer was not kept")
        }
        // Another owner's budget is their own.
        #expect(try store.claimIdempotencyKey("n0", fingerprint: Self.print, owner: bob, now: 3000) == .claimed)
    }
}
