#if canImport(Glibc)
import Glibc
#endif
import JotterHTTP
import JotterStore

/// `Idempotency-Key` on POST (`POST /notes`, `POST /uploads`): a retry with the same key and
/// the same body gets the first answer again (with `Idempotent-Replayed: true`) and creates
/// nothing; the same key with a different body is `422`; while the first is still running,
/// `409`. Keys are per user and kept in the database (`IdempotencyStore`) for 24 hours, so a
/// retry that reaches another instance, or this one after a restart, is answered the same.
/// The claim is one atomic database write: of two requests racing on one key, on any number of
/// instances, one runs and the other gets `409`. Only successful answers are kept: after an
/// error the retry runs again. An answer over 64 KiB, or one pushed past its owner's 1 MiB of
/// kept answers, is kept as a reference: its retry gets `303 See Other` to its `Location`.
final class IdempotencyMiddleware: Middleware {
    static let header = "Idempotency-Key"

    private let store: any DataStore

    init(store: any DataStore) { self.store = store }

    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        // A refused request (its body over the limit, say) runs nothing: there is nothing to keep.
        guard request.method == .post, !context.isRefused, let key = request.headers[Self.header] else { return try next(request, context) }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPError.badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        let slot = "\(request.path) \(key)"
        let owner = context.owner
        let fingerprint = Self.fingerprint(request)
        let store = store
        // The claim waits for its commit here, on the calling thread: the responder cannot be
        // called later. (A PostgreSQL round trip, or a SQLite group commit.)
        let now = Int64(time(nil))
        switch try store.claimIdempotencyKey(slot, fingerprint: fingerprint, owner: owner, now: now) {
        case .running:
            throw HTTPError(HTTPStatus(409), detail: "a request with this Idempotency-Key is still running; retry once it has answered")
        case .mismatch:
            throw HTTPError(.unprocessableContent, detail: "this Idempotency-Key was used with a different request body")
        case .replay(let answer):
            return .now(Self.replay(answer))
        case .claimed:
            break
        }
        let release: @Sendable () -> Void = { store.releaseIdempotencyKey(slot, owner: owner) { _ in } }
        let reply: Reply
        do { reply = try next(request, context) } catch {
            release()
            throw error
        }
        // The answer is stored before it is sent (on a store thread): a retry that follows it finds it.
        return reply.then(on: store.dispatch) { outcome in
            guard case .success(let response) = outcome, (200..<300).contains(response.status.code),
                  response.contentLength == UInt64(response.body.count) else {
                release()
                return .now(try outcome.get())
            }
            do {
                try StoreWait.wait { store.completeIdempotencyKey(slot, answer: Self.answer(response), owner: owner, now: now, completion: $0) }
            } catch {
                release()
            }
            return .now(response)
        }
    }

    /// What is kept of `response`.
    static func answer(_ response: Response) -> IdempotentAnswer {
        IdempotentAnswer(status: response.status.code, head: response.headers.map { "\($0.name): \($0.value)\n" }.joined(),
                         body: response.body, location: response.headers["Location"])
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
    /// size, SHA-256) and the note they go to — the boundary may differ between attempts.
    static func fingerprint(_ request: Request) -> [UInt8] {
        var text = request.path + "\n"
        if request.files.isEmpty {
            return Secret.digest(text + String(decoding: request.rawBody, as: UTF8.self))
        }
        text += ((try? request.body().string("note_id")) ?? nil) ?? ""
        for file in request.files { text += "\n\(file.filename)\u{0}\(file.size)\u{0}\(file.sha256)" }
        return Secret.digest(text)
    }
}
