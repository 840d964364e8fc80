import Foundation
import JotterServerTestSupport
import JotterStore
import JotterTestSupport
import Synchronization
import Testing
@testable import JotterServer

/// Each user's budget of merge work (`MergeBudget`): counted in the merge's own steps, on a clock
/// the test moves, so nothing here depends on how fast the machine merges.
@Suite("Notes: each user's budget of merge work")
struct MergeBudgetTests {
    static func json(_ body: String, base: Int? = nil) throws -> String {
        var fields: [String: Any] = ["body": body]
        if let base { fields["base_version"] = base }
        return String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
    }

    static let jsonHeaders = [("Content-Type", "application/json")]

    static func text(_ lines: [String]) -> String { lines.joined(separator: "\n") + "\n" }

    /// Three texts whose merge is past its bounds, cheaply (a debug build takes seconds to run
    /// a merge up to the step cap): both sides replaced the text, so the merge keeps both, and
    /// 1.2 MB is past what a note may be (MergeRoutesTests). Refused as a merge past the cap is
    /// (`409 merge-too-large`), it costs what one does: the cap.
    static let pastBounds: (base: String, current: String, incoming: String) = (
        "as it was\n", String(repeating: "a", count: 600_000) + "\n", String(repeating: "b", count: 600_000) + "\n"
    )

    /// A note of `user` at version 2 whose version 1 is `base` and version 2 `current`.
    static func note(_ app: TestApp, token: String, base: String, current: String) throws -> String {
        let created = try app.request("POST", "/notes", token: token, headers: jsonHeaders, body: try json(base))
        try #require(created.status == 201, "\(created.text.prefix(300))")
        let id = try #require(try MergeRoutesTests.note(created)["id"] as? String)
        let updated = try app.request("PUT", "/notes/\(id)", token: token, headers: jsonHeaders, body: try json(current))
        try #require(updated.status == 200, "\(updated.text.prefix(300))")
        return id
    }

    /// A small note (about 4 KiB: 80 lines of a sentence) at version 2, and an edit of version 1
    /// that changes another of its lines than version 2 did.
    static func smallMerge(_ round: Int) -> (base: String, current: String, incoming: String) {
        let lines = (0..<80).map { "line \($0) of a note of a few KiB, as people write them every day." }
        var current = lines, incoming = lines
        current[(round * 7) % 80] = "changed here in round \(round)"
        incoming[(round * 7 + 40) % 80] = "changed elsewhere in round \(round)"
        return (text(lines), text(current), text(incoming))
    }

    @Test(
        "merges past the bounds sent in a loop meet 429 with Retry-After once the budget is spent, storing nothing; another user's writes go on; after the wait a merge goes through",
        arguments: ServerDatabase.all)
    func spentBudget(database: ServerDatabase) throws {
        let clock = SteppedClock()
        let cap = TextMerge.Limits.default.maxWork
        try database.with(configure: {
            $0.auth = .required
            // Two capped merges, refilled by one every 5 s.
            $0.mergeWorkBurst = 2 * cap; $0.mergeWorkPerSecond = cap / 5
            $0.mergeBudgetClock = clock.read
        }) { app in
            try app.addUser("ann")
            try app.addUser("bob")
            let ann = try app.token("ann"), bob = try app.token("bob")
            let (base, current, incoming) = Self.pastBounds
            let id = try Self.note(app, token: ann, base: base, current: current)
            var answers: [Int] = []
            var refused: WireResponse?
            for _ in 0..<4 {
                let response = try app.request("PUT", "/notes/\(id)", token: ann, headers: Self.jsonHeaders, body: try Self.json(incoming, base: 1))
                answers.append(response.status)
                if response.status == 429 {
                    refused = response
                    break
                }
                #expect(try response.json()["type"] as? String == "/problems/merge-too-large")
            }
            // Each costs the cap: two of them spend the budget, the third is refused.
            #expect(answers == [409, 409, 429])
            let spent = try #require(refused)
            #expect(spent.header("Content-Type")?.hasPrefix("application/problem+json") == true)
            #expect(try spent.json()["type"] as? String == "/problems/merge-budget-spent")
            #expect(try spent.json()["status"] as? Int == 429)
            let wait = try #require(Int(spent.header("Retry-After") ?? ""))
            #expect(wait >= 1)
            // Nothing of those writes was stored.
            let shown = try app.request("GET", "/notes/\(id)", token: ann)
            #expect(try MergeRoutesTests.note(shown)["version"] as? Int == 2)
            #expect(try MergeRoutesTests.note(shown)["body"] as? String == current)
            #expect((try app.request("GET", "/notes/\(id)/revisions", token: ann).json()["revisions"] as? [Any])?.count == 2)
            // Her small merge is refused too (before any merge work); her plain writes are not.
            let small = Self.smallMerge(1)
            let hers = try Self.note(app, token: ann, base: small.base, current: small.current)
            let refusedSmall = try app.request(
                "PUT", "/notes/\(hers)", token: ann, headers: Self.jsonHeaders, body: try Self.json(small.incoming, base: 1))
            #expect(refusedSmall.status == 429)
            // So is an edit made from the note's current version: it may be merged all the same
            // (the note can move on before it is written), and concurrent ones would be.
            let fromCurrent = try app.request(
                "PUT", "/notes/\(hers)", token: ann, headers: Self.jsonHeaders, body: try Self.json(small.incoming, base: 2))
            #expect(fromCurrent.status == 429)
            #expect(try app.request("POST", "/notes", token: ann, body: "body=plain").status == 201)

            // Bob's budget is his own: his merges and writes go on meanwhile.
            let his = try Self.note(app, token: bob, base: small.base, current: small.current)
            let merged = try app.request("PUT", "/notes/\(his)", token: bob, headers: Self.jsonHeaders, body: try Self.json(small.incoming, base: 1))
            #expect(merged.status == 200, "\(merged.text.prefix(300))")
            #expect(try merged.json()["merge"] != nil)
            #expect(try app.request("POST", "/notes", token: bob, body: "body=mine").status == 201)

            // After the wait her merge goes through, and merges.
            clock.advance(Double(wait))
            let again = try app.request("PUT", "/notes/\(hers)", token: ann, headers: Self.jsonHeaders, body: try Self.json(small.incoming, base: 1))
            #expect(again.status == 200, "\(again.text.prefix(300))")
            let body = try #require(try MergeRoutesTests.note(again)["body"] as? String)
            #expect(body.contains("changed here in round 1") && body.contains("changed elsewhere in round 1"))
        }
    }

    @Test(
        "small notes merged from an older version many times in a row never meet the budget, even with no time passing",
        arguments: ServerDatabase.all)
    func normalMerges(database: ServerDatabase) throws {
        let clock = SteppedClock()
        // The default figures; the clock stands still, so nothing is refilled.
        try database.with(configure: { $0.mergeBudgetClock = clock.read }) { app in
            var total = 0
            for round in 0..<150 {
                let (base, current, incoming) = Self.smallMerge(round)
                if round == 0 {
                    #expect(base.utf8.count > 4_000 && base.utf8.count < 8_000)
                }
                total += TextMerge.counted(base: base, current: current, incoming: incoming).work
                let created = try app.request("POST", "/notes", headers: Self.jsonHeaders, body: try Self.json(base))
                let id = try #require(try MergeRoutesTests.note(created)["id"] as? String)
                #expect(try app.request("PUT", "/notes/\(id)", headers: Self.jsonHeaders, body: try Self.json(current)).status == 200)
                let merged = try app.request("PUT", "/notes/\(id)", headers: Self.jsonHeaders, body: try Self.json(incoming, base: 1))
                #expect(merged.status == 200, "round \(round): \(merged.text.prefix(300))")
                #expect(try merged.json()["merge"] != nil)
            }
            // What they cost together is a small part of one capped merge.
            #expect(total < TextMerge.Limits.default.maxWork / 10, "\(total) steps")
            print("MergeBudget: 150 merges of a \(Self.smallMerge(0).base.utf8.count)-byte note took \(total) steps")
        }
    }
}
