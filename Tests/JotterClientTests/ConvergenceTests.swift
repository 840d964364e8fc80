import Foundation
import Glibc
import Synchronization
import Testing
import JotterServerTestSupport
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
/// file, against real `jotter serve` processes: one on SQLite (`ConvergenceTests`), or two on
/// PostgreSQL + S3 behind HAProxy (`ConvergenceHAProxyTests`). A seeded schedule edits, creates,
/// deletes, restores from the trash, takes clients offline and back, interrupts syncs, loses
/// answers, kills a client process mid-send (`kill -9`, then reopens its file) and kills and
/// restarts a server instance; then every client syncs until quiet and the checker asserts
/// convergence, no lost edit, no duplicate creation and instances that agree byte for byte.
/// `JOTTER_CONVERGE_SEED`, `_ROUNDS`, `_CLIENTS` set a run (`make converge`).
@Suite("JotterClient: convergence of several sync engines")
struct ConvergenceTests {
    struct Settings {
        var seed: UInt64
        var rounds: Int
        var clients: Int

        static func fromEnvironment(seed: UInt64, rounds: Int, clients: Int) -> Settings {
            let env = ProcessInfo.processInfo.environment
            return Settings(
                seed: env["JOTTER_CONVERGE_SEED"].flatMap { UInt64($0) } ?? seed,
                rounds: env["JOTTER_CONVERGE_ROUNDS"].flatMap { Int($0) } ?? rounds,
                clients: env["JOTTER_CONVERGE_CLIENTS"].flatMap { Int($0) } ?? clients)
        }
    }

    /// Runs the schedule on `deployment` and records the report of a failed check.
    static func converge(_ settings: Settings, on deployment: ConvergenceRun.Deployment) async throws {
        let run = try ConvergenceRun(settings: settings, deployment: deployment)
        defer { run.finish() }
        let failures: [String]
        do {
            failures = try await run.run()
        } catch {
            failures = ["the run stopped: \(error)"]
        }
        if !failures.isEmpty {
            let report = run.report(failures: failures)
            print(report)
            Issue.record(Comment(rawValue: report))
        }
    }

    @Test(
        "K engines against one SQLite server, with edits, offline spells, interrupted syncs, lost answers and kill -9s of clients and of the server, converge, losing and duplicating nothing",
        .timeLimit(.minutes(10)))
    func converge() async throws {
        try await Self.converge(.fromEnvironment(seed: 33, rounds: 120, clients: 4), on: .sqlite)
    }
}

/// The same schedule against two instances on PostgreSQL + S3 behind HAProxy
/// (contrib/haproxy/jotter.cfg), one of them killed and restarted mid-run; the checker also
/// asks each instance directly for every note and the feed (d). Run alone in the timing pass.
@Suite(
    "JotterClient: convergence through HAProxy and two instances on PostgreSQL and S3", .tags(.timing), .serialized,
    .enabled(if: ScaleOutBackend.unavailable == nil, Comment(rawValue: ScaleOutBackend.unavailable ?? "")))
struct ConvergenceHAProxyTests {
    @Test(
        "K engines against two PostgreSQL + S3 instances behind HAProxy, one killed and restarted, converge, and every instance answers the same bytes",
        .timeLimit(.minutes(10)))
    func converge() async throws {
        try await ConvergenceTests.converge(.fromEnvironment(seed: 33, rounds: 40, clients: 3), on: .haproxy)
    }
}

/// A client of the harness as a process of its own, so that it can be killed with SIGKILL:
/// the harness runs this test bundle again with `--filter ConvergenceChild` and
/// `JOTTER_CONVERGE_CHILD_FILE` (the replica) and `JOTTER_CONVERGE_CHILD_URL` (the server) set;
/// the test then opens the replica and syncs it once. Without them it does nothing.
@Suite("JotterClient: a convergence client process")
struct ConvergenceChild {
    @Test("syncs the replica it is given, when the convergence harness runs it as a client process")
    func syncOnce() async throws {
        let env = ProcessInfo.processInfo.environment
        guard let file = env[ClientProcess.fileVariable], let url = env[ClientProcess.urlVariable].flatMap(URL.init(string:)) else { return }
        let engine = try NotesSyncEngine(client: ConvergenceRun.client(url), file: URL(fileURLWithPath: file))
        do {
            try await engine.sync()
            print("converge child: synced, \(try await engine.state.pending) pending")
        } catch {
            print("converge child: sync failed: \(error.message), \(try await engine.state.pending) pending")
        }
    }
}

/// One run: the servers, the fault proxy, the clients, the schedule, the history and the checker.
final class ConvergenceRun: @unchecked Sendable {
    /// The servers the clients sync with.
    enum Deployment: String {
        /// One `jotter serve` on SQLite, killed and restarted on its data folder and port.
        case sqlite
        /// Two instances on PostgreSQL + S3 behind HAProxy; one is killed and restarted.
        case haproxy
    }

    struct Client {
        var engine: NotesSyncEngine
        let file: URL
        var online = true
    }

    /// An instance down: which, and for how many more rounds.
    struct Outage {
        var instance: Int
        var rounds: Int
    }

    let settings: ConvergenceTests.Settings
    let deployment: Deployment
    let cluster: ScaleOutCluster
    /// Between every client and the server (or HAProxy): loses answers, kills mid-send.
    let proxy: FaultProxy
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
    var lostAnswers = 0
    var processKills = 0
    var serverKills = 0
    var outage: Outage?

    /// A client of the run's servers: the SDK's retries, with shorter waits (a server down for
    /// a few rounds fails a sync in a fraction of a second, not seconds).
    static func client(_ url: URL) -> JotterClient {
        var configuration = JotterClient.Configuration()
        configuration.retry = RetryPolicy(maximumAttempts: 4, initialDelay: 0.05, maximumDelay: 0.2)
        configuration.requestTimeout = 20
        return JotterClient(baseURL: url, configuration: configuration)
    }

    init(settings: ConvergenceTests.Settings, deployment: Deployment) throws {
        self.settings = settings
        self.deployment = deployment
        random = SplitMix64(seed: settings.seed)
        switch deployment {
        case .sqlite: cluster = try ScaleOutCluster(instances: 1, backend: nil, balancer: nil)
        case .haproxy: cluster = try ScaleOutCluster(instances: 2, backend: ScaleOutBackend(), balancer: .haproxy)
        }
        proxy = try FaultProxy(upstream: deployment == .haproxy ? cluster.haproxy.port : cluster.instances[0].port)
        baseURL = URL(string: "http://127.0.0.1:\(proxy.port)")!
        folder = try scratchFolder()
        for index in 0..<settings.clients {
            let file = folder.appendingPathComponent("client\(index).sqlite")
            clients.append(Client(engine: try NotesSyncEngine(client: Self.client(baseURL), file: file), file: file))
        }
    }

    func finish() {
        proxy.stop()
        cluster.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    func log(_ line: String) { history.append("\(history.count): \(line)") }

    /// The seed and what failed, then the history's lines that name a note, token or client
    /// the failures name, with every server kill and restart (all of it when they name none);
    /// the whole history goes to a file.
    func report(failures: [String]) -> String {
        let whole = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-converge-\(settings.seed)-\(deployment).log")
        try? history.joined(separator: "\n").write(to: whole, atomically: true, encoding: .utf8)
        let minimal = Self.minimalHistory(history, failures: failures)
        return """
            Convergence FAILED (\(deployment)) — seed \(settings.seed), \(settings.rounds) rounds, \(settings.clients) clients \
            (replay: make converge SEED=\(settings.seed) ROUNDS=\(settings.rounds) CLIENTS=\(settings.clients))
            Failures:
            \(failures.map { "  - " + $0 }.joined(separator: "\n"))
            History (\(minimal.count) of \(history.count) lines: those naming the failures' notes and tokens, and the servers' kills; all in \(whole.path)):
            \(minimal.map { "  " + $0 }.joined(separator: "\n"))
            """
    }

    /// The lines of `history` that mention a note id (`12`, `local-…`) or a token (`<c1-4>`)
    /// named in `failures`, and the servers' kills and restarts.
    static func minimalHistory(_ history: [String], failures: [String]) -> [String] {
        var names = Set<String>()
        for failure in failures {
            names.formUnion(tokens(in: failure))
            for word in failure.split(whereSeparator: { " :,()\"".contains($0) }) {
                if word.hasPrefix(NotesSyncEngine.localIDPrefix) || (!word.isEmpty && word.allSatisfy(\.isNumber)) { names.insert(String(word)) }
            }
        }
        guard !names.isEmpty else { return history }
        return history.filter { line in
            let text = line.drop { $0 != ":" }
            return text.contains("server") || text.split(whereSeparator: { " :,()<>\"".contains($0) }).contains { names.contains(String($0)) }
                || tokens(in: line).contains { names.contains($0) }
        }
    }

    // MARK: The schedule

    func run() async throws -> [String] {
        print("converge (\(deployment)): seed \(settings.seed), \(settings.rounds) rounds, \(settings.clients) clients")
        for _ in 0..<settings.rounds {
            let index = random.below(clients.count)
            let roll = random.below(100)
            switch roll {
            case 0..<33: try await insert(index)
            case 33..<44: try await deleteSpan(index)
            case 44..<53: try await create(index)
            case 53..<58: try await deleteNote(index)
            case 58..<62: try await restore(index)
            case 62..<75: await sync(index, "sync")
            case 75..<81:
                if clients[index].online {
                    clients[index].online = false; log("c\(index) goes offline")
                } else {
                    clients[index].online = true; log("c\(index) comes back"); await sync(index, "sync on return")
                }
            case 81..<86: try await kill(index)
            case 86..<91: await loseAnswer(index)
            case 91..<96: try await killProcess(index)
            default: try await killServer(index)
            }
            try endOutage(after: 1)
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
            if character == "<" {
                current = "<"
            } else if current != nil {
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
        let trash: [DeletedNote]
        do {
            trash = try await client.notes.allTrash().sorted { ($0.note.body, $0.id) < ($1.note.body, $1.id) }
        } catch {
            return log("c\(index) lists the trash: \(error.message)")
        }
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
        clients[index].engine = try NotesSyncEngine(client: Self.client(baseURL), file: clients[index].file)
        let pending = try await clients[index].engine.pendingEdits().count
        log("c\(index) killed mid-sync after \(delay) ms (\(result.isSuccess ? "sync ended" : "sync interrupted")), reopened with \(pending) pending")
    }

    /// A sync whose first write reaches the server and whose answer never comes back (the
    /// proxy drops it and closes the connection): the client resends it as it would after a
    /// lost connection (the same key; the same base and text).
    func loseAnswer(_ index: Int) async {
        guard clients[index].online else { return }
        proxy.arm(FaultProxy.Fault(at: .answered) {})
        await sync(index, "sync")
        if let struck = proxy.disarm() {
            lostAnswers += 1
            log("c\(index) lost an answer: \(struck)")
        }
    }

    /// `kill -9` of a client process mid-send: an edit is made in the replica (an insertion,
    /// or a creation), then a process of its own syncs the file and is killed at a seeded point
    /// of its first write: before the server has it, once the server answered but before the
    /// answer reaches it, or 0–5 ms after the answer did. The engine reopened on the file must
    /// hold the edit in its outbox or find it on the server; the next syncs send it once.
    func killProcess(_ index: Int) async throws {
        guard clients[index].online, outage == nil || deployment == .haproxy else { return }
        let token: String
        if random.below(3) == 0 {
            token = newToken(index)
            let note = try await clients[index].engine.create(token + "\n")
            creates += 1
            log("c\(index) creates \(note.id) with \(token)")
        } else {
            let notes = try await notes(index)
            guard !notes.isEmpty else { return }
            let note = notes[random.below(notes.count)]
            var text = Array(note.body)
            let spots = Self.boundaries(text)
            let at = spots[random.below(spots.count)]
            token = newToken(index)
            text.insert(contentsOf: token + "\n", at: at)
            _ = try await clients[index].engine.edit(note.id, body: String(text))
            log("c\(index) inserts \(token) at \(at) of \(note.id) v\(note.version)")
        }
        let point: FaultProxy.Point = [.arrived, .answered, .delivered][random.below(3)]
        let delay = point == .delivered ? Double(random.below(6)) / 1000 : 0
        // The process is named to the fault once started; a fault striking before waits for it.
        let victim = Victim()
        proxy.arm(FaultProxy.Fault(at: point, delay: delay) { victim.kill() })
        let child = try ClientProcess(file: clients[index].file, url: baseURL)
        victim.pid.store(child.pid, ordering: .releasing)
        let ended = await child.wait(seconds: 120)
        let struck = proxy.disarm()
        if struck != nil { processKills += 1 }
        guard let ended else {
            child.kill()
            log("c\(index) process \(child.pid) still running after 120 s, killed: \(child.printed.suffix(2000))")
            throw FaultProxy.ProxyError(message: "the client process \(child.pid) did not end within 120 s")
        }
        clients[index].engine = try NotesSyncEngine(client: Self.client(baseURL), file: clients[index].file)
        let pending = try await clients[index].engine.pendingEdits()
        let queued = pending.contains { ($0.body ?? "").contains(token) }
        log(
            "c\(index) process \(child.pid) \(ended), \(struck.map { "killed at " + $0 } ?? "not killed: no write met the fault"); reopened with \(pending.count) pending, \(token) \(queued ? "queued" : "not queued")"
        )
        if !queued {
            let everything = try await serverNotes().map(\.body) + Self.client(baseURL).notes.allTrash().map(\.note.body)
            if !everything.contains(where: { $0.contains(token) }) {
                log("c\(index) FAILED: \(token) is neither in the reopened outbox nor on the server")
                lostOnReopen.append(token)
            }
        }
    }

    /// The client process a fault kills, once it is started.
    final class Victim: Sendable {
        let pid = Atomic<Int32>(0)
        func kill() {
            var pid = self.pid.load(ordering: .acquiring)
            while pid == 0 { usleep(1000); pid = self.pid.load(ordering: .acquiring) }
            Glibc.kill(pid, SIGKILL)
        }
    }

    /// Edits a reopened client lost: in neither its outbox nor the server.
    var lostOnReopen: [String] = []

    /// `kill -9` of a server instance while the client's first write is with it (0–3 ms after
    /// it went on; at once if the sync sends none); it comes back on its data folder and port
    /// 1–6 rounds later. One instance down at a time.
    func killServer(_ index: Int) async throws {
        guard outage == nil, clients[index].online else { return }
        let instance = random.below(cluster.instances.count)
        let delay = Double(random.below(4)) / 1000
        let cluster = cluster
        proxy.arm(FaultProxy.Fault(at: .sent, delay: delay) { cluster.kill(instance) })
        await sync(index, "sync")
        let struck = proxy.disarm()
        if struck == nil { cluster.kill(instance) }
        serverKills += 1
        outage = Outage(instance: instance, rounds: 1 + random.below(6))
        log("server instance \(instance) killed \(struck.map { "during " + $0 } ?? "between requests"), down for \(outage!.rounds) rounds")
    }

    /// Counts `rounds` off the outage; restarts the instance once it is over.
    func endOutage(after rounds: Int) throws {
        guard var down = outage else { return }
        down.rounds -= rounds
        outage = down
        guard down.rounds <= 0 else { return }
        try cluster.restart(down.instance)
        outage = nil
        log("server instance \(down.instance) restarted on its data folder")
    }

    // MARK: Settling and checking

    func serverNotes() async throws -> [Note] {
        var notes: [Note] = []
        for try await note in Self.client(baseURL).notes.all(order: .oldestFirst) { notes.append(note) }
        return notes
    }

    /// Every client online, then passes of one sync each until a pass changes nothing.
    func settle() async throws {
        if let down = outage { try endOutage(after: down.rounds) }
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
        let trash = try await Self.client(baseURL).notes.allTrash()
        let expected = Dictionary(uniqueKeysWithValues: server.map { ($0.id, $0) })

        // (a) Every replica equals the server: the same live notes, text and version; nothing pending.
        var conflicts = 0
        for index in clients.indices {
            let engine = clients[index].engine
            let state = try await engine.state
            // A deletion refused because the note was edited elsewhere copies nothing.
            conflicts += state.conflicts.filter { $0.reason != .editedElsewhere }.count
            if state.pending != 0 { failures.append("c\(index): \(state.pending) edits still pending") }
            let local = try await engine.notes()
            for note in local {
                guard let there = expected[note.id] else {
                    failures.append("c\(index): \(note.id) v\(note.version) is not a live note of the server: \(note.body.debugDescription)")
                    continue
                }
                if note.body != there.body || note.version != there.version {
                    failures.append(
                        "c\(index): \(note.id) is v\(note.version) \(note.body.debugDescription), the server's v\(there.version) \(there.body.debugDescription)"
                    )
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
            failures.append(
                "\(count) notes on the server (\(server.count) live, \(trash.count) in the trash); expected \(lower)...\(upper) (\(creates) created, \(cancelledSure)+\(cancelledMaybe) cancelled before sent, \(conflicts) conflict copies)"
            )
        }
        for token in lostOnReopen {
            failures.append("token \(token): a killed client process's edit was neither in its reopened outbox nor on the server")
        }

        // (d) Every instance, asked directly, answers the same bytes.
        failures += try instancesAgree(ids: server.map(\.id) + trash.map(\.id))

        // A token twice in the live notes is reported, not failed: an overlap keeps both sides' text.
        let repeated = tokens.filter { token in server.reduce(0) { $0 + $1.body.components(separatedBy: token.token).count - 1 } > 1 }.count
        print(
            "converge (\(deployment)): seed \(settings.seed): \(server.count) live notes, \(trash.count) in the trash, \(tokens.count) tokens, \(removed.count) removed, \(kills) interrupted syncs, \(lostAnswers) lost answers, \(processKills) client processes killed, \(serverKills) server kills, \(conflicts) conflict copies, \(repeated) tokens repeated, \(failures.count) failures"
        )
        return failures
    }

    /// (d) Every instance answers `GET /notes/{id}` of every note (live or in the trash), the
    /// trash and the change feed's pages (a walk, and from cursor 0) with the same status and
    /// the same bytes (but a problem's `request_id`). Trivially true of one instance.
    func instancesAgree(ids: [String]) throws -> [String] {
        let ports = cluster.instances.map(\.port)
        guard ports.count > 1 else { return [] }
        var targets = ids.map { "/notes/\($0)" } + ["/notes/trash?limit=1000"]
        for start in ["", "&since=0"] {
            var target = "/notes/changes?limit=20" + start
            for _ in 0..<10_000 {
                targets.append(target)
                let page = try cluster.request(ports[0], "GET", target).json()
                guard page["more"] as? Bool == true, let cursor = page["cursor"] as? Int else { break }
                target = "/notes/changes?limit=20&since=\(cursor)"
            }
        }
        // A problem's `request_id` names the request, so differs: it is left out.
        func bytes(_ answer: WireResponse) -> String {
            answer.text.replacingOccurrences(of: #""request_id":"[^"]*""#, with: #""request_id":"""#, options: .regularExpression)
        }
        var failures: [String] = []
        for target in targets {
            let answers = try ports.map { try cluster.request($0, "GET", target) }
            for (port, answer) in zip(ports, answers).dropFirst() where answer.status != answers[0].status || bytes(answer) != bytes(answers[0]) {
                failures.append(
                    "(d) GET \(target): instance on \(port) answers \(answer.status) \(answer.text.prefix(300).debugDescription), the one on \(ports[0]) \(answers[0].status) \(answers[0].text.prefix(300).debugDescription)"
                )
            }
        }
        log("checked \(targets.count) requests on each of \(ports.count) instances")
        return failures
    }
}
