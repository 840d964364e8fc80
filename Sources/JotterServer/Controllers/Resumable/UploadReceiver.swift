import Glibc
import JotterHTTP
import JotterStore
import Synchronization

/// Receives the raw body of an upload request (`POST /uploads` with the file's bytes, or an
/// append `PATCH /uploads/{id}`) on the request's engine thread: into a temporary file for a
/// plain raw upload, into the upload's `PartialWriter` for a resumable one.
///
/// What the request needs from the store — the note it names, the user's limits, the new row,
/// the take-over of the upload it appends to — is prepared first (`start`): at once with
/// SQLite, on a store thread with PostgreSQL, so no engine thread waits for a round trip. Until
/// it is ready the receiver keeps the one read of the body that came with the head and asks the
/// engine to read no more (`mustWait`); a body that ended meanwhile (or there was none) is
/// finished by the handler once it is ready (`whenPrepared`).
final class UploadReceiver: RequestBodyStream, @unchecked Sendable {
    // @unchecked: `plan`, `writer` and the byte counters are set by `prepared` before the phase
    // turns `.ready` under `shared`'s lock, then belong to the engine thread while the body
    // arrives and to the handler's thread after; `shared` holds what the two meet over.

    /// What the request carries, fixed once prepared.
    struct Plan: Sendable {
        var dialect: UploadDialect
        /// The partial upload (nil: a plain raw upload).
        var record: PartialUploadRecord?
        /// Where this request's bytes start.
        var startOffset: Int64
        /// The upload's declared total, if known: no byte past it is accepted.
        var length: Int64?
        /// The client says this request's content ends the upload (IETF); tus completes at `length`.
        var completes: Bool
        /// tus `Upload-Checksum` of this request's content.
        var checksum: (MessageDigest.Algorithm, [UInt8])?
        /// Whether this request created the upload (its answer is the creation's).
        var creates: Bool
        var filename: String
        var contentType: String
        var noteID: Int64?
    }

    /// What preparing found: the plan, and where a resumable upload's bytes go.
    struct Prepared: Sendable {
        var plan: Plan
        var writer: (any PartialWriter)?
    }

    private enum Phase {
        case preparing
        case ready
        case failed(any Error)
    }

    private struct Shared {
        var phase = Phase.preparing
        /// Bytes that arrived while preparing.
        var early: [UInt8] = []
        /// The engine's call to read on, once prepared.
        var ready: (@Sendable () -> Void)?
        /// The handler's continuations, once prepared.
        var waiters: [@Sendable () -> Void] = []
        /// The body ended (`finish`) while preparing: the handler stores the early bytes.
        var bodyEndedEarly = false
        /// The request ended without its body (`abort`) while preparing.
        var aborted = false
    }

    let owner: Owner
    let context: RequestContext
    private let shared = Mutex(Shared())
    private(set) var plan: Plan!
    private(set) var writer: (any PartialWriter)?
    /// A plain raw upload's temporary file.
    let path: String?
    private let fd: Int32
    private(set) var offset: Int64 = 0
    /// Plain raw uploads: hashed as they arrive.
    private var hash: SHA256? = SHA256()
    private var checksum: MessageDigest?
    private var nextProgress: Int64 = 0
    private var finished = false
    /// Called once when the request ends without a complete body, once prepared (keeps what
    /// arrived), off the engine thread.
    private let onAbort: @Sendable (UploadReceiver) -> Void
    static let progressInterval: Int64 = 8 << 20

    /// A receiver for a resumable request (`rawFile` nil) or a plain raw upload into the
    /// temporary file `rawFile`.
    init(owner: Owner, context: RequestContext, rawFile: String?, onAbort: @escaping @Sendable (UploadReceiver) -> Void) throws(HTTPError) {
        self.owner = owner
        self.context = context
        self.onAbort = onAbort
        path = rawFile
        if let rawFile {
            fd = open(rawFile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw HTTPError(errno == ENOSPC ? .insufficientStorage : .internalServerError, detail: "cannot open the upload's file: \(String(cString: strerror(errno)))")
            }
        } else {
            fd = -1
            hash = nil
        }
    }

    deinit {
        if fd >= 0 {
            close(fd)
            if let path, !finished { unlink(path) }
        }
    }

    // MARK: - Preparing

    /// Runs `prepare` at once (`schedule` nil: the store's reads are local; what it throws is
    /// thrown here, refusing the request at its head) or on the thread `schedule` gives.
    func start(on schedule: ((@escaping @Sendable () -> Void) -> Void)?, _ prepare: @escaping @Sendable () throws -> Prepared) throws {
        guard let schedule else {
            let result = Result { try prepare() }
            prepared(result)
            _ = try result.get()
            return
        }
        schedule { [self] in prepared(Result { try prepare() }) }
    }

    private func prepared(_ result: Result<Prepared, any Error>) {
        if case .success(let made) = result {
            plan = made.plan
            writer = made.writer
            offset = made.plan.startOffset
            nextProgress = offset + Self.progressInterval
            if let (algorithm, _) = made.plan.checksum { checksum = MessageDigest(algorithm) }
        }
        let (ready, waiters, aborted) = shared.withLock { shared in
            switch result {
            case .success: shared.phase = .ready
            case .failure(let error): shared.phase = .failed(error)
            }
            defer { shared.ready = nil; shared.waiters = [] }
            return (shared.ready, shared.waiters, shared.aborted)
        }
        if aborted, case .success = result {
            // The request is gone: what arrived of it is kept all the same.
            try? storeEarlyBytes()
            onAbort(self)
        }
        ready?()
        for waiter in waiters { waiter() }
    }

    /// Calls `body` once prepared: now (on this thread) if it is, else on the preparing thread.
    func whenPrepared(_ body: @escaping @Sendable () -> Void) {
        let now = shared.withLock { shared -> Bool in
            guard case .preparing = shared.phase else { return true }
            shared.waiters.append(body)
            return false
        }
        if now { body() }
    }

    // MARK: - RequestBodyStream

    func receive(_ chunk: UnsafeRawBufferPointer) throws {
        guard try storeEarlyBytesOnceReady(preparing: { $0.early.append(contentsOf: chunk) }) else { return }
        try take(chunk)
    }

    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        let waiting = shared.withLock { shared -> Bool? in
            switch shared.phase {
            case .preparing:
                shared.ready = ready
                return true
            case .failed:
                return false  // refused at the next `resumed`: now
            case .ready:
                return nil
            }
        }
        guard let waiting else { return writer?.mustWait(then: ready) ?? false }
        if !waiting { ready() }
        return true
    }

    func resumed() throws {
        try shared.withLock { shared throws in
            if case .failed(let error) = shared.phase { throw error }
        }
    }

    func finish() throws {
        guard try storeEarlyBytesOnceReady(preparing: { $0.bodyEndedEarly = true }) else { return }
        finished = true
    }

    /// Ready: the bytes that arrived while preparing are stored, and true. Still preparing:
    /// `preparing` notes what the engine brought, and false. Failed: its error.
    private func storeEarlyBytesOnceReady(preparing: (inout Shared) -> Void) throws -> Bool {
        let early = try shared.withLock { shared throws -> [UInt8]? in
            switch shared.phase {
            case .preparing:
                preparing(&shared)
                return nil
            case .failed(let error):
                throw error
            case .ready:
                defer { shared.early = [] }
                return shared.early
            }
        }
        guard let early else { return false }
        if !early.isEmpty { try early.withUnsafeBytes { try take($0) } }
        return true
    }

    func abort() {
        guard !finished else { return }
        finished = true
        let prepared = shared.withLock { shared -> Bool in
            shared.aborted = true
            if case .preparing = shared.phase { return false }
            return true
        }
        if prepared { onAbort(self) }
    }

    /// Once prepared and the body is over, for the handler (off the engine thread): the error
    /// preparing met; the early bytes stored when the body ended while preparing; a tus
    /// checksum checked — a mismatch keeps nothing of the request's bytes and answers `460`.
    func finishPrepared() throws {
        let (failure, endedEarly) = shared.withLock { shared -> ((any Error)?, Bool) in
            if case .failed(let error) = shared.phase { return (error, false) }
            return (nil, shared.bodyEndedEarly)
        }
        if let failure { throw failure }
        if endedEarly {
            try storeEarlyBytes()
            finished = true
        }
        if let (_, expected) = plan.checksum, let running = checksum.take(), running.finish() != expected {
            // The chunk is not kept: tus's checksum extension.
            offset = plan.startOffset
            _ = try writer?.keep(length: plan.length, expiresAt: plan.record?.expiresAt ?? 0, discarding: true)
            throw HTTPError(.checksumMismatch, detail: "the body's checksum does not match Upload-Checksum; nothing of it was kept",
                            headers: HTTPHeaders([("Tus-Resumable", UploadDialect.tusVersion), ("Upload-Offset", String(plan.startOffset))]))
        }
    }

    private func storeEarlyBytes() throws {
        let early = shared.withLock { shared in
            defer { shared.early = [] }
            return shared.early
        }
        if !early.isEmpty { try early.withUnsafeBytes { try take($0) } }
    }

    // MARK: - The bytes

    var received: Int64 { offset - plan.startOffset }

    private func take(_ chunk: UnsafeRawBufferPointer) throws {
        if let length = plan.length, offset + Int64(chunk.count) > length {
            throw HTTPError(.contentTooLarge, detail: "the upload's bytes go past its declared length of \(length) bytes", closesConnection: true)
        }
        if let writer {
            try writer.append(chunk)
        } else {
            var done = 0
            while done < chunk.count {
                let n = Glibc.write(fd, chunk.baseAddress! + done, chunk.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw HTTPError(errno == ENOSPC ? .insufficientStorage : .internalServerError,
                                    detail: "cannot store the upload: \(String(cString: strerror(errno)))", closesConnection: true)
                }
                done += n
            }
            if var running = hash.take() {
                running.update(chunk)
                hash = consume running
            }
        }
        if var running = checksum.take() {
            running.update(chunk)
            checksum = consume running
        }
        offset += Int64(chunk.count)
        if case .ietf(let version) = plan.dialect, DraftRules(sent: version).sendsProgress, offset >= nextProgress {
            nextProgress = offset + Self.progressInterval
            context.sendInterim(.uploadResumptionSupported, headers: HTTPHeaders([
                ("Upload-Draft-Interop-Version", String(version ?? 8)), ("Upload-Offset", String(offset)),
            ]))
        }
    }

    /// The SHA-256 of a plain raw upload's bytes. Once.
    func takeSHA256() -> String? { hash.take()?.finish() }

    /// Whether the request's bytes are kept only if they all arrived and their checksum holds.
    var isTentative: Bool { plan.checksum != nil }
}
