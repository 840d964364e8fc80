import Foundation
import Testing
import JotterStore
import JotterServerTestSupport

/// `GET /notes` of large notes: a page is cut at a byte budget and `next` continues it, so a
/// list is never built whole in memory.
@Suite("Notes: page byte budget")
struct NotePageBudgetTests {
    @Test("a page of large notes stops at the budget and sets next; following next lists every note once")
    func largeNotesArePaged() throws {
        try TestApp.with { app in
            let body = String(repeating: "a", count: 900_000)
            var created: [String] = []
            for _ in 0..<6 {
                let response = try app.request(
                    "POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: "body=\(body)")
                try #require(response.status == 201, "\(response.text.prefix(200))")
                created.append(try #require((try response.json()["note"] as? [String: Any])?["id"] as? String))
            }
            var target: String? = "/notes?limit=1000"
            var seen: [String] = []
            var pages = 0
            while let next = target {
                let response = try app.request("GET", next)
                try #require(response.status == 200)
                #expect(response.body.count < 5 << 20, "a page of \(response.body.count) bytes")
                let json = try response.json()
                let notes = try #require(json["notes"] as? [[String: Any]])
                seen += notes.compactMap { $0["id"] as? String }
                target = json["next"] as? String
                pages += 1
                #expect(pages < 5)
            }
            #expect(pages == 2)
            #expect(seen == created.reversed())
        }
    }

    @Test(
        "the cut: at least one note, within the limit and the budget",
        arguments: [
            ([10, 10, 10], 5, nil, 3, false), ([10, 10, 10], 2, nil, 2, true), ([10, 10, 10], 5, 25, 2, true),
            ([100, 10], 5, 25, 1, true), ([100], 5, 25, 1, false), ([], 5, 25, 0, false), ([10, 15, 1], 5, 25, 2, true),
        ] as [([Int], Int, Int?, Int, Bool)])
    func cut(_ sizes: [Int], _ limit: Int, _ budget: Int?, _ count: Int, _ more: Bool) {
        let result = NoteQuery.cut(sizes, limit: limit, budget: budget)
        #expect(result.count == count && result.more == more)
    }
}
