import Foundation
import Glibc
import Synchronization
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// Durability and conflict safety of `/notes` (issue 3, Tests): acknowledged writes survive a
/// `kill -9` of the real binary, and concurrent `If-Match` updates never lose one another.
@Suite("Notes durability and conflict safety", .tags(.timing), .serialized)
struct NotesDurabilityTests {

    // MARK: - Crash test

    /// Cycles of: start the binary on the same data folder, check everything acknowledged so
    /// far, run a write load, `kill -9` it while writes are in flight, and look at the file it
    /// left with the sqlite3 tool (read-only) before the next start recovers it.
    ///
    /// What each check catches:
    /// - an acknowledged note missing, or with an older version than acknowledged: a write
    ///   acknowledged before its COMMIT returned (or a commit that never reached the file);
    /// - a stored version more than one above the acknowledged one, a body that was never sent,
    ///   a note nobody tried to create, or one created twice: phantom, torn or repeated writes;
    /// - `PRAGMA integrity_check` other than `ok`: a file damaged by the crash;
    /// - a new note whose id is not above every id seen before: ids reused after a restart;
    /// - what the restarted server serves differing from the file: recovery through the server;
    /// - an acknowledged write not read back at once (`CrashWriter.readBack`): an acknowledgement
    ///   sent before COMMIT returned.
    ///
    /// A `kill -9` ends the process, not the machine: the page cache survives it, so this cannot
    /// tell `synchronous=FULL` from NORMAL or OFF (that needs a power cut), and it catches an
    /// acknowledgement sent before the commit only when the commit had not yet been written
    /// into the WAL at the kill (checked: acknowledging 3 ms before COMMIT loses acknowledged
    /// notes in the first cycle).
    @Test("kill -9 under a write load: every acknowledged write survives, the file is sound, ids never go back")
    func crashUnderWriteLoad() throws {
        let sqlite = try #require(Self.sqlite3Tool(), "the sqlite3 command-line tool is needed (apt-get install sqlite3)")
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }

        let cycles = 3
        let threadCount = 8
        let writers = (0..<threadCount).map { CrashWriter(slot: $0) }
        var highestID = 0  // every id acknowledged or found in the file so far

        for cycle in 0..<cycles {
            let server = try ServerProcess(["--quiet"], dataDirectory: data)
            // Whatever was found in the file after the last crash is what the server serves.
            let served = try Self.checkServed(writers.flatMap(\.notes), port: server.port)
            #expect(served.isEmpty, "cycle \(cycle): after restart, the server serves otherwise than the file: \(served.prefix(5))")

            // The load: each thread its own connection and its own notes.
            let idFloor = highestID
            let loadDeadline = Date().addingTimeInterval(5)  // only if the kill never comes
            let killAfter = Int.random(in: 200...600)
            let group = DispatchGroup()
            for writer in writers {
                group.enter()
                let thread = Thread {
                    writer.run(cycle: cycle, port: server.port, idsAbove: idFloor, until: loadDeadline)
                    group.leave()
                }
                thread.start()
            }
            // The kill delay starts once writes are flowing (the server says so), so that a slow
            // start on a loaded machine still leaves acknowledged writes to check.
            Self.waitForCreates(atLeast: threadCount, port: server.port, until: Date().addingTimeInterval(10))
            usleep(useconds_t(killAfter * 1000))
            let killed = server.signal(SIGKILL)
            #expect(group.wait(timeout: .now() + 30) == .success, "cycle \(cycle): writer threads did not stop after the kill")
            let (status, log) = server.finish()
            #expect(killed, "cycle \(cycle): the server was no longer running when it was to be killed; it wrote: \(log)")
            #expect(
                server.terminationReason == .uncaughtSignal && status == SIGKILL,
                "cycle \(cycle): the server ended with \(server.terminationReason) \(status), not by kill -9; it wrote: \(log)")

            let acknowledged = writers.reduce(0) { $0 + $1.acknowledgedCreates + $1.acknowledgedUpdates }
            let creates = writers.reduce(0) { $0 + $1.acknowledgedCreates }
            let inFlight = writers.reduce(0) { total, writer in
                total + (writer.pendingCreate != nil ? 1 : 0) + writer.notes.count(where: { note in note.pending != nil })
            }
            for writer in writers {
                for problem in writer.problems { Issue.record("cycle \(cycle): \(problem)") }
            }
            // Otherwise the kill found no write to interrupt and the cycle proves little.
            #expect(creates > 0 && acknowledged >= threadCount, "cycle \(cycle): only \(acknowledged) writes acknowledged before the kill")
            #expect(inFlight > 0, "cycle \(cycle): no write was in flight when the server was killed")

            // The file as the crash left it: sound, and holding every acknowledged write.
            #expect(try Self.integrityCheck(sqlite, data) == "ok", "cycle \(cycle): integrity_check after kill -9")
            let rows = try Self.storedNotes(sqlite, data)
            let (mismatches, inFlightCommitted) = Self.reconcile(writers, with: rows)
            #expect(
                mismatches.isEmpty,
                "cycle \(cycle): the file after kill -9 differs from what was acknowledged:\n\(mismatches.prefix(20).joined(separator: "\n"))")
            highestID = max(highestID, rows.keys.max() ?? 0, writers.flatMap(\.notes).map(\.id).max() ?? 0)

            let perThread = writers.map { "\($0.acknowledgedCreates)+\($0.acknowledgedUpdates)" }.joined(separator: " ")
            print(
                "NotesDurabilityTests crash cycle \(cycle): killed after \(killAfter) ms; acknowledged \(acknowledged) writes"
                    + " (\(creates) creates, \(acknowledged - creates) updates; per thread creates+updates \(perThread));"
                    + " \(inFlight) in flight at the kill, \(inFlightCommitted) of them in the file; \(rows.count) notes in the file; integrity ok")
        }

        // A last clean start: it serves all of it, a new note goes above every id seen, and a
        // SIGTERM leaves a sound file.
        let server = try ServerProcess(["--quiet"], dataDirectory: data)
        let served = try Self.checkServed(writers.flatMap(\.notes), port: server.port)
        #expect(served.isEmpty, "after the last restart, the server serves otherwise than the file: \(served.prefix(5))")
        let created = try RawHTTP(port: server.port).request(
            "POST", "/notes", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("body=after-the-crashes".utf8), close: true)
        #expect(created.status == 201)
        let newID = try Self.note(in: created)?.id ?? 0
        #expect(newID > highestID, "a note created after the restarts got id \(newID), not above \(highestID)")
        server.signal(SIGTERM)
        let (status, log) = server.finish()
        #expect(status == 0, "stopping with SIGTERM: \(log)")
        #expect(try Self.integrityCheck(sqlite, data) == "ok", "integrity_check after a clean stop")
        #expect(try Self.storedNotes(sqlite, data).count == writers.reduce(0) { $0 + $1.notes.count } + 1)
    }

    // MARK: - Lost-update test

    /// Many clients increment a counter kept in one note: GET it, PUT value+1 with `If-Match`,
    /// retry on 412. With conflict safety the final value is the number of successful PUTs.
    ///
    /// What each check catches:
    /// - final body below the successes: an `If-Match` checked only outside the write
    ///   transaction (check-then-write race), so two PUTs read from the same version both
    ///   succeed and one overwrites the other (with the store's recheck disabled: final body
    ///   ~90 after 200 successes);
    /// - a success answering other than version+1 and value+1, or successes whose versions are
    ///   not exactly 2…N+1: the write applied to something other than what the client saw, or a
    ///   version not moved on by a change;
    /// - a GET whose body is not its version − 1: a 412 that still changed the note, or a version
    ///   bumped without the body (or the reverse);
    /// - no 412 at all: the test raced nothing, so it proved nothing.
    @Test("concurrent If-Match increments on one note lose no update")
    func noLostUpdates() throws {
        let app = try TestApp()
        defer { app.stop() }
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        let created = try app.request("POST", "/notes", headers: form, body: "body=0")
        try #require(created.status == 201, "\(created.raw)")
        let start = try #require(try Self.note(in: created))
        #expect(start.body == "0" && start.version == 1)
        let target = "/notes/\(start.id)"

        let clients = 8
        let successesPerClient = 25
        let counters = (0..<clients).map { _ in IncrementClient() }
        let group = DispatchGroup()
        for client in counters {
            group.enter()
            let thread = Thread {
                client.run(port: app.port, target: target, successes: successesPerClient)
                group.leave()
            }
            thread.start()
        }
        try #require(group.wait(timeout: .now() + 120) == .success, "the clients did not finish in 120 s")

        for (index, client) in counters.enumerated() {
            for problem in client.problems.prefix(10) { Issue.record("client \(index): \(problem)") }
        }
        let successes = counters.reduce(0) { $0 + $1.versions.count }
        let conflicts = counters.reduce(0) { $0 + $1.conflicts }
        #expect(successes == clients * successesPerClient)

        let final = try app.request("GET", target)
        try #require(final.status == 200)
        let note = try #require(try Self.note(in: final))
        #expect(note.body == String(successes), "the counter says \(note.body) after \(successes) successful increments")
        #expect(note.version == successes + 1)
        #expect(final.header("ETag") == "\"\(successes + 1)\"")
        // Each success moved the note exactly one version on.
        let versions = counters.flatMap(\.versions).sorted()
        #expect(
            versions == Array(2...(successes + 1)),
            "successful PUTs answered versions other than 2…\(successes + 1); repeated: \(Self.duplicates(in: versions))")
        #expect(conflicts > 0, "no 412 in \(successes) concurrent updates: there was no contention to test")
        print(
            "NotesDurabilityTests lost-update: \(clients) clients, \(successes) successful increments, \(conflicts) answered 412"
                + " (per client: \(counters.map { String($0.conflicts) }.joined(separator: " "))); final body \(note.body), version \(note.version)")
    }

    // MARK: - Helpers

    struct WireNote {
        var id: Int
        var body: String
        var version: Int
    }

    /// The `note` of a single-note response.
    static func note(in response: WireResponse) throws -> WireNote? {
        guard let note = try response.json()["note"] as? [String: Any],
            let idText = note["id"] as? String, let id = Int(idText),
            let body = note["body"] as? String, let version = note["version"] as? Int
        else { return nil }
        return WireNote(id: id, body: body, version: version)
    }

    static func duplicates(in sorted: [Int]) -> [Int] {
        zip(sorted, sorted.dropFirst()).filter { $0 == $1 }.map(\.0)
    }

    /// The sqlite3 command-line tool, if installed.
    static func sqlite3Tool() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("sqlite3") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Runs one statement with the sqlite3 tool on `<data>/jotter.sqlite`, read-only (so it
    /// neither recovers nor checkpoints anything into the file: the next server start does).
    static func sqlite(_ tool: URL, _ data: URL, json: Bool = false, _ sql: String) throws -> String {
        let run = try runProgram(
            [tool.path, "-readonly", "-bail"] + (json ? ["-json"] : []) + [data.appendingPathComponent("jotter.sqlite").path, sql],
            separateErrors: true)
        guard run.status == 0 else { throw RawHTTP.Failure(message: "sqlite3 \(sql): exit \(run.status): \(run.errors)") }
        return run.output
    }

    /// Waits until the server's metrics count `atLeast` notes created since it started.
    static func waitForCreates(atLeast count: Int, port: Int, until deadline: Date) {
        let line = #"jotter_http_requests_total{method="POST",route="/notes",status="201"} "#
        while Date() < deadline {
            if let text = try? RawHTTP(port: port, timeout: 2).request("GET", "/metrics", close: true).text,
                let found = text.split(separator: "\n").first(where: { $0.hasPrefix(line) }),
                let created = Int(found.dropFirst(line.count)), created >= count
            {
                return
            }
            usleep(10_000)
        }
    }

    static func integrityCheck(_ tool: URL, _ data: URL) throws -> String {
        try sqlite(tool, data, "PRAGMA integrity_check").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Every row of `notes` in the file: id → (version, body).
    static func storedNotes(_ tool: URL, _ data: URL) throws -> [Int: (version: Int, body: String)] {
        let text = try sqlite(tool, data, json: true, "SELECT id, version, body FROM notes ORDER BY id")
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return [:] }  // no rows: no output
        guard let rows = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] else {
            throw RawHTTP.Failure(message: "sqlite3 -json gave \(text.prefix(200))")
        }
        var notes: [Int: (version: Int, body: String)] = [:]
        for row in rows {
            guard let id = row["id"] as? Int, let version = row["version"] as? Int, let body = row["body"] as? String else {
                throw RawHTTP.Failure(message: "unexpected row \(row)")
            }
            notes[id] = (version, body)
        }
        return notes
    }

    /// Compares the file with what the writers know, and brings their knowledge up to the file:
    /// a write in flight at the kill may or may not have been committed, nothing else may differ.
    /// Returns what is wrong.
    static func reconcile(_ writers: [CrashWriter], with rows: [Int: (version: Int, body: String)])
        -> (problems: [String], inFlightCommitted: Int)
    {
        var problems: [String] = []
        var inFlightCommitted = 0
        var explained = Set<Int>()
        for writer in writers {
            for index in writer.notes.indices {
                var known = writer.notes[index]
                defer { known.pending = nil; writer.notes[index] = known }
                explained.insert(known.id)
                guard let row = rows[known.id] else {
                    problems.append("note \(known.id) ('\(known.body)', version \(known.version)) was acknowledged but is gone")
                    continue
                }
                if row.version == known.version && row.body == known.body { continue }
                if let pending = known.pending, row.version == pending.version, row.body == pending.body {
                    known.version = pending.version  // the update in flight made it: fine either way
                    known.body = pending.body
                    inFlightCommitted += 1
                    continue
                }
                problems.append(
                    "note \(known.id): acknowledged version \(known.version) '\(known.body)'"
                        + (known.pending.map { " (in flight: version \($0.version) '\($0.body)')" } ?? "")
                        + ", stored version \(row.version) '\(row.body)'")
            }
        }
        // Notes the writers never saw acknowledged: only a create in flight at the kill, once.
        var inFlightCreates = Dictionary(uniqueKeysWithValues: writers.compactMap { writer in writer.pendingCreate.map { ($0, writer) } })
        for (id, row) in rows.sorted(by: { $0.key < $1.key }) where !explained.contains(id) {
            if row.version == 1, let writer = inFlightCreates.removeValue(forKey: row.body) {
                writer.notes.append(CrashWriter.KnownNote(id: id, version: 1, body: row.body))
                inFlightCommitted += 1
            } else {
                problems.append("note \(id) (version \(row.version) '\(row.body)') is in the file but was never created or was created twice")
            }
        }
        for writer in writers { writer.pendingCreate = nil }
        return (problems, inFlightCommitted)
    }

    /// GETs every note over one connection; returns the differences from what is known.
    static func checkServed(_ notes: [CrashWriter.KnownNote], port: Int) throws -> [String] {
        let client = try RawHTTP(port: port)
        var problems: [String] = []
        for known in notes {
            let response = try client.request("GET", "/notes/\(known.id)")
            guard response.status == 200, let note = try Self.note(in: response) else {
                problems.append("GET /notes/\(known.id): \(response.status) \(response.text)")
                continue
            }
            if note.version != known.version || note.body != known.body || response.header("ETag") != "\"\(known.version)\"" {
                problems.append(
                    "note \(known.id): served version \(note.version) '\(note.body)' ETag \(response.header("ETag") ?? "none"),"
                        + " known version \(known.version) '\(known.body)'")
            }
        }
        return problems
    }
}

/// One writer thread of the crash test and everything it knows: its notes (from every cycle),
/// with the highest acknowledged version, and the write it had in flight when the server died.
/// Used by one thread at a time: its load thread during a cycle, the test between cycles
/// (the `DispatchGroup` wait orders the two).
final class CrashWriter: @unchecked Sendable {
    struct KnownNote {
        var id: Int
        var version: Int
        var body: String
        /// An update sent but not answered: it may or may not have been committed.
        var pending: (version: Int, body: String)?
    }

    let slot: Int
    var notes: [KnownNote] = []
    /// The body of a create sent but not answered.
    var pendingCreate: String?
    var acknowledgedCreates = 0
    var acknowledgedUpdates = 0
    var problems: [String] = []

    init(slot: Int) { self.slot = slot }

    /// Writes until the connection fails (the kill) or `deadline`: mostly creates, one write in
    /// four an `If-Match` update of one of its own notes. Records only answered writes as
    /// acknowledged; anything but the expected answer is a problem.
    func run(cycle: Int, port: Int, idsAbove floor: Int, until deadline: Date) {
        acknowledgedCreates = 0
        acknowledgedUpdates = 0
        problems = []
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        let client: RawHTTP
        do { client = try RawHTTP(port: port) } catch { problems.append("connect: \(error)"); return }
        var sequence = 0
        while Date() < deadline {
            sequence += 1
            let name = "cycle\(cycle)-thread\(slot)-n\(sequence)"
            if !notes.isEmpty && Int.random(in: 0..<4) == 0 {
                let index = Int.random(in: notes.indices)
                let known = notes[index]
                let body = "\(name)-v\(known.version + 1)"
                notes[index].pending = (known.version + 1, body)
                let response: WireResponse
                do {
                    response = try client.request(
                        "PUT", "/notes/\(known.id)", headers: form + [("If-Match", "\"\(known.version)\"")],
                        body: Array("body=\(body)".utf8))
                } catch { return }  // the server is gone: not acknowledged
                guard response.status == 200, let note = try? NotesDurabilityTests.note(in: response) else {
                    problems.append("PUT /notes/\(known.id) If-Match \(known.version): \(response.status) \(response.text)")
                    return
                }
                guard note.id == known.id, note.version == known.version + 1, note.body == body,
                    response.header("ETag") == "\"\(note.version)\""
                else {
                    problems.append(
                        "PUT /notes/\(known.id) answered \(note) with ETag \(response.header("ETag") ?? "none"), sent '\(body)' on version \(known.version)"
                    )
                    return
                }
                notes[index] = KnownNote(id: note.id, version: note.version, body: note.body)
                acknowledgedUpdates += 1
                guard readBack(notes[index], client) else { return }
            } else {
                pendingCreate = name
                let response: WireResponse
                do {
                    response = try client.request("POST", "/notes", headers: form, body: Array("body=\(name)".utf8))
                } catch { return }
                guard response.status == 201, let note = try? NotesDurabilityTests.note(in: response) else {
                    problems.append("POST /notes: \(response.status) \(response.text)")
                    return
                }
                pendingCreate = nil
                guard note.body == name, note.version == 1 else {
                    problems.append("POST /notes '\(name)' answered \(note)")
                    return
                }
                if note.id <= floor {
                    problems.append("cycle \(cycle): new note got id \(note.id), not above \(floor), the highest id before this start")
                }
                notes.append(KnownNote(id: note.id, version: 1, body: name))
                acknowledgedCreates += 1
                guard readBack(notes[notes.count - 1], client) else { return }
            }
        }
    }
}

extension CrashWriter {
    /// One acknowledged write in eight is read straight back: acknowledged means committed, so
    /// any reader sees it at once (a `kill -9` can only catch an acknowledgement that went out
    /// before the commit reached the file; this also catches one that merely went out before
    /// COMMIT returned). False when the server is gone or the read differs (a problem).
    func readBack(_ known: KnownNote, _ client: RawHTTP) -> Bool {
        guard Int.random(in: 0..<8) == 0 else { return true }
        guard let response = try? client.request("GET", "/notes/\(known.id)") else { return false }
        guard response.status == 200, let note = try? NotesDurabilityTests.note(in: response),
            note.version == known.version, note.body == known.body
        else {
            problems.append(
                "GET /notes/\(known.id) right after version \(known.version) '\(known.body)' was acknowledged: \(response.status) \(response.text)")
            return false
        }
        return true
    }
}

/// One client of the lost-update test: GET, PUT value+1 with `If-Match`, retry on 412.
/// Used by its thread, then read by the test after the `DispatchGroup` wait.
final class IncrementClient: @unchecked Sendable {
    /// The version each successful PUT answered.
    var versions: [Int] = []
    var conflicts = 0
    var problems: [String] = []

    func run(port: Int, target: String, successes: Int) {
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        do {
            let client = try RawHTTP(port: port)
            var attempts = 0
            while versions.count < successes {
                attempts += 1
                guard attempts <= 100 * successes else { problems.append("gave up after \(attempts - 1) attempts"); return }
                let current = try client.request("GET", target)
                guard current.status == 200, let note = try NotesDurabilityTests.note(in: current), let value = Int(note.body),
                    let etag = current.header("ETag")
                else {
                    problems.append("GET \(target): \(current.status) \(current.text)")
                    return
                }
                if etag != "\"\(note.version)\"" { problems.append("GET: ETag \(etag) for version \(note.version)") }
                if value != note.version - 1 {
                    problems.append("GET: body \(value) at version \(note.version): an update was lost or a 412 changed the note")
                }

                let update = try client.request("PUT", target, headers: form + [("If-Match", etag)], body: Array("body=\(value + 1)".utf8))
                switch update.status {
                case 200:
                    guard let updated = try NotesDurabilityTests.note(in: update) else {
                        problems.append("PUT 200 without a note: \(update.text)")
                        return
                    }
                    if updated.version != note.version + 1 || updated.body != String(value + 1) || update.header("ETag") != "\"\(updated.version)\"" {
                        problems.append(
                            "PUT If-Match \(etag) body=\(value + 1) answered version \(updated.version) '\(updated.body)' ETag \(update.header("ETag") ?? "none")"
                        )
                    }
                    versions.append(updated.version)
                case 412:
                    conflicts += 1
                    let now = update.header("ETag").flatMap { Int($0.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) }
                    if now == nil || now! <= note.version {
                        problems.append("412 for If-Match \(etag) names ETag \(update.header("ETag") ?? "none"), not a newer version")
                    }
                default:
                    problems.append("PUT If-Match \(etag): \(update.status) \(update.text)")
                    return
                }
            }
        } catch {
            problems.append("\(error)")
        }
    }
}
