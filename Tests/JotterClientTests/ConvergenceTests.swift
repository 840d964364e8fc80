import Foundation
import Glibc
import Testing
import JotterTestSupport
import JotterAPI
@testable import JotterClient

/// SplitMix64: a small seeded generator, so a seed replays the same schedule (no Foundation random).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A number in `0..<bound` (bound > 0).
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// The convergence harness (issue 33): K clients, each a `NotesSyncEngine` with its own replica
/// file, against one real `jotter serve` process on SQLite. A seeded schedule edits, creates,
/// deletes, restores from the trash, takes clients offline and back, and interrupts syncs; then
/// every client syncs until quiet and the checker asserts convergence, no lost edit and no
/// duplicate creation. `JOTTER_CONVERGE_SEED`, `_ROUNDS`, `_CLIENTS` set a run (`make converge`).
@Suite("JotterClient: convergence of several sync engines")
struct ConvergenceTests {
    struct Settings {
        var seed: UInt64
        var rounds: Int
        var clients: Int

        static func fromEnvironment(seed: UInt64, rounds: Int, clients: Int) -> Settings {
            let env = ProcessInfo.processInfo.environment
            return Settings(seed: env["JOTTER_CONVERGE_SEED"].flatMap { UInt64($0) } ?? seed,
                            rounds: env["JOTTER_CONVERGE_ROUNDS"].flatMap { Int($0) } ?? rounds,
                            clients: env["JOTTER_CONVERGE_CLIENTS"].flatMap { Int($0) } ?? clients)
        }
    }

    @Test("K engines with a seeded schedule of edits, offline spells and interrupted syncs converge, losing and duplicating nothing",
          .timeLimit(.minutes(10)))
    func converge() async throws {
        let settings = Settings.fromEnvironment(seed: 33, rounds: 120, clients: 4)
        let run = try ConvergenceRun(settings: settings)
        defer { run.finish() }
        let failures = try await run.run()
        if !failures.isEmpty {
            let report = run.report(failures: failures)
            print(report)
            Issue.record(Comment(rawValue: report))
        }
    }
}

/// One run: the server, the clients, the schedule, the history and the checker.
final class ConvergenceRun: @unchecked Sendable {
    struct Client {
        var engine: NotesSyncEngine
        let file: URL
        var online = true
    }

    let settings: ConvergenceTests.Settings
    let server: ServerProcess
    let folder: URL
    let baseURL: URL
    var random: SplitMix64
    var clients: [Client] = []
    var history: [String] = []
    /// Every token inserted, with its client, in insertion order.
    var tokens: [(token: String, client: Int)] = []
    /// Tokens a client removed having seen them (a span deleted, a note deleted).
    var removed: [String: Int] = [:]
    var nextToken = 0
    var creates = 0
    /// Creations dropped before they were sent (certainly), and those maybe sent (attempts > 0).
    var cancelledSure = 0
    var cancelledMaybe = 0
    var kills = 0

    init(settings: ConvergenceTests.Settings) throws {
        self.settings = settings
        random = SplitMix64(seed: settings.seed)
        server = try ServerProcess(["--quiet"])
        baseURL = URL(string: "http://127.0.0.1:\(server.port)")!
        folder = try scratchFolder()
        for index in 0..<settings.clients {
            let file = folder.appendingPathComponent("client\(index).sqlite")
            clients.append(Client(engine: try NotesSyncEngine(client: JotterClient(baseURL: baseURL), file: file), file: file))
        }
    }

    func finish() {
        server.signal(SIGTERM)
        _ = server.finish()
        try? FileManager.default.removeItem(at: folder)
    }

    func log(_ line: String) { history.append("\(history.count): \(line)") }

    func report(failures: [String]) -> String {
        """
        Convergence FAILED — seed \(settings.seed), \(settings.rounds) rounds, \(settings.clients) clients \
        (replay: make converge SEED=\(settings.seed) ROUNDS=\(settings.rounds) CLIENTS=\(settings.clients))
        Failures:
        \(failures.map { "  - " + $0 }.joined(separator: "\n"))
        History:
        \(history.map { "  " + $0 }.joined(separator: "\n"))
        """
    }

    // MARK: The schedule

    func run() async throws -> [String] {
        print("converge: seed \(settings.seed), \(settings.rounds) rounds, \(settings.clients) clients")
        for _ in 0..<settings.rounds {
            let index = random.below(clients.count)
            let roll = random.below(100)
            switch roll {
            case 0..<35: try await insert(index)
            case 35..<47: try await deleteSpan(index)
            case 47..<57: try await create(index)
            case 57..<62: try await deleteNote(index)
            case 62..<66: try await restore(index)
            case 66..<82: await sync(index, "sync")
            case 82..<88:
                if clients[index].online { clients[index].online = false; log("c\(index) goes offline") }
                else { clients[index].online = true; log("c\(index) comes back"); await sync(index, "sync on return") }
            default: try await kill(index)
            }
        }
        try await settle()
        return try await check()
    }

    /// The replica's notes in an order that depends on their text, not on ids or clocks.
    func notes(_ index: Int) async throws -> [LocalNote] {
        try await clients[index].engine.notes().sorted { ($0.body, $0.id) < ($1.body, $1.id) }
    }

    func newToken(_ index: Int) -> String {
        nextToken += 1
        let token = "<c\(index)-\(nextToken)>"
        tokens.append((token, index))
        return token
    }

    /// Where a token's line may go or a span may start or end: the start of every line, and the end.
    /// (One token a line: two clients' insertions at one place are an overlap of those lines only;
    /// on one long line an overlap would keep both sides' whole line, doubling the note.)
    static func boundaries(_ text: [Character]) -> [Int] {
        var result = [0]
        for (offset, character) in text.enumerated() where character == "\n" { result.append(offset + 1) }
        if result.last != text.count { result.append(text.count) }
        return result
    }

    static func tokens(in text: some StringProtocol) -> [String] {
        var found: [String] = []
        var current: String?
        for character in text {
            if character == "<" { current = "<" } else if current != nil {
                current!.append(character)
                if character == ">" { found.append(current!); current = nil }
            }
        }
        return found
    }

    func insert(_ index: Int) async throws {
        let notes = try await notes(index)
        guard !notes.isEmpty else { return try await create(index) }
        let note = notes[random.below(notes.count)]
        var text = Array(note.body)
        let spots = Self.boundaries(text)
        let at = spots[random.below(spots.count)]
        let token = newToken(index)
        text.insert(contentsOf: token + "\n", at: at)
        _ = try await clients[index].engine.edit(note.id, body: String(text))
        log("c\(index) inserts \(token) at \(at) of \(note.id) v\(note.version)")
    }

    func deleteSpan(_ index: Int) async throws {
        let notes = try await notes(index)
        guard !notes.isEmpty else { return }
        let note = notes[random.below(notes.count)]
        var text = Array(note.body)
        let spots = Self.boundaries(text)
        guard spots.count >= 2 else { return }
        let first = random.below(spots.count - 1)
        let last = min(spots.count - 1, first + 1 + random.below(3))
        let span = spots[first]..<spots[last]
        let gone = Self.tokens(in: String(text[span]))
        text.removeSubrange(span)
        for token in gone where removed[token] == nil { removed[token] = index }
        _ = try await clients[index].engine.edit(note.id, body: String(text))
        log("c\(index) deletes \(span) of \(note.id) v\(note.version): \(gone.joined())")
    }

    func create(_ index: Int) async throws {
        let token = newToken(index)
        let note = try await clients[index].engine.create(token + "\n")
        creates += 1
        log("c\(index) creates \(note.id) with \(token)")
    }

    func deleteNote(_ index: Int) async throws {
        let notes = try await notes(index)
        guard !notes.isEmpty else { return }
        let note = notes[random.below(notes.count)]
        if note.isLocalOnly {
            let pending = try await clients[index].engine.pendingEdits().first { $0.noteID == note.id && $0.kind == .create }
            if let pending, pending.attempts > 0 { cancelledMaybe += 1 } else { cancelledSure += 1 }
        }
        for token in Self.tokens(in: note.body) where removed[token] == nil { removed[token] = index }
        try await clients[index].engine.delete(note.id)
        log("c\(index) deletes note \(note.id) v\(note.version)")
    }

    func restore(_ index: Int) async throws {
        guard clients[index].online else { return }
        let client = await clients[index].engine.client
        let trash = try await client.notes.allTrash().sorted { ($0.note.body, $0.id) < ($1.note.body, $1.id) }
        guard !trash.isEmpty else { return }
        let pick = trash[random.below(trash.count)]
        do {
            let note = try await client.notes.restore(pick.id)
            log("c\(index) restores \(pick.id) from the trash: v\(note.version)")
        } catch {
            log("c\(index) restores \(pick.id) from the trash: \(error)")
        }
    }

    func sync(_ index: Int, _ what: String) async {
        guard clients[index].online else { return }
        do {
            try await clients[index].engine.sync()
            log("c\(index) \(what)")
        } catch {
            log("c\(index) \(what): \(error.message)")
        }
    }

    /// Interrupts a sync at a random point (the task cancelled after 0–20 ms, an answer maybe
    /// lost), drops the engine and opens a new one on the same file. Not a process kill: the
    /// old sync is waited for before the new engine is used, so two never share the file.
    func kill(_ index: Int) async throws {
        guard clients[index].online else { return }
        kills += 1
        let engine = clients[index].engine
        let delay = random.below(21)
        let task = Task { try await engine.sync() }
        try? await Task.sleep(for: .milliseconds(delay))
        task.cancel()
        let result = await task.result
        clients[index].engine = try NotesSyncEngine(client: JotterClient(baseURL: baseURL), file: clients[index].file)
        let pending = try await clients[index].engine.pendingEdits().count
        log("c\(index) killed mid-sync after \(delay) ms (\(result.isSuccess ? "sync ended" : "sync interrupted")), reopened with \(pending) pending")
    }

    // MARK: Settling and checking

    func serverNotes() async throws -> [Note] {
        var notes: [Note] = []
        for try await note in JotterClient(baseURL: baseURL).notes.all(order: .oldestFirst) { notes.append(note) }
        return notes
    }

    /// Every client online, then passes of one sync each until a pass changes nothing.
    func settle() async throws {
        log("settle: every client online")
        for index in clients.indices { clients[index].online = true }
        var before = try await serverNotes().map { "\($0.id)@\($0.version)" }
        for pass in 1...10 {
            var pending = 0
            for index in clients.indices {
                pending += try await clients[index].engine.state.pending
                await sync(index, "settle pass \(pass)")
            }
            let after = try await serverNotes().map { "\($0.id)@\($0.version)" }
            if pending == 0 && after == before { return }
            before = after
        }
        log("settle: not quiet after 10 passes")
    }

    func check() async throws -> [String] {
        var failures: [String] = []
        let server = try await serverNotes()
        let trash = try await JotterClient(baseURL: baseURL).notes.allTrash()
        let expected = Dictionary(uniqueKeysWithValues: server.map { ($0.id, $0) })

        // (a) Every replica equals the server: the same live notes, text and version; nothing pending.
        var conflicts = 0
        for index in clients.indices {
            let engine = clients[index].engine
            let state = try await engine.state
            conflicts += state.conflicts.count
            if state.pending != 0 { failures.append("c\(index): \(state.pending) edits still pending") }
            let local = try await engine.notes()
            for note in local {
                guard let there = expected[note.id] else {
                    failures.append("c\(index): \(note.id) v\(note.version) is not a live note of the server: \(note.body.debugDescription)")
                    continue
                }
                if note.body != there.body || note.version != there.version {
                    failures.append("c\(index): \(note.id) is v\(note.version) \(note.body.debugDescription), the server's v\(there.version) \(there.body.debugDescription)")
                }
            }
            let missing = Set(expected.keys).subtracting(local.map(\.id))
            for id in missing.sorted() { failures.append("c\(index): the server's \(id) v\(expected[id]!.version) is missing") }
        }

        // (b) No edit lost: a token no client removed knowingly is in a live note or a note in the trash.
        let everything = server.map(\.body) + trash.map(\.note.body)
        for (token, client) in tokens where removed[token] == nil {
            if !everything.contains(where: { $0.contains(token) }) {
                failures.append("token \(token) of c\(client) is in no note (live or in the trash), and no client deleted it")
            }
        }

        // (c) No duplicate: notes on the server (live and in the trash) = creations sent + conflict copies.
        let count = server.count + trash.count
        let upper = creates - cancelledSure + conflicts
        let lower = upper - cancelledMaybe
        if count < lower || count > upper {
            failures.append("\(count) notes on the server (\(server.count) live, \(trash.count) in the trash); expected \(lower)...\(upper) (\(creates) created, \(cancelledSure)+\(cancelledMaybe) cancelled before sent, \(conflicts) conflict copies)")
        }
        // A token twice in the live notes is reported, not failed: an overlap keeps both sides' text.
        let repeated = tokens.filter { token in server.reduce(0) { $0 + $1.body.components(separatedBy: token.token).count - 1 } > 1 }.count
        print("converge: seed \(settings.seed): \(server.count) live notes, \(trash.count) in the trash, \(tokens.count) tokens, \(removed.count) removed, \(kills) interrupted syncs, \(conflicts) conflict copies, \(repeated) tokens repeated, \(failures.count) failures")
        return failures
    }
}
