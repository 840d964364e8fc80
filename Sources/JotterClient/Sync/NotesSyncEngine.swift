import Foundation
import Synchronization
import JotterAPI

/// The signed-in user's notes, kept in a SQLite file on this device, readable and editable with
/// no network, and synced with the server when `sync()` is called.
///
/// Every local edit is written, in one SQLite transaction, to the replica and to a durable
/// outbox before anything is sent: a process killed at any point, even mid-send, finds its
/// edits in the file when it opens it again. `sync()` pushes the outbox in order — an edit with
/// the version it was made from (`Base-Version`, so the server merges it with what others
/// wrote meanwhile), a creation with an `Idempotency-Key` kept with it (a resend after a lost
/// answer creates nothing twice) — then pulls `GET /notes/changes` from the stored cursor.
/// Transient failures are retried by the client's `RetryPolicy`; the app sees only `state`.
///
/// An edit the server can't merge (its base no longer kept, the merge too large, the note in
/// the trash or gone) is never lost: the user's text becomes a note of its own, recorded as a
/// `SyncConflict`, and the original note takes the server's state.
///
/// ```swift
/// let file = FileManager.default.temporaryDirectory.appendingPathComponent("notes.sqlite")
/// let engine = try NotesSyncEngine(client: client, file: file)
/// let draft = try await engine.create("Buy milk")               // works offline
/// try await engine.edit(draft.id, body: "Buy oat milk")
/// try? await engine.sync()                                      // when the network is back
/// for note in try await engine.notes() { print(note.id, note.body) }
/// ```
public actor NotesSyncEngine {
    /// What the engine tells the app as it happens.
    public enum Update: Sendable, Hashable {
        /// Notes changed in the replica (a local edit, or one pulled from the server).
        case notesChanged(Set<String>)
        /// A note created here got its server id (edits queued on it follow).
        case idAssigned(local: String, server: String)
        /// The sync state changed.
        case state(SyncState)
    }

    /// The prefix of a local note's temporary id.
    public static let localIDPrefix = "local-"

    /// The client it syncs through (its token is the signed-in user).
    public let client: JotterClient
    /// The replica's SQLite file.
    public let file: URL
    private let database: ReplicaDatabase
    private let broadcaster = Broadcaster()
    /// The notes per page of `GET /notes/changes`.
    let pageSize: Int
    /// Seconds a sync pass (`sync()`) may go without progress before it gives up: see `init`.
    public nonisolated let syncTimeout: Double
    /// When the running pass last made progress (an answer: the user, an edit; bytes of a page);
    /// set from the transfer's thread as bytes arrive.
    private nonisolated let lastProgress = Mutex(ContinuousClock.now)
    private var running: Task<Void, any Error>?
    private var syncing = false
    private var needsAttention: JotterClientError?
    private var lastError: JotterClientError?
    /// Wakes a running `follow()` after a local edit.
    private var localEdits: AsyncStream<Void>.Continuation?
    /// The client token whose user `checkUser()` found to be the replica's (`.some(nil)`: no token).
    private var checkedToken: String??
    /// Whether that user was the anonymous one.
    private var checkedAnonymous = false

    /// Opens the replica at `file`, creating it (and its tables) when it does not exist.
    ///
    /// `syncTimeout` bounds how long a sync pass may go without progress — no answer to the
    /// user check or to an edit sent (retries included), no byte of the pull's page — 30 s, as
    /// the web app gives up a request: a server that accepts connections but never answers held
    /// `sync()` for the client's `requestTimeout` times its retries (4 minutes by default).
    /// Past it the pass stops as a timed-out transport failure (`lastError`, `isOffline`),
    /// every edit not yet answered still queued; a long pull that keeps making progress (pages
    /// arriving, or a large page's bytes on a slow link) is not cut.
    ///
    /// ```swift
    /// let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
    /// ```
    ///
    /// One engine per file: two engines, in one process or two (an app and its extension), on
    /// one file each push and pull on their own; keep one, or give each its own file.
    public init(client: JotterClient, file: URL, pageSize: Int = 500, syncTimeout: Double = 30) throws(JotterClientError) {
        self.client = client
        self.file = file
        self.pageSize = pageSize
        self.syncTimeout = syncTimeout
        let database = try ReplicaDatabase(path: file.path)
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS notes(
                id TEXT PRIMARY KEY, body TEXT NOT NULL, version INTEGER NOT NULL,
                created_at REAL NOT NULL, updated_at REAL NOT NULL, deleted INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE IF NOT EXISTS outbox(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, note_id TEXT NOT NULL, kind TEXT NOT NULL, body TEXT,
                base_version INTEGER, idempotency_key TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                refused_status INTEGER, refused_message TEXT, refused_problem TEXT);
            CREATE INDEX IF NOT EXISTS outbox_note ON outbox(note_id);
            CREATE TABLE IF NOT EXISTS merges(
                note_id TEXT PRIMARY KEY, version INTEGER NOT NULL, base INTEGER NOT NULL, result TEXT NOT NULL,
                regions TEXT NOT NULL, at REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS conflicts(
                id INTEGER PRIMARY KEY AUTOINCREMENT, note_id TEXT NOT NULL, copy_id TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            """)
        // A file made before edits could be refused for good: their columns added.
        if try !database.rows("PRAGMA table_info(outbox)").contains(where: { $0[1].text == "refused_status" }) {
            try database.execute("ALTER TABLE outbox ADD COLUMN refused_status INTEGER; ALTER TABLE outbox ADD COLUMN refused_message TEXT;")
        }
        // And before a refusal kept the server's problem details.
        if try !database.rows("PRAGMA table_info(outbox)").contains(where: { $0[1].text == "refused_problem" }) {
            try database.execute("ALTER TABLE outbox ADD COLUMN refused_problem TEXT;")
        }
        let state = try Self.readState(database, syncing: false, needsAttention: nil, lastError: nil)
        self.database = database
        broadcaster.setState(state)
    }

    // MARK: Reading

    /// Every note of the replica (deleted ones excepted), last changed first.
    public func notes() throws(JotterClientError) -> [LocalNote] {
        try database.rows(
            """
            SELECT id, body, version, created_at, updated_at, EXISTS(SELECT 1 FROM outbox WHERE outbox.note_id = notes.id)
            FROM notes WHERE deleted = 0 ORDER BY updated_at DESC, id DESC
            """
        ).map(Self.localNote)
    }

    /// The note with this id, `nil` when there is none (or it was deleted).
    public func note(_ id: String) throws(JotterClientError) -> LocalNote? {
        try database.rows(
            """
            SELECT id, body, version, created_at, updated_at, EXISTS(SELECT 1 FROM outbox WHERE outbox.note_id = notes.id)
            FROM notes WHERE id = ? AND deleted = 0
            """, [.text(id)]
        ).first.map(Self.localNote)
    }

    /// Where the sync stands: pending edits, last sync, merges, conflicts, errors.
    public var state: SyncState {
        get throws(JotterClientError) { try makeState() }
    }

    /// The outbox, in the order it will be sent.
    public func pendingEdits() throws(JotterClientError) -> [PendingEdit] {
        try database.rows("SELECT \(Self.outboxColumns) FROM outbox ORDER BY seq").map(Self.pendingEdit)
    }

    /// The engine's updates from now on: first the current state, then every change of the
    /// notes, every id assigned and every change of the state, until the task iterating ends.
    ///
    /// ```swift
    /// for await update in engine.updates() {
    ///     if case .state(let state) = update { print("\(state.pending) changes waiting") }
    /// }
    /// ```
    public nonisolated func updates() -> AsyncStream<Update> {
        broadcaster.subscribe()
    }

    // MARK: Editing (no network)

    /// Creates a note here; it is sent by the next `sync()` and has a local id until then.
    @discardableResult
    public func create(_ body: String) throws(JotterClientError) -> LocalNote {
        let id = Self.localIDPrefix + UUID().uuidString.lowercased()
        let now = Date().timeIntervalSince1970
        try database.transaction { () throws(JotterClientError) in
            try database.rows(
                "INSERT INTO notes(id, body, version, created_at, updated_at) VALUES (?, ?, 0, ?, ?)",
                [.text(id), .text(body), .real(now), .real(now)])
            try database.rows(
                "INSERT INTO outbox(note_id, kind, body, idempotency_key) VALUES (?, 'create', ?, ?)",
                [.text(id), .text(body), .text(UUID().uuidString)])
        }
        localEdits?.yield()
        try changed([id])
        guard let created = try note(id) else { throw .localFile("the new note \(id) was not stored") }
        return created
    }

    /// Replaces a note's text here; sent by the next `sync()` with the version it was made from.
    /// An edit of a note whose queued write the server refused for good (`PendingEdit.refusedStatus`:
    /// too large, invalid) replaces that write's text: the next `sync()` sends it again.
    @discardableResult
    public func edit(_ id: String, body: String) throws(JotterClientError) -> LocalNote {
        try database.transaction { () throws(JotterClientError) in
            guard let version = try database.scalar("SELECT version FROM notes WHERE id = ? AND deleted = 0", [.text(id)])?.integer else {
                throw Self.noSuchNote(id)
            }
            try database.rows(
                "UPDATE notes SET body = ?, updated_at = ? WHERE id = ?", [.text(body), .real(Date().timeIntervalSince1970), .text(id)])
            // The note's last queued write, if it was never sent (or only refused for good, the
            // server keeping nothing), carries the new text; one that may have reached the server
            // stays as it was sent (a resend must be the same request).
            if let last = try database.rows("SELECT seq, kind, attempts FROM outbox WHERE note_id = ? ORDER BY seq DESC LIMIT 1", [.text(id)]).first,
                last[1].text != "delete", last[2].integer == 0
            {
                try database.rows(
                    "UPDATE outbox SET body = ?, refused_status = NULL, refused_message = NULL, refused_problem = NULL WHERE seq = ?",
                    [.text(body), last[0]])
            } else {
                // Made from the version the local text descends from; none yet while the creation is unanswered.
                try database.rows(
                    "INSERT INTO outbox(note_id, kind, body, base_version, idempotency_key) VALUES (?, 'update', ?, ?, ?)",
                    [.text(id), .text(body), version > 0 ? .integer(version) : .null, .text(UUID().uuidString)])
            }
        }
        localEdits?.yield()
        try changed([id])
        guard let edited = try note(id) else { throw Self.noSuchNote(id) }
        return edited
    }

    /// Deletes a note here (the server moves it to its trash on the next `sync()`, if it is
    /// still the version deleted here: `If-Match`). A note changed elsewhere meanwhile is not
    /// deleted: it comes back with the other edit, recorded as a `SyncConflict` (`.editedElsewhere`).
    /// A note whose creation the server never took (not sent, or refused for good) just goes.
    public func delete(_ id: String) throws(JotterClientError) {
        try database.transaction { () throws(JotterClientError) in
            guard let version = try database.scalar("SELECT version FROM notes WHERE id = ? AND deleted = 0", [.text(id)])?.integer else {
                throw Self.noSuchNote(id)
            }
            // Unsent edits of a note being deleted need not go; a note the server never saw, nothing.
            try database.rows("DELETE FROM outbox WHERE note_id = ? AND attempts = 0 AND kind = 'update'", [.text(id)])
            let unsentCreation =
                try database.scalar("SELECT 1 FROM outbox WHERE note_id = ? AND kind = 'create' AND attempts = 0", [.text(id)]) != nil
            if unsentCreation {
                try database.rows("DELETE FROM outbox WHERE note_id = ?", [.text(id)])
                try database.rows("DELETE FROM notes WHERE id = ?", [.text(id)])
            } else {
                try database.rows("UPDATE notes SET deleted = 1, updated_at = ? WHERE id = ?", [.real(Date().timeIntervalSince1970), .text(id)])
                // The version deleted (none yet while the creation is unanswered: set by its answer).
                try database.rows(
                    "INSERT INTO outbox(note_id, kind, base_version, idempotency_key) VALUES (?, 'delete', ?, ?)",
                    [.text(id), version > 0 ? .integer(version) : .null, .text(UUID().uuidString)])
            }
        }
        localEdits?.yield()
        try changed([id])
    }

    /// Forgets a merge once the app has shown it (the note keeps its text).
    public func dismissMerge(noteID: String) throws(JotterClientError) {
        try database.rows("DELETE FROM merges WHERE note_id = ?", [.text(noteID)])
        try publishState()
    }

    /// Forgets a conflict record once the app has shown it (both notes stay).
    public func dismissConflict(_ id: Int64) throws(JotterClientError) {
        try database.rows("DELETE FROM conflicts WHERE id = ?", [.integer(id)])
        try publishState()
    }

    // MARK: Syncing

    /// Pushes the outbox, then pulls the server's changes; one sync at a time (a call while one
    /// runs waits for it to end, then syncs again). Throws what stopped it, also kept in
    /// `state` (`lastError` for a failure that trying later fixes, `needsAttention` for one a
    /// person must fix); the edits not yet sent stay in the outbox for the next call.
    public func sync() async throws(JotterClientError) {
        // One running already may have pushed and pulled before what this call must see (an
        // edit just made, an event just received): let it end, then sync again (or join one
        // that started since).
        if let running {
            await Self.endOrCancellation(of: running)
            if Task.isCancelled { throw .cancelled }
        }
        let task: Task<Void, any Error>
        if let running {
            task = running
        } else {
            task = Task { try await self.runSync() }
            running = task
        }
        do {
            try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        } catch {
            throw JotterClientError.wrapping(error, url: nil)
        }
    }

    /// Waits for `task` (another caller's sync: not cancelled here) to end, or for this caller
    /// to be cancelled, whichever comes first: a cancelled `follow()` returns at once.
    private static func endOrCancellation(of task: Task<Void, any Error>) async {
        let ended = OnceContinuation<Void>()
        try? await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                ended.start(continuation)
                Task {
                    _ = await task.result; ended.resume(with: .success(()))
                }
            }
        } onCancel: {
            // Not resumed here, under the task's status lock: from another thread.
            DispatchQueue.global().async { ended.resume(with: .success(())) }
        }
    }

    /// Syncs, then keeps the replica current while the task runs: every event of the server's
    /// event stream (resumed from the stored cursor, the same id space) and every local edit is
    /// followed by a sync. A sync that fails meanwhile is in `state` and the following goes on
    /// (the stream reconnects by itself); returns when the task is cancelled, throws what ends
    /// the stream for good (signed out).
    ///
    /// ```swift
    /// let following = Task { try await engine.follow() }
    /// following.cancel()                                            // going to the background
    /// ```
    public func follow() async throws(JotterClientError) {
        try? await sync()
        let (edits, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        localEdits = continuation
        defer {
            continuation.finish()
            localEdits = nil
        }
        let events = client.notes.events(lastEventID: try cursor)
        let ended: JotterClientError? = await withTaskGroup(of: JotterClientError?.self) { group in
            group.addTask {
                do throws(JotterClientError) {
                    for try await _ in events { try? await self.sync() }
                    return nil
                } catch {
                    return error.isCancelled ? nil : error
                }
            }
            group.addTask {
                for await _ in edits { try? await self.sync() }
                return nil
            }
            // Either ends only when cancelled or on a stream error: then both go.
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let ended {
            if Self.needsPerson(ended) { needsAttention = ended } else { lastError = ended }
            try? publishState()
            throw ended
        }
    }

    private func runSync() async throws(JotterClientError) {
        syncing = true
        try? publishState()
        defer {
            running = nil
            syncing = false
            try? publishState()
        }
        do throws(JotterClientError) {
            let anonymous = try await bounded()
            if anonymous { try database.rows("INSERT OR IGNORE INTO meta(key, value) VALUES ('user', '')") }
            lastError = nil
            try database.rows("INSERT OR REPLACE INTO meta(key, value) VALUES ('last_sync', ?)", [.text(String(Date().timeIntervalSince1970))])
            // Edits refused for good wait for the person; the rest went and came.
            needsAttention = try refusal()
            if let needsAttention { throw needsAttention }
        } catch {
            // A cancelled sync (the app going to the background) is no failure to show.
            if Self.needsPerson(error) { needsAttention = error } else if !error.isCancelled { lastError = error }
            throw error
        }
    }

    /// The pass itself — whose replica, push, pull — given up after `syncTimeout` with no
    /// progress (cancelled: what was not answered stays queued); whether the user is the
    /// anonymous one.
    private func bounded() async throws(JotterClientError) -> Bool {
        let seconds = syncTimeout
        progressed()
        do {
            return try await withThrowingTaskGroup(of: Bool?.self) { group in
                group.addTask {
                    let anonymous = try await self.checkUser()
                    self.progressed()
                    try await self.push()
                    try await self.pull()
                    return anonymous
                }
                group.addTask {
                    // Wakes when the pass would be overdue, until it is.
                    while true {
                        // (An infinite or huge `syncTimeout` counts as a day: `Int64(.infinity)` would trap.)
                        let due = self.lastProgress.withLock { $0 } + .milliseconds(Int64(min(max(0, seconds), 86_400) * 1000))
                        if ContinuousClock.now >= due { return nil }
                        try await Task.sleep(until: due, clock: .continuous)
                    }
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let anonymous = first else {
                    if Task.isCancelled { throw JotterClientError.cancelled }
                    throw JotterClientError(
                        kind: .transport, urlErrorCode: .timedOut,
                        message:
                            "the sync did not end within \(seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)) s (syncTimeout): the server is not answering; the edits stay queued"
                    )
                }
                return anonymous
            }
        } catch {
            throw JotterClientError.wrapping(error, url: nil)
        }
    }

    /// The running pass got an answer, or bytes of one: its `syncTimeout` starts again.
    nonisolated func progressed() {
        lastProgress.withLock { $0 = .now }
    }

    /// A failure a retry later won't fix: the user must sign in, free space, shorten a note,
    /// open the replica of the user signed in.
    static func needsPerson(_ error: JotterClientError) -> Bool {
        if error.isReplicaOfAnotherUser { return true }
        guard let status = error.status else { return false }
        return [401, 403, 413, 422, 507].contains(status)
    }

    /// Whose replica this is, checked once per token of the client: the user `GET /auth/me`
    /// names, recorded by the first sync; a file recorded for another user is not synced
    /// (nothing sent, nothing pulled). Without a token, a `401` there is the server's
    /// anonymous user (`--auth off`; recorded once a sync completes): whether it is one, the
    /// push tells; for a file of a user it is that `401` (sign in). Returns whether the user is
    /// that anonymous one.
    private func checkUser() async throws(JotterClientError) -> Bool {
        let token = client.token
        if let checkedToken, checkedToken == token { return token == nil && checkedAnonymous }
        let recorded = try database.scalar("SELECT value FROM meta WHERE key = 'user'")?.text
        let user: String
        do {
            user = try await client.me().id
        } catch  where error.isUnauthorized && token == nil && (recorded ?? "").isEmpty {
            user = ""  // no one to sign in as: the anonymous user, or a 401 from the push
        }
        if let recorded, recorded != user {
            throw JotterClientError(
                kind: .replicaOfAnotherUser,
                message:
                    "the replica \(file.lastPathComponent) holds the notes of \(recorded.isEmpty ? "no user (a server without sign-in)" : "user \(recorded)"), not of \(user.isEmpty ? "no user" : "user \(user)"), whom the client is signed in as: open a replica file per user"
            )
        }
        if recorded == nil, !user.isEmpty {
            try database.rows("INSERT INTO meta(key, value) VALUES ('user', ?)", [.text(user)])
        }
        checkedToken = .some(token)
        checkedAnonymous = user.isEmpty
        return user.isEmpty
    }

    /// What a person must fix among the queued edits: the first one refused for good, with the
    /// server's problem details (its `detail` says why: for a `413`, the limit and the note's size).
    private func refusal() throws(JotterClientError) -> JotterClientError? {
        guard
            let row = try database.rows(
                "SELECT note_id, refused_status, refused_message, refused_problem FROM outbox WHERE refused_status IS NOT NULL ORDER BY seq LIMIT 1"
            ).first
        else { return nil }
        let problem = row[3].text.flatMap { try? JSONDecoder().decode(ProblemDetails.self, from: Data($0.utf8)) }
        return JotterClientError(
            kind: .httpStatus, status: row[1].integer.map { Int($0) }, problem: problem,
            message: "the edit of note \(row[0].text ?? "") was refused: \(row[2].text ?? "")")
    }

    // MARK: Internals shared by the sync

    /// Runs `body` in a transaction of the replica.
    func transaction<T>(_ body: () throws(JotterClientError) -> T) throws(JotterClientError) -> T {
        try database.transaction(body)
    }

    var db: ReplicaDatabase { database }

    /// Tells the app that these notes changed, and the state that follows.
    func changed(_ ids: Set<String>) throws(JotterClientError) {
        guard !ids.isEmpty else { return }
        broadcaster.yield(.notesChanged(ids))
        try publishState()
    }

    func assigned(local: String, server: String) {
        broadcaster.yield(.idAssigned(local: local, server: server))
    }

    func publishState() throws(JotterClientError) {
        let state = try makeState()
        if broadcaster.setState(state) { broadcaster.yield(.state(state)) }
    }

    private func makeState() throws(JotterClientError) -> SyncState {
        try Self.readState(database, syncing: syncing, needsAttention: needsAttention, lastError: lastError)
    }

    private static func readState(
        _ database: ReplicaDatabase, syncing: Bool, needsAttention: JotterClientError?,
        lastError: JotterClientError?
    ) throws(JotterClientError) -> SyncState {
        let pending = try database.scalar("SELECT count(*) FROM outbox")?.integer ?? 0
        let lastSync = try database.scalar("SELECT value FROM meta WHERE key = 'last_sync'")?.text.flatMap(Double.init)
        let merges = try database.rows("SELECT note_id, version, base, result, regions, at FROM merges ORDER BY at DESC, note_id").map { row in
            let regions = (try? JSONDecoder().decode([MergeReport.Region].self, from: Data((row[4].text ?? "[]").utf8))) ?? []
            return SyncMerge(
                noteID: row[0].text ?? "", version: Int(row[1].integer ?? 0),
                report: MergeReport(base: Int(row[2].integer ?? 0), result: row[3].text ?? "", regions: regions),
                date: Date(timeIntervalSince1970: row[5].real ?? 0))
        }
        let conflicts = try database.rows("SELECT id, note_id, copy_id, reason, at FROM conflicts ORDER BY id DESC").map { row in
            SyncConflict(
                id: row[0].integer ?? 0, noteID: row[1].text ?? "", copyID: row[2].text ?? "",
                reason: SyncConflict.Reason(rawValue: row[3].text ?? "") ?? .noteGone, date: Date(timeIntervalSince1970: row[4].real ?? 0))
        }
        return SyncState(
            pending: Int(pending), lastSync: lastSync.map(Date.init(timeIntervalSince1970:)), isSyncing: syncing,
            merges: merges, conflicts: conflicts, needsAttention: needsAttention, lastError: lastError)
    }

    static func localNote(_ row: [SQLValue]) -> LocalNote {
        LocalNote(
            id: row[0].text ?? "", body: row[1].text ?? "", version: Int(row[2].integer ?? 0),
            createdAt: Date(timeIntervalSince1970: row[3].real ?? 0), updatedAt: Date(timeIntervalSince1970: row[4].real ?? 0),
            hasPendingEdits: row[5].integer == 1)
    }

    /// The columns `pendingEdit` reads, in its order.
    static let outboxColumns = "seq, note_id, kind, body, base_version, idempotency_key, attempts, refused_status"

    static func pendingEdit(_ row: [SQLValue]) -> PendingEdit {
        PendingEdit(
            sequence: row[0].integer ?? 0, noteID: row[1].text ?? "", kind: PendingEdit.Kind(rawValue: row[2].text ?? "") ?? .update,
            body: row[3].text, baseVersion: row[4].integer.map(Int.init), idempotencyKey: row[5].text ?? "",
            attempts: Int(row[6].integer ?? 0), refusedStatus: row[7].integer.map(Int.init))
    }

    static func noSuchNote(_ id: String) -> JotterClientError {
        .localFile("no note \(id) in the replica")
    }
}

/// The engine's `updates()` subscribers, and the last state they were told.
final class Broadcaster: Sendable {
    private struct Subscribers {
        var continuations: [UUID: AsyncStream<NotesSyncEngine.Update>.Continuation] = [:]
        var state: SyncState?
    }
    private let subscribers = Mutex(Subscribers())

    func subscribe() -> AsyncStream<NotesSyncEngine.Update> {
        let (stream, continuation) = AsyncStream<NotesSyncEngine.Update>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        let state = subscribers.withLock { subscribers in
            subscribers.continuations[id] = continuation
            return subscribers.state
        }
        if let state { continuation.yield(.state(state)) }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Records `state`; whether it differs from the last one.
    @discardableResult
    func setState(_ state: SyncState) -> Bool {
        subscribers.withLock { subscribers in
            defer { subscribers.state = state }
            return subscribers.state != state
        }
    }

    func yield(_ update: NotesSyncEngine.Update) {
        for continuation in subscribers.withLock({ Array($0.continuations.values) }) { continuation.yield(update) }
    }

    deinit {
        for continuation in subscribers.withLock({ Array($0.continuations.values) }) { continuation.finish() }
    }
}
