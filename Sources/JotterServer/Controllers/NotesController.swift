import JotterAPI
import JotterHTTP
import JotterStore

/// `/notes`: the REST resource of API.md (list, create, show, update, delete) and its live
/// event stream. Writes are answered only after their commit is durable; the connection is
/// suspended meanwhile, so waiting writes hold no engine thread and share group commits.
struct NotesController<Store: NoteStore & UploadStore> {
    let store: Store
    let events: EventBroadcaster
    /// How many missed events a reconnecting stream may replay.
    let replayLimit: Int

    func register(in routes: inout RouterBuilder) {
        routes.get("/notes", operation: NotesOperations.list, handler: list)
        routes.post("/notes", operation: NotesOperations.create, handler: create)
        routes.get("/notes/events", operation: NotesOperations.events, handler: stream)
        routes.get("/notes/:id", operation: NotesOperations.show, handler: show)
        routes.put("/notes/:id", operation: NotesOperations.update("PUT"), handler: update)
        routes.patch("/notes/:id", operation: NotesOperations.update("PATCH"), handler: update)
        routes.delete("/notes/:id", operation: NotesOperations.delete, handler: delete)
    }

    @Sendable func list(_ request: Request, _ context: RequestContext) throws -> JSON<NoteList> {
        let (query, given) = try NoteInput.query(request)
        var page = query
        page.limit = query.limit + 1  // one more tells whether there is a next page
        var records = try store.notesWithAttachments(page, owner: context.owner)
        let more = records.count > query.limit
        if more { records.removeLast() }
        var next: String?
        if more, let last = records.last?.0 {
            next = "/notes?limit=\(query.limit)"
                + (given["order"].map { "&order=\($0)" } ?? "")
                + (query.search.map { "&q=\(FormFields.escape($0))" } ?? "")
                + "&after=\(last.id)"
        }
        return JSON(NoteList(notes: records.map { Note($0.0, attachments: $0.1) }, next: next))
    }

    @Sendable func show(_ request: Request, _ context: RequestContext) throws -> Response {
        let note = try existing(try NoteInput.id(context), owner: context.owner)
        if let condition = request.headers["If-None-Match"].map(EntityTagCondition.init), condition.matches(note.etag, weak: true) {
            return Response(status: .notModified, headers: HTTPHeaders([("ETag", note.etag)]))
        }
        return try JSON(NoteEnvelope(note: note), headers: HTTPHeaders([("ETag", note.etag)])).response(for: request)
    }

    @Sendable func create(_ request: Request, _ context: RequestContext) throws -> Reply {
        guard let body = try NoteInput.body(request) else {
            throw HTTPError.validation([.init(field: "body", message: "is required")])
        }
        return commit(.create(body: body), owner: context.owner, request: request, status: .created, message: "Note Created")
    }

    @Sendable func update(_ request: Request, _ context: RequestContext) throws -> Reply {
        let id = try NoteInput.id(context)
        // A missing note is 404 whatever the preconditions; then If-Match, before anything else.
        let current = try existing(id, owner: context.owner)
        let version = try checkIfMatch(request, current: current)
        guard let body = try NoteInput.body(request) else {
            return try JSON(NoteEnvelope(note: current, message: "No Body Sent"), headers: HTTPHeaders([("ETag", current.etag)]))
                .reply(for: request)
        }
        return commit(.update(id: id, body: body, ifVersion: version), owner: context.owner, request: request, status: .ok, message: "Note Updated")
    }

    @Sendable func delete(_ request: Request, _ context: RequestContext) throws -> Reply {
        let id = try NoteInput.id(context)
        let version = try checkIfMatch(request, current: try existing(id, owner: context.owner))
        return commit(.delete(id: id, ifVersion: version), owner: context.owner, request: request, status: .ok, message: "Note Deleted")
    }

    @Sendable func stream(_ request: Request, _ context: RequestContext) throws -> Response {
        let owner = context.owner
        // Only the owner's events; ended when the credential it was opened with is revoked.
        let body = events.subscribe(audience: owner.id, credential: context.principal?.credential?.id)
        do {
            body.send(id: nil, Array("retry: 3000\n\n".utf8))
            if let header = request.headers["Last-Event-ID"] {
                if let last = Int64(header.trimmingASCIISpaces()), let missed = try store.events(after: last, limit: replayLimit, owner: owner) {
                    body.release(replay: try missed.map { ($0.id, try NoteRendering.event($0, owner: owner, store: store).encoded) }, after: last)
                } else {
                    // Older than the backlog, or never issued: the client must re-list.
                    let current = try store.lastEventID()
                    body.release(replay: [(current, ServerSentEvent(id: current, event: "reload", data: "{}").encoded)], after: 0)
                }
            } else {
                body.release(replay: [], after: try store.lastEventID())
            }
        } catch {
            body.end()
            throw error
        }
        return Response.stream(body, headers: HTTPHeaders([
            ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
        ]), blockSize: 2048)
    }

    // MARK: - Helpers

    private func existing(_ id: Int64, owner: Owner) throws -> Note {
        guard let (record, attachments) = try store.noteWithAttachments(id: id, owner: owner) else {
            throw HTTPError(.notFound, detail: "note \(id) does not exist")
        }
        return Note(record, attachments: attachments)
    }

    /// The version the write must find (`nil`: any); `412`/`400` from the conditional headers.
    private func checkIfMatch(_ request: Request, current: Note) throws(HTTPError) -> Int64? {
        try NotePreconditions.check(request, current: current)
    }

    /// Submits `write` and answers once it is durable, publishing its event first. The writer
    /// thread only hands the outcome over; the answer is rendered on the engine thread.
    private func commit(_ write: NoteWrite, owner: Owner, request: Request, status: HTTPStatus, message: String) -> Reply {
        let store = self.store, events = self.events
        return Reply.later { done in
            store.submit(write, owner: owner) { result in
                if case .success(.done(_, let event)) = result {
                    events.publish(audience: owner.id) { try NoteRendering.event(event, owner: owner, store: store) }
                }
                done {
                    switch try result.get() {
                    case .done(let record, let event):
                        let note = event.kind == .deleted ? Note(record, attachments: []) : try NoteRendering.note(record, owner: owner, store: store)
                        var headers = HTTPHeaders([("ETag", note.etag)])
                        if status == .created { headers.add("Location", "/notes/\(note.id)") }
                        return try JSON(NoteEnvelope(note: note, message: message), status: status, headers: headers).response(for: request)
                    case .notFound:
                        throw HTTPError(.notFound, detail: "note does not exist")
                    case .versionMismatch(let current):
                        throw NotePreconditions.stale(try NoteRendering.note(current, owner: owner, store: store))
                    case .uploadsAdded, .uploadDeleted, .uploadAttached:
                        throw HTTPError(.internalServerError)
                    }
                }
            }
        }
    }
}
