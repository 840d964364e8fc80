import JotterAPI
import JotterHTTP
import JotterStore
import JotterWire

/// `/notes`: the REST resource of API.md (list, create, show, update, delete) and its live
/// event stream. Writes are answered only after their commit is durable; the connection is
/// suspended meanwhile, so waiting writes hold no engine thread and share group commits. Events
/// reach the streams from the store (`DataStore.observeEvents`), not from here.
struct NotesController {
    let store: any DataStore
    let events: EventBroadcaster
    /// How many missed events a reconnecting stream may replay.
    let replayLimit: Int
    /// Event streams one token, and one signed-in user, may hold open at once.
    var streamsPerToken = 32
    var streamsPerUser = 64
    /// Each user's budget of merge work (nil: none).
    var mergeBudget: MergeBudget?

    func register(in routes: inout RouterBuilder) {
        routes.get("/notes", operation: NotesOperations.list, handler: list)
        routes.post("/notes", operation: NotesOperations.create, handler: create)
        routes.get("/notes/events", operation: NotesOperations.events, handler: stream)
        routes.get("/notes/trash", operation: NotesOperations.trash, handler: trash)
        routes.delete("/notes/trash/:id", operation: NotesOperations.purge, handler: purge)
        routes.get("/notes/trash/:id/revisions", operation: NotesOperations.trashedRevisions, handler: trashedRevisions)
        routes.get("/notes/trash/:id/revisions/:version", operation: NotesOperations.trashedRevision, handler: trashedRevision)
        routes.get("/notes/changes", operation: NotesOperations.changes, handler: changes)
        routes.get("/notes/:id", operation: NotesOperations.show, handler: show)
        routes.put("/notes/:id", operation: NotesOperations.update("PUT"), handler: update)
        routes.patch("/notes/:id", operation: NotesOperations.update("PATCH"), handler: update)
        routes.delete("/notes/:id", operation: NotesOperations.delete, handler: delete)
        routes.get("/notes/:id/revisions", operation: NotesOperations.revisions, handler: revisions)
        routes.get("/notes/:id/revisions/:version", operation: NotesOperations.revision, handler: revision)
        routes.post("/notes/:id/restore", operation: NotesOperations.restore, handler: restore)
    }

    @Sendable func list(_ request: Request, _ context: RequestContext) throws -> Reply {
        let (query, given) = try NoteInput.query(request)
        let store = store, owner = context.owner
        var page = query
        page.limit = query.limit + 1  // one more tells whether there is a next page
        page.maxBodyBytes = NoteInput.pageBudget
        let notes = try store.notesWithAttachments(page, owner: owner)
        let (count, more) = NoteQuery.cut(notes.notes.lazy.map(\.bodyCount), limit: query.limit, budget: NoteInput.pageBudget)
        var next: String?
        if more, count > 0 {
            next =
                "/notes?limit=\(query.limit)"
                + (given["order"].map { "&order=\($0)" } ?? "")
                + (query.search.map { "&q=\(FormFields.escape($0))" } ?? "")
                + "&after=\(notes[count - 1].position)"
        }
        return try JSON(StoredNoteList(page: notes, count: count, next: next)).reply(for: request)
    }

    /// `GET /notes/changes`: the change feed (`NoteFeedPage`), one page.
    @Sendable func changes(_ request: Request, _ context: RequestContext) throws -> Reply {
        let (since, limit) = try NoteInput.feedQuery(request)
        // One more tells whether more follow.
        let page = try store.changes(NoteFeedQuery(since: since, limit: limit + 1, maxBodyBytes: NoteInput.pageBudget), owner: context.owner)
        let (count, more) = NoteQuery.cut(page.bodySizes, limit: limit, budget: NoteInput.pageBudget)
        return try JSON(StoredChangeList(page: page, count: count, cursor: page.cursor(count: count, more: more), more: more))
            .reply(for: request)
    }

    @Sendable func show(_ request: Request, _ context: RequestContext) throws -> Reply {
        let id = try NoteInput.id(context)
        let note = try stored(id, owner: context.owner)
        let etag = note.etag
        switch ReadCondition(request.headers, etag: etag) {
        case .proceed: break
        case .notModified: return .now(Response(status: .notModified, headers: HTTPHeaders([("ETag", etag)])))
        case .failed(let detail):
            throw HTTPError(.preconditionFailed, detail: "note \(id): \(detail)", headers: HTTPHeaders([("ETag", etag)]))
        }
        return try JSON(StoredNoteEnvelope(note: note), headers: HTTPHeaders([("ETag", etag)])).reply(for: request)
    }

    @Sendable func create(_ request: Request, _ context: RequestContext) throws -> Reply {
        guard let body = try NoteInput.body(request) else {
            throw HTTPError.validation([.init(field: "body", message: "is required")])
        }
        let store = store, owner = context.owner
        if let claim = context[IdempotencyKeyed.self] {
            // The key is claimed in the note's own transaction.
            return Reply.later { done in
                store.createNote(body: body, owner: owner, claiming: claim) { result in
                    done {
                        switch try result.get() {
                        case .refused(let found): throw IdempotencyRefused(claim: found)
                        case .done(let change):
                            return try Self.answer(
                                StoredNote(record: change.note, attachments: []), request: request,
                                status: .created, message: "Note Created")
                        }
                    }
                }
            }
        }
        return Reply.later { done in
            store.createNote(body: body, owner: owner) { result in
                // A new note has no attachments: nothing to read.
                done {
                    try Self.answer(
                        StoredNote(record: try result.get().note, attachments: []), request: request,
                        status: .created, message: "Note Created")
                }
            }
        }
    }

    @Sendable func update(_ request: Request, _ context: RequestContext) throws -> Reply {
        let id = try NoteInput.id(context)
        // A missing note is 404 whatever the preconditions (409 for an edit made from a version
        // of a note since deleted); then If-Match, before anything else.
        let current = try writable(id, request: request, owner: context.owner)
        let version = try checkIfMatch(request, current: current)
        let base = try NoteInput.baseVersion(request)
        guard let body = try NoteInput.updatedBody(request) else {
            return try JSON(NoteEnvelope(note: current, message: "No Body Sent"), headers: HTTPHeaders([("ETag", current.etag)]))
                .reply(for: request)
        }
        // An edit sent with a `Base-Version` may be merged (the note can move on before it is
        // written): it is paid for from the user's budget before it is queued, `429` when that
        // is spent, and the budget is settled with what the merge cost once written.
        let owner = context.owner
        let budget = base == nil ? nil : mergeBudget
        try budget?.reserve(owner)
        if let claim = context[IdempotencyKeyed.self] {
            // The key is claimed in the edit's own transaction (a merge is never made twice).
            return keyedCommit(id, owner: owner, request: request, message: "Note Updated", base: base) { store, completion in
                store.editNote(id: id, base: base, body: body, ifVersion: version, owner: owner, claiming: claim) { result in
                    switch try? result.get() {
                    case .done(let outcome)?: budget?.settle(owner, after: outcome)
                    case .refused?: budget?.settle(owner, after: nil)
                    case nil: break  // failed: the reservation stays spent (`MergeBudget.settle`)
                    }
                    completion(result)
                }
            }
        }
        if let base {
            // Made from `base`: merged into what was committed since, inside the write.
            return commit(id, owner: owner, request: request, message: "Note Updated", base: base) { store, completion in
                store.mergeNote(id: id, base: base, body: body, ifVersion: version, owner: owner) { result in
                    if let outcome = try? result.get() { budget?.settle(owner, after: outcome) }
                    completion(result)
                }
            }
        }
        return commit(id, owner: context.owner, request: request, message: "Note Updated") { store, completion in
            store.updateNote(id: id, body: body, ifVersion: version, owner: context.owner, completion: completion)
        }
    }

    @Sendable func delete(_ request: Request, _ context: RequestContext) throws -> Reply {
        let id = try NoteInput.id(context)
        let version = try checkIfMatch(request, current: try existing(id, owner: context.owner))
        return commit(id, owner: context.owner, request: request, message: "Note Deleted") { store, completion in
            store.deleteNote(id: id, ifVersion: version, owner: context.owner, completion: completion)
        }
    }

    /// `GET /notes/{id}/revisions`: newest first, paged by version.
    @Sendable func revisions(_ request: Request, _ context: RequestContext) throws -> Reply {
        try revisions(request, context, inTrash: false)
    }

    /// `GET /notes/trash/{id}/revisions`: a deleted note's, as `GET /notes/{id}/revisions`.
    @Sendable func trashedRevisions(_ request: Request, _ context: RequestContext) throws -> Reply {
        try revisions(request, context, inTrash: true)
    }

    /// `GET /notes/{id}/revisions/{version}`: one revision with its body.
    @Sendable func revision(_ request: Request, _ context: RequestContext) throws -> Reply {
        try revision(request, context, inTrash: false)
    }

    /// `GET /notes/trash/{id}/revisions/{version}`: one of a deleted note's.
    @Sendable func trashedRevision(_ request: Request, _ context: RequestContext) throws -> Reply {
        try revision(request, context, inTrash: true)
    }

    private func revisions(_ request: Request, _ context: RequestContext, inTrash: Bool) throws -> Reply {
        let id = try NoteInput.id(context)
        let (limit, after) = try NoteInput.pageQuery(request, NoteInput.revisionsPage)
        guard let found = try store.revisions(noteID: id, before: after, limit: limit + 1, owner: context.owner, inTrash: inTrash) else {
            throw try missingHistory(
                id, inTrash: inTrash, owner: context.owner, detail: inTrash ? "note \(id) is not in the trash" : "note \(id) does not exist")
        }
        let page = found.prefix(limit)
        let next = found.count > limit ? "\(Self.historyPath(id, inTrash: inTrash))?limit=\(limit)&after=\(page.last!.version)" : nil
        return try JSON(RevisionList(page.map(RevisionInfo.init), next: next)).reply(for: request)
    }

    private func revision(_ request: Request, _ context: RequestContext, inTrash: Bool) throws -> Reply {
        let id = try NoteInput.id(context)
        let text = context.parameters[NoteInput.versionField.name] ?? ""
        guard let version = NoteInput.versionField.parse(text),
            let found = try store.revision(noteID: id, version: version, owner: context.owner, inTrash: inTrash)
        else {
            // Another user's note, or none: the same words as a missing revision of one's own.
            throw try missingHistory(id, inTrash: inTrash, owner: context.owner, detail: "note \(id) has no revision \(text)")
        }
        return try JSON(RevisionEnvelope(revision: Revision(found))).reply(for: request)
    }

    /// Where a note's revisions are listed: `/notes/{id}/revisions`, or under `/notes/trash/`.
    static func historyPath(_ id: Int64, inTrash: Bool) -> String {
        inTrash ? "/notes/trash/\(id)/revisions" : "/notes/\(id)/revisions"
    }

    /// The `404` for a history asked for at the wrong place: a deleted note's is under
    /// `/notes/trash/{id}`, and the answer says so (the note itself is gone from `/notes/{id}`).
    private func missingHistory(_ id: Int64, inTrash: Bool, owner: Owner, detail: String) throws -> HTTPError {
        if !inTrash, try store.trashedNote(id: id, owner: owner) != nil {
            return HTTPError(.notFound, detail: "\(detail): note \(id) is in the trash, its history is at \(Self.historyPath(id, inTrash: true))")
        }
        return HTTPError(.notFound, detail: detail)
    }

    /// `POST /notes/{id}/restore` with `version`: the note at a new version whose body is that
    /// revision's. Without `version`, a note in the trash back where it was, with its id, body
    /// and attachments, at a new version.
    @Sendable func restore(_ request: Request, _ context: RequestContext) throws -> Reply {
        let id = try NoteInput.id(context)
        let owner = context.owner
        guard let (record, attachments) = try store.noteWithAttachments(id: id, owner: owner) else {
            guard !NoteInput.has(request, field: NoteInput.restoreField.name) else { throw HTTPError(.notFound, detail: "note \(id) does not exist") }
            // Not a live note: from the trash, if it is there (`.notFound` otherwise).
            return commit(id, owner: owner, request: request, message: "Note Restored") { store, completion in
                store.restoreTrashedNote(id: id, owner: owner, completion: completion)
            }
        }
        let ifVersion = try checkIfMatch(request, current: StoredNote(record: record, attachments: attachments).note)
        guard let version = try NoteInput.version(request, field: NoteInput.restoreField) else {
            // The request is well formed; the note's state is what refuses it.
            throw HTTPError(
                HTTPStatus(409),
                detail: "note \(id) is not in the trash, so the only restore is of one of its revisions: "
                    + "send `version` (GET /notes/\(id)/revisions lists them)")
        }
        return commit(id, owner: context.owner, request: request, message: "Note Restored") { store, completion in
            store.restoreNote(id: id, version: version, ifVersion: ifVersion, owner: context.owner, completion: completion)
        }
    }

    /// `GET /notes/trash`: the owner's deleted notes, most recently deleted first, paged by id
    /// (a note restored or purged in the last week still marks its place; any other `400`).
    @Sendable func trash(_ request: Request, _ context: RequestContext) throws -> Reply {
        let (limit, after) = try NoteInput.pageQuery(request, NoteInput.trashPage)
        guard let found = try store.trashedNotes(limit: limit + 1, after: after, owner: context.owner) else {
            throw HTTPError.badQuery([
                .init(field: "after", message: "names no note in your trash (or one that left it over a week ago): list again from the start")
            ])
        }
        let page = Array(found.prefix(limit))
        let next = found.count > limit ? "/notes/trash?limit=\(limit)&after=\(page.last!.note.id)" : nil
        return try JSON(TrashList(try NoteRendering.trashed(page, owner: context.owner, store: store), next: next)).reply(for: request)
    }

    /// `DELETE /notes/trash/{id}`: the note out of the trash for good, with its revisions and
    /// attachments (their bytes once that is durable); `204`. `If-Match` (and `If-None-Match`)
    /// as for the note's other writes, against the version it has in the trash: a note restored
    /// and deleted again since the client read it (a later version) is `412`, and stays.
    @Sendable func purge(_ request: Request, _ context: RequestContext) throws -> Reply {
        let id = try NoteInput.id(context)
        let store = store, owner = context.owner
        var version: Int64?
        if NotePreconditions.given(request) {
            guard let trashed = try store.trashedNote(id: id, owner: owner) else {
                throw HTTPError(.notFound, detail: "note \(id) is not in the trash")
            }
            version = try checkIfMatch(request, current: Note(trashed.note, attachments: []))  // its ETag is what counts
        }
        return Reply.later { [version] done in
            store.purgeTrashedNote(id: id, ifVersion: version, owner: owner) { result in
                done {
                    switch try result.get() {
                    case .purged: return Response(status: .noContent)
                    case .notFound: throw HTTPError(.notFound, detail: "note \(id) is not in the trash")
                    case .versionMismatch(let current):
                        throw NotePreconditions.stale(Note(current.note, attachments: []))
                    }
                }
            }
        }
    }

    @Sendable func stream(_ request: Request, _ context: RequestContext) throws -> Reply {
        let store = store, events = events, replayLimit = replayLimit, owner = context.owner
        let credential = context.principal?.credential?.id
        // Only the owner's events; ended when the credential it was opened with is revoked. A
        // token and a user hold at most so many (none is counted without authentication).
        let body: EventStreamBody
        do {
            body = try events.subscribe(
                audience: owner.id, credential: credential,
                perAudience: context.principal?.user == nil ? nil : streamsPerUser,
                perCredential: credential == nil ? nil : streamsPerToken)
        } catch {
            throw HTTPError(
                HTTPStatus(429),
                detail: error.perCredential
                    ? "this token has \(error.open) event streams open, the most one token may have (\(error.limit)): close one first"
                    : "you have \(error.open) event streams open, the most one user may have (\(error.limit)): close one first",
                headers: HTTPHeaders([("Retry-After", "30")]))
        }
        do {
            // The first message: the retry delay and, unless the client must re-list, the cursor
            // the stream goes on from as its `id:` — a client that sees no event still has one to
            // resume from (with Last-Event-ID or `GET /notes/changes?since=`), with no gap.
            if let header = request.headers["Last-Event-ID"] {
                if let last = Int64(header.trimmingASCIISpaces()), let missed = try store.events(after: last, limit: replayLimit, owner: owner) {
                    body.release(
                        preface: Self.firstMessage(cursor: last),
                        replay: try missed.map { ($0.id, try NoteRendering.event($0, owner: owner, store: store).encoded) }, after: last)
                } else {
                    // Older than the backlog, or never issued: the client must re-list (the
                    // change feed holds more than the backlog: `since` its cursor may still do).
                    let current = try store.lastEventID()
                    body.release(
                        preface: Self.firstMessage(cursor: nil),
                        replay: [(current, ServerSentEvent(id: current, event: "reload", data: "{}").encoded)], after: 0)
                }
            } else {
                let current = try store.lastEventID()
                body.release(preface: Self.firstMessage(cursor: current), replay: [], after: current)
            }
        } catch {
            body.end()
            throw error
        }
        return .now(
            Response.stream(
                body,
                headers: HTTPHeaders([
                    ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
                ]), blockSize: 2048))
    }

    /// `id: <cursor>` when given, and `retry: 3000`: an event stream's first message (no data,
    /// so no event is dispatched; the id still becomes the stream's last event id).
    static func firstMessage(cursor: Int64?) -> [UInt8] {
        Array(((cursor.map { "id: \($0)\n" } ?? "") + "retry: 3000\n\n").utf8)
    }

    // MARK: - Helpers

    private func existing(_ id: Int64, owner: Owner) throws -> Note {
        try stored(id, owner: owner).note
    }

    /// The note an update writes over: `404` when there is none, or `409` (`note-deleted`) when
    /// the update was made from a version of it (`Base-Version`) and it is in the trash.
    private func writable(_ id: Int64, request: Request, owner: Owner) throws -> Note {
        guard let (record, attachments) = try store.noteWithAttachments(id: id, owner: owner) else {
            throw try gone(id, request: request, owner: owner)
        }
        return StoredNote(record: record, attachments: attachments).note
    }

    /// Why a write found no note `id`: `409` for an edit made from a version of it (`Base-Version`
    /// or `base_version`, even a malformed one) when it is in the trash, else `404`.
    private static func gone(_ id: Int64, request: Request, owner: Owner, store: any DataStore) throws -> HTTPError {
        if NoteInput.namesBase(request), let trashed = try store.trashedNote(id: id, owner: owner) {
            return NoteConflicts.deleted(trashed, attachments: try store.attachments(of: [id], owner: owner)[id] ?? [])
        }
        return HTTPError(.notFound, detail: "note \(id) does not exist")
    }

    private func gone(_ id: Int64, request: Request, owner: Owner) throws -> HTTPError {
        try Self.gone(id, request: request, owner: owner, store: store)
    }

    private func stored(_ id: Int64, owner: Owner) throws -> StoredNote {
        guard let (record, attachments) = try store.noteWithAttachments(id: id, owner: owner) else {
            throw HTTPError(.notFound, detail: "note \(id) does not exist")
        }
        return StoredNote(record: record, attachments: attachments)
    }

    /// The version the write must find (`nil`: any); `412`/`400` from the conditional headers.
    private func checkIfMatch(_ request: Request, current: Note) throws(HTTPError) -> Int64? {
        try NotePreconditions.check(request, current: current)
    }

    /// Starts a write on note `id` and answers once it is durable: `200` with the note (read
    /// again with its attachments, which a deleted note keeps in the trash), `404` (`409` for a write made from `base` of
    /// a note since deleted), or `412` with the current note.
    private func commit(
        _ id: Int64, owner: Owner, request: Request, message: String, base: Int64? = nil,
        _ start: @escaping @Sendable (any DataStore, @escaping StoreCompletion<NoteWriteOutcome>) -> Void
    ) -> Reply {
        keyedCommit(id, owner: owner, request: request, message: message, base: base) { store, completion in
            start(store) { completion($0.map(KeyedOutcome.done)) }
        }
    }

    /// `commit` of a write that claims an `Idempotency-Key` in its transaction: a refused key is
    /// answered by `IdempotencyMiddleware`.
    private func keyedCommit(
        _ id: Int64, owner: Owner, request: Request, message: String, base: Int64? = nil,
        _ start: @escaping @Sendable (any DataStore, @escaping StoreCompletion<KeyedOutcome<NoteWriteOutcome>>) -> Void
    ) -> Reply {
        let store = store
        return Reply.later { done in
            start(store) { result in
                done {
                    let outcome: NoteWriteOutcome
                    switch try result.get() {
                    case .refused(let found): throw IdempotencyRefused(claim: found)
                    case .done(let written): outcome = written
                    }
                    switch outcome {
                    case .done(let change):
                        // A deleted note with the attachments it keeps in the trash.
                        let note = try NoteRendering.note(change.note, owner: owner, store: store)
                        return try Self.answer(note, request: request, status: .ok, message: message, merge: change.merge.map(MergeReport.init))
                    case .notFound:
                        // Deleted since it was read: an edit made from a version of it is refused as one of a note in the trash.
                        throw base != nil
                            ? try Self.gone(id, request: request, owner: owner, store: store)
                            : HTTPError(.notFound, detail: "note \(id) does not exist")
                    case .versionMismatch(let current):
                        throw NotePreconditions.stale(try NoteRendering.note(current, owner: owner, store: store))
                    case .noRevision(let current) where base != nil:
                        throw NoteConflicts.unknownBase(base!, current: try NoteRendering.note(current, owner: owner, store: store))
                    case .cannotMerge(let current, let ancestor):
                        throw NoteConflicts.pastMergeLimits(current: try NoteRendering.note(current, owner: owner, store: store), base: ancestor)
                    case .noRevision(let current):
                        throw HTTPError(
                            .notFound, detail: "note \(current.id) has no such revision kept: GET /notes/\(current.id)/revisions lists them")
                    }
                }
            }
        }
    }

    /// The answer to a committed write: the note with its ETag (and `Location` when created).
    private static func answer(_ note: Note, request: Request, status: HTTPStatus, message: String, merge: MergeReport? = nil) throws -> Response {
        var headers = HTTPHeaders([("ETag", note.etag)])
        if status == .created { headers.add("Location", "/notes/\(note.id)") }
        return try JSON(NoteEnvelope(note: note, message: message, merge: merge), status: status, headers: headers).response(for: request)
    }

    /// The same, written straight from the stored record.
    private static func answer(_ note: StoredNote, request: Request, status: HTTPStatus, message: String) throws -> Response {
        var headers = HTTPHeaders([("ETag", note.etag)])
        if status == .created { headers.add("Location", "/notes/\(note.record.id)") }
        return try JSON(StoredNoteEnvelope(note: note, message: message), status: status, headers: headers).response(for: request)
    }
}
