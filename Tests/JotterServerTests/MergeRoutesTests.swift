import Dispatch
import Foundation
import JotterServerTestSupport
import JotterStore
import JotterTestSupport
import Synchronization
import Testing
@testable import JotterServer

/// `Base-Version` / `base_version` on `PUT`, `PATCH` and `_method=PUT`: merged in the write,
/// on both databases and across two instances. Assertions hold for any merge that keeps both
/// sides' text (the merge itself has its own tests).
@Suite("Notes: merge against a stale base over HTTP")
struct MergeRoutesTests {
    static func note(_ response: WireResponse) throws -> [String: Any] {
        try #require(try response.json()["note"] as? [String: Any])
    }

    @Test("an edit from an older version is merged: 200 with merge; the revision is marked merged", arguments: ServerDatabase.all)
    func merged(database: ServerDatabase) throws {
        try database.with { app in
            let id = try RevisionRoutesTests.created(app, "milk%0Abread%0A")
            #expect(try app.request("PUT", "/notes/\(id)", body: "body=oat+milk%0Abread%0A").status == 200)

            let put = try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "1")], body: "body=milk%0Abread%0Ajam%0A")
            #expect(put.status == 200, "\(put.text)")
            #expect(put.header("ETag") == "\"3\"")
            let body = try #require(try Self.note(put)["body"] as? String)
            #expect(body.contains("oat milk") && body.contains("jam"))
            let merge = try #require(try put.json()["merge"] as? [String: Any])
            #expect(merge["base"] as? Int == 1)
            #expect(["clean", "overlap"].contains(merge["result"] as? String))
            let regions = try #require(merge["regions"] as? [[String: Any]])
            #expect((merge["result"] as? String == "overlap") == !regions.isEmpty)
            #expect(try put.json()["message"] as? String == "Note Updated")
            let listed = try #require(try app.request("GET", "/notes/\(id)/revisions").json()["revisions"] as? [[String: Any]])
            #expect(listed.map { $0["merged"] as? Bool } == [true, false, false])

            // The same through a form's _method=PUT with base_version, and PATCH with JSON.
            let form = try app.request("POST", "/notes/\(id)", body: "_method=PUT&base_version=2&body=oat+milk%0Abread%0Abutter%0A")
            #expect(form.status == 200, "\(form.text)")
            #expect(try form.json()["merge"] != nil)
            let formBody = try #require(try Self.note(form)["body"] as? String)
            #expect(formBody.contains("jam") && formBody.contains("butter"))
            let patch = try app.request(
                "PATCH", "/notes/\(id)", headers: [("Content-Type", "application/json")],
                body: #"{"body":"milk\nbread\ntea\n","base_version":1}"#)
            #expect(patch.status == 200, "\(patch.text)")
            #expect((try Self.note(patch)["body"] as? String)?.contains("tea") == true)
            #expect(try Self.note(patch)["version"] as? Int == 5)

            // The current version: a plain update, no merge reported.
            let plain = try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "5")], body: "body=fresh")
            #expect(plain.status == 200)
            #expect(try plain.json()["merge"] == nil)
            #expect(try Self.note(plain)["body"] as? String == "fresh")
        }
    }

    @Test(
        "an edit sent again with its Idempotency-Key after a lost answer is answered as the first time, not merged twice",
        arguments: ServerDatabase.all)
    func resentEdit(database: ServerDatabase) throws {
        try database.with { app in
            let id = try RevisionRoutesTests.created(app, "milk%0Abread%0A")
            #expect(try app.request("PUT", "/notes/\(id)", body: "body=oat+milk%0Abread%0A").status == 200)
            let edit: [(String, String)] = [("Base-Version", "1"), ("Idempotency-Key", "edit-1")]
            let first = try app.request("PUT", "/notes/\(id)", headers: edit, body: "body=milk%0Abread%0Ajam%0A")
            #expect(first.status == 200, "\(first.text)")
            #expect(first.header("Idempotent-Replayed") == nil)
            #expect(try first.json()["merge"] != nil)
            // Someone else edits meanwhile; then the answer is "lost" and the edit goes again.
            #expect(
                try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "3")], body: "body=oat+milk%0Abread%0Ajam%0Atea%0A").status == 200)
            let again = try app.request("PUT", "/notes/\(id)", headers: edit, body: "body=milk%0Abread%0Ajam%0A")
            #expect(again.status == 200, "\(again.text)")
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(again.text == first.text)
            let now = try Self.note(try app.request("GET", "/notes/\(id)"))
            #expect(now["version"] as? Int == 4)
            #expect(now["body"] as? String == "oat milk\nbread\njam\ntea\n")
            // The same key with another text, or from another version, is another request: 422.
            #expect(try app.request("PUT", "/notes/\(id)", headers: edit, body: "body=milk%0Abread%0Ahoney%0A").status == 422)
            #expect(
                try app.request(
                    "PUT", "/notes/\(id)", headers: [("Base-Version", "2"), ("Idempotency-Key", "edit-1")],
                    body: "body=milk%0Abread%0Ajam%0A"
                ).status == 422)
            // PATCH with JSON the same; a key on another note's path is another key.
            let json: [(String, String)] = [("Content-Type", "application/json"), ("Idempotency-Key", "edit-2")]
            let patch = try app.request("PATCH", "/notes/\(id)", headers: json, body: #"{"body":"milk\nbread\nrice\n","base_version":1}"#)
            #expect(patch.status == 200, "\(patch.text)")
            let patchAgain = try app.request("PATCH", "/notes/\(id)", headers: json, body: #"{"body":"milk\nbread\nrice\n","base_version":1}"#)
            #expect(patchAgain.header("Idempotent-Replayed") == "true")
            let patched = try Self.note(try app.request("GET", "/notes/\(id)"))
            #expect(patched["version"] as? Int == 5)
            #expect((patched["body"] as? String)?.components(separatedBy: "rice").count == 2)
        }
    }

    @Test(
        "a conditional edit sent again with its Idempotency-Key after a lost answer gets that answer, not 412",
        arguments: ServerDatabase.all)
    func resentConditionalEdit(database: ServerDatabase) throws {
        try database.with { app in
            let id = try RevisionRoutesTests.created(app, "one")
            let edit: [(String, String)] = [("If-Match", "\"1\""), ("Idempotency-Key", "cond-1")]
            let first = try app.request("PUT", "/notes/\(id)", headers: edit, body: "body=two")
            #expect(first.status == 200, "\(first.text)")
            // The answer is lost; the client sends the same request again: its If-Match no longer
            // holds (the edit itself moved the note on), but the key says it is the same edit.
            let again = try app.request("PUT", "/notes/\(id)", headers: edit, body: "body=two")
            #expect(again.status == 200, "\(again.text)")
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(again.text == first.text)
            #expect(again.header("ETag") == "\"2\"")
            // Another text under that key is another request (422); a stale If-Match with a new
            // key, or none, is still 412, and leaves the key free.
            #expect(try app.request("PUT", "/notes/\(id)", headers: edit, body: "body=three").status == 422)
            let stale: [(String, String)] = [("If-Match", "\"1\""), ("Idempotency-Key", "cond-2")]
            #expect(try app.request("PUT", "/notes/\(id)", headers: stale, body: "body=three").status == 412)
            #expect(try app.request("PUT", "/notes/\(id)", headers: [("If-Match", "\"1\"")], body: "body=three").status == 412)
            let fresh: [(String, String)] = [("If-Match", "\"2\""), ("Idempotency-Key", "cond-2")]
            let later = try app.request("PUT", "/notes/\(id)", headers: fresh, body: "body=three")
            #expect(later.status == 200, "\(later.text)")
            #expect(later.header("Idempotent-Replayed") == nil)
            #expect(try Self.note(try app.request("GET", "/notes/\(id)"))["version"] as? Int == 3)
        }
    }

    @Test(
        "a merge whose text would be past 1 MiB (both sides kept) is 409 merge-too-large; nothing changed",
        arguments: ServerDatabase.all)
    func mergedTextPastTheLimit(database: ServerDatabase) throws {
        func text(_ letter: String) -> String { String(repeating: letter, count: 600_000) + "\n" }
        func json(_ body: String, base: Int? = nil) throws -> String {
            var fields: [String: Any] = ["body": body]
            if let base { fields["base_version"] = base }
            return String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        }
        let jsonHeaders = [("Content-Type", "application/json")]
        try database.with { app in
            let created = try app.request("POST", "/notes", headers: jsonHeaders, body: try json("as it was\n"))
            #expect(created.status == 201)
            let id = try #require(try Self.note(created)["id"] as? String)
            let current = text("a")
            #expect(try app.request("PUT", "/notes/\(id)", headers: jsonHeaders, body: try json(current)).status == 200)
            // Both sides replaced the text: merged, both kept, the note would be 1.2 MB, past what
            // any edit may be, and no edit of it could be merged again.
            let refused = try app.request("PUT", "/notes/\(id)", headers: jsonHeaders, body: try json(text("b"), base: 1))
            #expect(refused.status == 409, "\(refused.text.prefix(300))")
            #expect(try refused.json()["type"] as? String == "/problems/merge-too-large")
            #expect(try Self.note(refused)["version"] as? Int == 2)
            let shown = try Self.note(try app.request("GET", "/notes/\(id)"))
            #expect(shown["version"] as? Int == 2 && shown["body"] as? String == current)
        }
    }

    @Test(
        "a stale conditional edit with a key claims nothing: its 412 writes nothing, the key stays free even where keys cannot be deleted; a running key is 409",
        arguments: ServerDatabase.all)
    func staleConditionalEditClaimsNothing(database: ServerDatabase) throws {
        // The 412 path once claimed the key and released it again: two commits, and where the
        // release failed the key stayed "running" for its 300 s lease, so the edit made right
        // was refused 409. On PostgreSQL a trigger that refuses every deletion of a key makes
        // such a release fail; SQLite's writer runs with triggers off, so there the count of its
        // writes says that the 412 wrote nothing.
        let backend = database == .postgres ? try SharedBackend() : nil
        try TestApp.with(configure: { backend?.configure(&$0) }) { app in
            let id = try RevisionRoutesTests.created(app, "one")
            #expect(try app.request("PUT", "/notes/\(id)", headers: [("If-Match", "\"1\"")], body: "body=two").status == 200)
            if let backend {
                let refuse = """
                    CREATE FUNCTION keys_kept() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'keys are kept'; END $$;
                    CREATE TRIGGER keys_kept BEFORE DELETE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION keys_kept();
                    """
                let result = try runProgram(["psql", "-qtAX", "-v", "ON_ERROR_STOP=1", backend.databaseURL, "-c", refuse])
                try #require(result.status == 0, "\(result.output)")
            }
            let sqlite = app.app.notes as? SQLiteStore
            let writes = sqlite?.statistics.writes
            let stale = try app.request("PUT", "/notes/\(id)", headers: [("If-Match", "\"1\""), ("Idempotency-Key", "late-1")], body: "body=three")
            #expect(stale.status == 412, "\(stale.text)")
            if let sqlite { #expect(sqlite.statistics.writes == writes, "the 412 wrote nothing") }
            // A key another request holds, still running: 409, as for any claim that is not free.
            let path = "/notes/\(id)"
            let held = try app.app.notes.claimIdempotencyKey(
                "\(path) late-2", fingerprint: Secret.digest("\(path)\nbody=four"), owner: .unclaimed, now: Int64(Date().timeIntervalSince1970))
            #expect(held == .claimed)
            let running = try app.request("PUT", path, headers: [("If-Match", "\"1\""), ("Idempotency-Key", "late-2")], body: "body=four")
            #expect(running.status == 409, "\(running.text)")
            #expect(running.header("Retry-After") == "1")
            let right = try app.request("PUT", "/notes/\(id)", headers: [("If-Match", "\"2\""), ("Idempotency-Key", "late-1")], body: "body=three")
            #expect(right.status == 200, "\(right.text)")
            #expect(right.header("Idempotent-Replayed") == nil)
            #expect(try Self.note(try app.request("GET", "/notes/\(id)"))["body"] as? String == "three")
        }
    }

    @Test("base unknown is 409 with the current note; If-Match still 412; malformed bases refused", arguments: ServerDatabase.all)
    func refused(database: ServerDatabase) throws {
        try database.with { app in
            let id = try RevisionRoutesTests.created(app, "one")
            #expect(try app.request("PUT", "/notes/\(id)", body: "body=two").status == 200)

            let unknown = try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "7")], body: "body=mine")
            #expect(unknown.status == 409, "\(unknown.text)")
            #expect(unknown.header("Content-Type") == "application/problem+json")
            #expect(try unknown.json()["type"] as? String == "/problems/unknown-base")
            #expect(try Self.note(unknown)["body"] as? String == "two")
            #expect(try Self.note(unknown)["version"] as? Int == 2)
            #expect(unknown.header("ETag") == "\"2\"")

            let stale = try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "1"), ("If-Match", "\"1\"")], body: "body=mine")
            #expect(stale.status == 412)
            #expect(try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "two")], body: "body=mine").status == 400)
            // At most 18 digits (docs/API.md): 19 are refused, as are 20 with leading zeros.
            #expect(try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "999999999999999999")], body: "body=mine").status == 409)
            for digits in ["1234567890123456789", "00000000000000000001"] {
                #expect(try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", digits)], body: "body=mine").status == 400)
            }
            // A version is written as the ETag writes it: no sign, no leading zero (`01` is not 1).
            for text in ["01", "02", "+2", "-2", "2.0", "0x2", "2 2", "0", ""] {
                let refused = try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", text)], body: "body=mine")
                #expect(refused.status == 400, "\(text): \(refused.text)")
                #expect(refused.header("Content-Type") == "application/problem+json")
                #expect((try? refused.json()["detail"] as? String)?.contains("Base-Version") == true, "\(refused.text)")
            }
            #expect(try app.request("PUT", "/notes/\(id)", body: "body=mine&base_version=0").status == 422)
            // Past 2^53 - 1 (what a JSON number holds exactly): refused, in a form and in JSON, even
            // with nothing to merge; up to it, a version that names nothing kept (409).
            #expect(try app.request("PUT", "/notes/\(id)", body: "base_version=9007199254740992").status == 422)
            #expect(
                try app.request(
                    "PUT", "/notes/\(id)", headers: [("Content-Type", "application/json")],
                    body: #"{"body":"mine","base_version":9007199254740994}"#
                ).status == 422)
            #expect(
                try app.request(
                    "PUT", "/notes/\(id)", headers: [("Content-Type", "application/json")],
                    body: #"{"body":"mine","base_version":9007199254740991}"#
                ).status == 409)
            // A malformed header is refused even when the field is given.
            #expect(try app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "{}")], body: "body=mine&base_version=1").status == 400)
            let shown = try Self.note(try app.request("GET", "/notes/\(id)"))
            #expect(shown["body"] as? String == "two" && shown["version"] as? Int == 2)
        }
    }

    @Test(
        "two instances on one PostgreSQL merge edits made from one version at once: none is lost",
        .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
    func twoInstances() throws {
        let backend = try SharedBackend()
        try TestApp.with(configure: backend.configure) { first in
            try TestApp.with(configure: backend.configure) { second in
                let id = try RevisionRoutesTests.created(first, "list%0A")
                let writers = 8
                let statuses = Mutex<[Int]>([])
                DispatchQueue.concurrentPerform(iterations: writers) { index in
                    let app = index % 2 == 0 ? first : second
                    let status =
                        (try? app.request("PUT", "/notes/\(id)", headers: [("Base-Version", "1")], body: "body=list%0Aitem+\(index)%0A").status) ?? 0
                    statuses.withLock { $0.append(status) }
                }
                #expect(statuses.withLock { $0 } == Array(repeating: 200, count: writers))
                for app in [first, second] {
                    let note = try Self.note(try app.request("GET", "/notes/\(id)"))
                    #expect(note["version"] as? Int == 1 + writers)
                    let body = try #require(note["body"] as? String)
                    for index in 0..<writers { #expect(body.contains("item \(index)"), "writer \(index)'s edit is missing") }
                }
            }
        }
    }
}
