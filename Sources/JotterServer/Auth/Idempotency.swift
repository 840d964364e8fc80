#if canImport(Glibc)
import Glibc
#endif
import JotterHTTP
import JotterStore
import Synchronization

/// `Idempotency-Key` on POST (`POST /notes`, `POST /uploads`): a retry with the same key and
/// the same body gets the first answer again (with `Idempotent-Replayed: true`) and creates
/// nothing; the same key with a different body is `422`; while the first is still running,
/// `409`. Keys are per user, kept 24 hours in memory (not across a restart). Only successful
/// answers are kept: after an error the retry runs again.
final class IdempotencyMiddleware: Middleware {
    static let header = "Idempotency-Key"
    static let lifetime: Int64 = 24 * 3600
    static let maxEntries = 100_000

    private enum State {
        case running(fingerprint: [UInt8])
        case done(fingerprint: [UInt8], response: Response, at: Int64)
    }

    private let entries = Mutex<[String: State]>([:])

    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        guard request.method == .post, let key = request.headers[Self.header] else { return try next(request, context) }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPError.badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        let slot = "\(context.owner.id) \(request.path) \(key)"
        let fingerprint = Self.fingerprint(request)
        let now = Int64(time(nil))
        let found: State? = entries.withLock { entries in
            if case .done(_, _, let at)? = entries[slot], now - at >= Self.lifetime { entries[slot] = nil }
            if let existing = entries[slot] { return existing }
            if entries.count >= Self.maxEntries {
                entries = entries.filter { if case .done(_, _, let at) = $0.value { now - at < Self.lifetime } else { true } }
            }
            entries[slot] = .running(fingerprint: fingerprint)
            return nil
        }
        switch found {
        case .running?:
            throw HTTPError(HTTPStatus(409), detail: "a request with this Idempotency-Key is still running; retry once it has answered")
        case .done(let first, let response, _)?:
            guard first == fingerprint else {
                throw HTTPError(.unprocessableContent, detail: "this Idempotency-Key was used with a different request body")
            }
            var replayed = response
            replayed.headers.set("Idempotent-Replayed", "true")
            return .now(replayed)
        case nil:
            break
        }
        let forget: @Sendable () -> Void = { [self] in _ = self.entries.withLock { $0.removeValue(forKey: slot) } }
        let reply: Reply
        do { reply = try next(request, context) } catch {
            forget()
            throw error
        }
        return reply.map { [self] response in
            if (200..<300).contains(response.status.code) && response.contentLength == UInt64(response.body.count) {
                self.entries.withLock { $0[slot] = .done(fingerprint: fingerprint, response: response, at: now) }
            } else {
                forget()
            }
            return response
        }.recover { error in
            forget()
            throw error
        }
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
