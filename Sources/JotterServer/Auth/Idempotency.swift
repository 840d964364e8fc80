#if canImport(Glibc)
import Glibc
#endif
import JotterHTTP
import JotterStore

/// `Idempotency-Key` on POST (`POST /notes`, `POST /uploads`) and on an edit (`PUT`/`PATCH`
/// `/notes/{id}`): a retry with the same key and the same body gets the first answer again (with
/// `Idempotent-Replayed: true`) and creates nothing, or merges nothing a second time; the same
/// key with a different body (or another `Base-Version`) is `422`; while the first is still running,
/// `409`. Keys are per user and kept in the database (`IdempotencyStore`) for 24 hours, so a
/// retry that reaches another instance, or this one after a restart, is answered the same.
/// The claim is one atomic database write: of two requests racing on one key, on any number of
/// instances, one runs and the other gets `409`. Only successful answers are kept: after an
/// error the retry runs again. An answer over 64 KiB, or one pushed past its owner's 1 MiB of
/// kept answers, is kept as a reference: its retry gets `303 See Other` to its `Location`.
///
/// On the requests `transactional` picks (`POST /notes`, a note's edit, a multipart
/// `POST /uploads`) the claim is no write of its own: the handler finds it in the context
/// (`IdempotencyKeyed`) and makes it in the transaction that writes the note or the upload rows,
/// which also keeps a reference answer — claim and rows commit together (a refused upload's
/// bytes are deleted again), so no crash can leave a write whose retry runs it again.
/// A refused claim comes back as `IdempotencyRefused`, answered here like any other.
final class IdempotencyMiddleware: Middleware {
    static let header = "Idempotency-Key"

    private let store: any DataStore
    /// Whether a request's key is honoured: every `POST`, and what else the application names.
    private let keyed: @Sendable (Request) -> Bool
    /// Whether a request's route claims the key in its own transaction.
    private let transactional: @Sendable (Request) -> Bool

    init(
        store: any DataStore, keyed: @escaping @Sendable (Request) -> Bool = { $0.method == .post },
        transactional: @escaping @Sendable (Request) -> Bool = { _ in false }
    ) {
        self.store = store
        self.keyed = keyed
        self.transactional = transactional
    }

    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        // A refused request (its body over the limit, say) runs nothing: there is nothing to keep.
        guard keyed(request), !context.isRefused, let key = request.headers[Self.header] else { return try next(request, context) }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPError.badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        let slot = "\(request.path) \(key)"
        let owner = context.owner
        let fingerprint = Self.fingerprint(request)
        let store = store
        let now = Int64(time(nil))
        if transactional(request) {
            var keyed = context
            keyed[IdempotencyKeyed.self] = IdempotencyKeyClaim(key: slot, fingerprint: fingerprint, now: now)
            // No claim was made here: a failure before the handler's transaction leaves nothing to release.
            let reply: Reply
            do { reply = try next(request, keyed) } catch let error as HTTPError where error.status == .preconditionFailed {
                return .now(try Self.kept(slot, fingerprint: fingerprint, owner: owner, now: now, store: store) ?? { throw error }())
            }
            return reply.then(on: StoreExecutor(threads: store.threads)) { outcome in
                if case .failure(let error as IdempotencyRefused) = outcome { return .now(try Self.refusal(error.claim)) }
                if Self.failedPrecondition(outcome), let kept = try Self.kept(slot, fingerprint: fingerprint, owner: owner, now: now, store: store) {
                    return .now(kept)
                }
                guard case .success(let response) = outcome, (200..<300).contains(response.status.code),
                    response.contentLength == UInt64(response.body.count)
                else { return .now(try outcome.get()) }
                // The reference the transaction kept becomes the whole answer (if this fails, the reference stays).
                try? StoreWait.wait {
                    store.completeIdempotencyKey(slot, answer: Self.answer(response, to: request), owner: owner, now: now, completion: $0)
                }
                return .now(response)
            }
        }
        // The claim waits for its commit here, on the calling thread: the responder cannot be
        // called later. (A PostgreSQL round trip, or a SQLite group commit.)
        let claim = try store.claimIdempotencyKey(slot, fingerprint: fingerprint, owner: owner, now: now)
        guard claim == .claimed else {
            // The handler will not run: a raw upload's bytes, received already, go now.
            (request.bodyStream as? UploadReceiver)?.discardFile()
            return .now(try Self.refusal(claim))
        }
        let release: @Sendable () -> Void = { store.releaseIdempotencyKey(slot, owner: owner) { _ in } }
        let reply: Reply
        do { reply = try next(request, context) } catch {
            release()
            throw error
        }
        // The answer is stored before it is sent (on a store thread): a retry that follows it finds it.
        return reply.then(on: StoreExecutor(threads: store.threads)) { outcome in
            guard case .success(let response) = outcome, (200..<300).contains(response.status.code),
                response.contentLength == UInt64(response.body.count)
            else {
                release()
                return .now(try outcome.get())
            }
            do {
                try StoreWait.wait {
                    store.completeIdempotencyKey(slot, answer: Self.answer(response, to: request), owner: owner, now: now, completion: $0)
                }
            } catch {
                release()
            }
            return .now(response)
        }
    }

    /// A transactional write's precondition (`If-Match`) is checked before its transaction claims
    /// the key, so the retry of an edit that was made (its answer lost: the edit itself moved the
    /// note past `If-Match`) fails it. When the key holds that edit's answer, the answer is what
    /// the retry gets (or `422`/`409`, as for any claim that is not free); when the key is free,
    /// nil: the `412` stands. A lookup, not a claim: it writes nothing, so its failure cannot
    /// leave the key claimed.
    private static func kept(_ slot: String, fingerprint: [UInt8], owner: Owner, now: Int64, store: any DataStore) throws -> Response? {
        guard let held = try store.lookUpIdempotencyKey(slot, fingerprint: fingerprint, owner: owner, now: now) else { return nil }
        return try refusal(held)
    }

    /// Whether a write ended in `412 Precondition Failed` (refused in its transaction: a thrown
    /// error, or its rendered answer).
    private static func failedPrecondition(_ outcome: Result<Response, any Error>) -> Bool {
        switch outcome {
        case .success(let response): response.status == .preconditionFailed
        case .failure(let error as HTTPError): error.status == .preconditionFailed
        case .failure: false
        }
    }

    /// The answer to a claim that was not free: the kept answer again, `409` while the first
    /// request runs, `422` for another request under the same key.
    static func refusal(_ claim: IdempotencyClaim) throws -> Response {
        switch claim {
        case .running:
            // Retry-After: the first request answers within a moment, or its claim gives way
            // (a committed write replays after `IdempotencyLimits.answerGrace`).
            throw HTTPError(
                HTTPStatus(409), detail: "a request with this Idempotency-Key is still running; retry once it has answered",
                headers: HTTPHeaders([("Retry-After", "1")]))
        case .mismatch:
            throw HTTPError(.unprocessableContent, detail: "this Idempotency-Key was used with a different request body")
        case .replay(let answer):
            return Self.replay(answer)
        case .claimed:
            throw HTTPError(.internalServerError, detail: "an idempotency claim was refused as claimed")
        }
    }

    /// What is kept of `response` to `request`. Its reference (`location`, what a retry is sent
    /// to when only the reference is kept) is what the request created, or the note it edited.
    static func answer(_ response: Response, to request: Request) -> IdempotentAnswer {
        IdempotentAnswer(
            status: response.status.code, head: response.headers.map { "\($0.name): \($0.value)\n" }.joined(),
            body: response.body, location: response.headers["Location"] ?? (request.method == .post ? nil : String(request.path)))
    }

    /// The kept answer again; a reference (no body kept) as `303 See Other` to what it created.
    static func replay(_ answer: IdempotentAnswer) -> Response {
        var response: Response
        if let body = answer.body {
            var headers = HTTPHeaders()
            for line in answer.head.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.add(String(line[..<colon]), String(line[line.index(after: colon)...].dropFirst()))
            }
            response = Response(status: HTTPStatus(answer.status), headers: headers, body: body)
        } else {
            response = Response(status: HTTPStatus(303), headers: HTTPHeaders([("Location", answer.location ?? "/")]))
        }
        response.headers.set("Idempotent-Replayed", "true")
        return response
    }

    /// What makes two requests the same: the body's bytes, or for multipart the files (name,
    /// size, SHA-256) and the note they go to — the boundary may differ between attempts —, or
    /// for a raw-body upload its file's name, type, size and SHA-256.
    static func fingerprint(_ request: Request) -> [UInt8] {
        // The path and the query (a raw upload's `note_id`).
        var text = request.path + (request.rawQuery.map { "?" + $0 } ?? "") + "\n"
        // An edit's base is part of it: the same text from another version is another edit.
        if let base = request.headers["Base-Version"] { text += "Base-Version: \(base)\n" }
        if let raw = request.bodyStream as? UploadReceiver, raw.path != nil {
            // A raw-body upload, streamed to a file: its name, type, size and SHA-256, as a
            // multipart file's (its bytes are not in `rawBody`).
            let plan = raw.plan
            text += "raw\u{0}\(plan.filename)\u{0}\(plan.contentType)\u{0}\(raw.offset)\u{0}\(raw.sha256 ?? "")"
            return Secret.digest(text)
        }
        if request.files.isEmpty {
            return Secret.digest(text + String(decoding: request.rawBody, as: UTF8.self))
        }
        text += ((try? request.body().string("note_id")) ?? nil) ?? ""  // where the files go
        for file in request.files { text += "\n\(file.filename)\u{0}\(file.size)\u{0}\(file.sha256)" }
        return Secret.digest(text)
    }
}

/// The `Idempotency-Key` a transactional route claims in its own write (set by
/// `IdempotencyMiddleware`); absent when the request has no key.
enum IdempotencyKeyed: RequestContextKey {
    typealias Value = IdempotencyKeyClaim
}

/// A keyed write refused because its key was not free; `IdempotencyMiddleware` answers it.
struct IdempotencyRefused: Error {
    let claim: IdempotencyClaim
}
