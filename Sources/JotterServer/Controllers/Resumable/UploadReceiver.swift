import Glibc
import JotterHTTP
import JotterStore
import JotterStoreHTTP
import JotterSystem

/// Receives the raw body of an upload request (`POST /uploads` with the file's bytes, or an
/// append `PATCH /uploads/{id}`): into a temporary file for a plain raw upload, into the
/// upload's `PartialWriter` for a resumable one.
///
/// It is made — with what the request needs of the store: the row, the take-over — on the
/// route's executor (the store's threads); its bytes come on the request's engine thread; its
/// `finish` runs on the executor again, which may block.
final class UploadReceiver: RequestBodyStream, @unchecked Sendable {
    // @unchecked: used by one thread at a time, as the engine hands the request over.

    /// What the request carries, fixed at its head.
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
        /// The SHA-256 (hex) this request's `Repr-Digest` gives the whole upload, when its
        /// creation gave none: checked if this request completes it.
        var reprDigest: String? = nil
        /// Whether a cut request keeps what arrived, resumable; false for a one-shot upload
        /// let past its user's limits, which is cancelled instead.
        var keptIfCut = true
    }

    let plan: Plan
    let owner: Owner
    let context: RequestContext
    /// Where a resumable upload's bytes go (nil: a plain raw upload).
    let writer: (any PartialWriter)?
    /// A plain raw upload's temporary file.
    let path: String?
    private var fd: Int32
    /// Whether the raw file is still this receiver's to delete (false once moved into the
    /// blob store, or deleted).
    private var ownsFile: Bool
    private(set) var offset: Int64
    /// Plain raw uploads: hashed as they arrive.
    private var hash: SHA256? = SHA256()
    private var checksum: MessageDigest?
    /// A plain raw upload's SHA-256, once its whole body is here (`finish`).
    private(set) var sha256: String?
    private var nextProgress: Int64
    private var finished = false
    /// Called once when the request ends without a complete body (keeps what arrived); must
    /// not block (the engine thread may call it).
    private let onAbort: @Sendable (UploadReceiver) -> Void
    static let progressInterval: Int64 = 8 << 20

    /// A receiver for a resumable request (`writer`) or a plain raw upload into the temporary
    /// file `rawFile`.
    init(
        plan: Plan, owner: Owner, context: RequestContext, writer: (any PartialWriter)?, rawFile: String?,
        onAbort: @escaping @Sendable (UploadReceiver) -> Void
    ) throws(HTTPError) {
        self.plan = plan
        self.owner = owner
        self.context = context
        self.writer = writer
        self.onAbort = onAbort
        path = rawFile
        ownsFile = rawFile != nil
        offset = plan.startOffset
        nextProgress = plan.startOffset + Self.progressInterval
        if let rawFile {
            fd = open(rawFile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw HTTPError(
                    errno == ENOSPC ? .insufficientStorage : .internalServerError,
                    detail: "cannot open the upload's file: \(String(cString: strerror(errno)))")
            }
        } else {
            fd = -1
            hash = nil
        }
        if let (algorithm, _) = plan.checksum { checksum = MessageDigest(algorithm) }
    }

    deinit {
        discardFile()
    }

    /// Deletes a plain raw upload's temporary file unless it was moved into the blob store:
    /// whatever ends the request — cut, refused, answered without storing it (an
    /// `Idempotency-Key` replay) — leaves none of its bytes in `tmp/`. Quick (the engine thread
    /// may call it), and only once.
    func discardFile() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
        if ownsFile, let path {
            ownsFile = false
            unlink(path)
        }
    }

    /// The raw file was moved into the blob store: it is no longer this receiver's to delete.
    func fileMoved() { ownsFile = false }

    var received: Int64 { offset - plan.startOffset }

    func receive(_ chunk: UnsafeRawBufferPointer) throws {
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
                    throw HTTPError(
                        errno == ENOSPC ? .insufficientStorage : .internalServerError,
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
            context.sendInterim(
                .uploadResumptionSupported,
                headers: HTTPHeaders([
                    ("Upload-Draft-Interop-Version", String(version ?? 8)), ("Upload-Offset", String(offset)),
                ]))
        }
    }

    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        writer?.mustWait(then: ready) ?? false
    }

    /// The whole body is here (on the route's executor): a tus checksum is checked — a mismatch
    /// keeps nothing of the request's bytes and answers `460`.
    func finish() throws {
        finished = true
        if path != nil {
            sha256 = hash.take()?.finish()
            close(fd)
            fd = -1
        }
        if let (_, expected) = plan.checksum, let running = checksum.take(), running.finish() != expected {
            // The chunk is not kept: tus's checksum extension.
            offset = plan.startOffset
            _ = try writer?.keep(length: plan.length, expiresAt: plan.record?.expiresAt ?? 0, discarding: true)
            throw HTTPError(
                .checksumMismatch, detail: "the body's checksum does not match Upload-Checksum; nothing of it was kept",
                headers: HTTPHeaders([("Tus-Resumable", UploadDialect.tusVersion), ("Upload-Offset", String(plan.startOffset))]))
        }
    }

    func abort() {
        guard !finished else { return }
        finished = true
        discardFile()
        onAbort(self)
    }

    /// Whether the request's bytes are kept only if they all arrived and their checksum holds.
    var isTentative: Bool { plan.checksum != nil }
}
