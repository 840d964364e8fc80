import Glibc
import JotterBlobs
import JotterHTTP
import JotterStore
import Synchronization
import JotterSystem

/// The bytes of partial uploads in the bucket (`--blob-store s3://…`, always with PostgreSQL:
/// a blob store with multipart uploads and a store with `bucketPartialUploads`),
/// so that any instance resumes an upload another began, and the loss of an instance loses
/// nothing that was acknowledged.
///
/// Each upload is one S3 multipart upload of its final key, `uploads/<id>`, begun with the
/// upload. Its bytes go up as parts of the bucket's part size (8 MiB; at least S3's 5 MiB)
/// while they arrive, each recorded in PostgreSQL once stored (`BucketPartialUploadStore`),
/// with the SHA-256 state after it. What is left past the last part when a request ends — less
/// than a part, "the tail" — is recorded in PostgreSQL as it is (the request's own piece, in
/// the transaction that records the offset, so the offset and the bytes behind it never
/// disagree) until later bytes fill a part with it or the upload completes; then the last part
/// goes up and `CompleteMultipartUpload` makes the object. The SHA-256 is carried across
/// requests and instances in that state, so completing never reads the object back.
///
/// Taking an upload over (every `HEAD`, append or `DELETE` on it) bumps its generation in the
/// row; the request that appended until then can record nothing more, on whichever instance it
/// runs. Before that, the appending request is asked to stop — directly on this instance, by a
/// PostgreSQL NOTIFY on the others — and given `patience` to record what it received (its part
/// on the way, its tail), so the new request resumes from every byte received; an instance
/// that went away holds nobody up longer than that. The NOTIFY names the generation it is for,
/// and stops no writer holding a later one: heard late, it would otherwise stop the request
/// that came after the one that sent it. Part numbers are handed out by the row and
/// never reused, so a part a stopped request still had on its way can never stand in for one
/// of the new request's: the completion names only recorded parts.
final class BucketPartials: PartialStorage {
    let store: any DataStore
    let rows: any BucketPartialUploadStore
    let bucket: any BlobMultipart
    /// Seconds a partial upload lives after its last append.
    let lifetime: Int64
    /// Seconds an appending request's lease lasts after its last part (or its start).
    static let lease: Int64 = 30
    /// Seconds a completing request's seal holds off take-overs.
    static let sealLease: Int64 = 120
    /// Seconds a take-over waits for the appending request to record what it received.
    static let patience = 3.0
    /// The requests appending on this instance, by upload.
    private let writers = Mutex<[String: BucketPartialWriter]>([:])
    /// When the multipart uploads no row names were last looked for.
    private let lastLeftoverSweep = Mutex<Int64>(0)

    init(store: any DataStore, rows: any BucketPartialUploadStore, bucket: any BlobMultipart, lifetime: Int64) {
        self.store = store
        self.rows = rows
        self.bucket = bucket
        self.lifetime = lifetime
        rows.observePartialUploadTakeOvers { [weak self] id, holder in self?.stopWriter(id, holder: holder) }
    }

    // MARK: - PartialStorage

    func create(_ record: PartialUploadRecord, owner: Owner, tentative: Bool) throws -> (record: PartialUploadRecord, writer: any PartialWriter) {
        var record = record
        let key = UploadRecord.blobKey(record.id)
        record.backendState = try bucket.createMultipartUpload(key)
        let empty = SHA256().state
        do {
            try rows.createPartialUpload(record, owner: owner, leaseSeconds: Self.lease, emptySHA256: empty)
        } catch {
            try? bucket.abortMultipartUpload(key, uploadID: record.backendState)
            throw error
        }
        let hold = PartialUploadHold(record: record, generation: 1, parts: [], partsSHA256: empty, tail: [])
        return (record, try register(hold, owner: owner, tentative: tentative))
    }

    func takeOver(_ id: String, owner: Owner, appending: Bool, tentative: Bool) throws -> PartialTakeOver {
        stopWriter(id)
        let deadline = MonotonicClock.seconds() + Self.patience
        var announced = false
        while true {
            let found = try rows.takeOverPartialUpload(
                id: id, owner: owner, leaseSeconds: appending ? Self.lease : 0,
                force: MonotonicClock.seconds() >= deadline, loadingBytes: appending)
            switch found {
            case .held(let hold):
                let writer = appending ? try register(hold, owner: owner, tentative: tentative) : nil
                return .held(record: hold.record, offset: hold.record.offset, writer: writer)
            case .busy(let holder):
                // Appending on another instance (or recording here): ask it to stop, wait for it.
                if !announced {
                    rows.announcePartialUploadTakeOver(id: id, holder: holder)
                    announced = true
                }
                usleep(20_000)
            case .sealed:
                return .completing
            case .missing:
                return .missing
            }
        }
    }

    func cancel(_ id: String, owner: Owner) throws -> Bool {
        guard let record = try store.partialUpload(id: id, owner: owner) else { return false }
        stopWriter(id)
        rows.announcePartialUploadTakeOver(id: id, holder: nil)
        // Once the row is gone, nothing of a request still appending can be recorded.
        guard try store.deletePartialUpload(id: id, owner: owner) else { return false }
        try? bucket.abortMultipartUpload(UploadRecord.blobKey(id), uploadID: record.backendState)
        return true
    }

    func expire(_ record: PartialUploadRecord, owner: Owner) {
        stopWriter(record.id)
        rows.announcePartialUploadTakeOver(id: record.id, holder: nil)
        guard (try? store.deletePartialUpload(id: record.id, owner: owner)) == true else { return }
        try? bucket.abortMultipartUpload(UploadRecord.blobKey(record.id), uploadID: record.backendState)
    }

    /// Multipart uploads under `uploads/` that no partial upload row names, begun longer ago
    /// than a partial upload can wait for its next byte (and an hour): what a crash left
    /// between beginning one and recording its row. Looked for at most once an hour.
    func sweepLeftovers(now: Int64, lifetime: Int64) -> Int {
        let due = lastLeftoverSweep.withLock { last -> Bool in
            guard now - last >= 3600 else { return false }
            last = now
            return true
        }
        let prefix = UploadRecord.blobKey("")
        guard due, let open = try? bucket.listMultipartUploads(prefix: prefix) else { return 0 }
        let old = open.filter { ($0.initiated ?? now) < now - lifetime - 3600 }
        guard !old.isEmpty, let known = try? rows.knownPartialUploadIDs(old.map { String($0.key.dropFirst(prefix.count)) }) else { return 0 }
        var removed = 0
        for upload in old where !known.contains(String(upload.key.dropFirst(prefix.count))) {
            if (try? bucket.abortMultipartUpload(upload.key, uploadID: upload.uploadID)) != nil { removed += 1 }
        }
        return removed
    }

    // MARK: - Writers on this instance

    private func register(_ hold: PartialUploadHold, owner: Owner, tentative: Bool) throws(HTTPError) -> BucketPartialWriter {
        let writer = try BucketPartialWriter(partials: self, hold: hold, owner: owner, tentative: tentative)
        let replaced = writers.withLock { writers in
            defer { writers[hold.record.id] = writer }
            return writers[hold.record.id]
        }
        replaced?.stop()
        return writer
    }

    func unregister(_ writer: BucketPartialWriter) {
        writers.withLock { writers in
            if writers[writer.id] === writer { writers[writer.id] = nil }
        }
    }

    /// Asks the request appending to `id` on this instance, if any, to stop and record what it
    /// has — only when it holds generation `holder` or an earlier one (nil: whichever it holds).
    private func stopWriter(_ id: String, holder: Int64? = nil) {
        guard let writer = writers.withLock({ $0[id] }), holder.map({ writer.generation <= $0 }) ?? true else { return }
        writer.stop()
    }
}

/// What one request appends to a partial upload in the bucket (`BucketPartials`).
///
/// The bytes gather in memory and are hashed as they arrive (the SHA-256 state kept at each
/// part's end); each time more than a part is there, a part goes up on a thread of its own —
/// uploaded, then recorded with that state and the next part's number (unless the request is
/// `tentative`: a tus checksum must hold first, so its parts are recorded at its end) — while
/// the next fills. When that one is full too and the first is still on its way, the engine
/// reads no more of the body until it has arrived (`mustWait`): at most two part buffers
/// (`S3PartBuffer`, reused from part to part) and a read in memory. When the request ends, `keep` or `complete` (off the engine thread) store what is left.
final class BucketPartialWriter: PartialWriter, @unchecked Sendable {
    // @unchecked: everything that changes is in `state`, behind its lock.
    let id: String
    private let owner: Owner
    private let key: String
    private let uploadID: String
    /// The generation the request holds the upload with.
    let generation: Int64
    private let tentative: Bool
    private let partials: BucketPartials
    private let partSize: Int
    private var rows: any BucketPartialUploadStore { partials.rows }
    private var bucket: any BlobMultipart { partials.bucket }

    private struct State: ~Copyable {
        /// The bytes after `base`, not in a part yet.
        var bytes: S3PartBuffer
        /// The part handed to the part thread; its buffer comes back to `bytes`.
        var sending: [UInt8] = []
        /// Where the parts end: recorded ones, and those this request has sent.
        var base: Int64
        /// The offset the row has (its tail pieces end there).
        var recorded: Int64
        /// Every part, in order: what completing names.
        var parts: [BlobPart]
        /// Parts a tentative request stored and has not recorded yet.
        var unrecorded: [BlobPart] = []
        /// The number the row handed out for the next part, with the last record.
        var reserved: Int?
        /// The SHA-256 of every byte so far (`base` + the buffer), and its state at each part's
        /// end not recorded yet, by offset.
        var hash: SHA256
        var hashed: Int64
        var boundaries: [Int64: [UInt8]] = [:]
        /// Where this request's parts start: the parts' ends are this plus whole parts.
        let partsStart: Int64
        /// A part thread runs.
        var busy = false
        /// Called when it ends: the engine reads the body on.
        var onIdle: (@Sendable () -> Void)?
        /// A part that could not be stored: the request is refused.
        var failure: HTTPError?
        /// Another request took the upload over: nothing more is accepted.
        var stopped = false
        /// Kept or completed: nothing more is recorded.
        var finished = false

        /// Hashes `bytes`, the next ones, keeping the state at each part's end they pass.
        mutating func absorb(_ bytes: UnsafeRawBufferPointer, partSize: Int) {
            var from = 0
            while from < bytes.count {
                let next = partsStart + ((hashed - partsStart) / Int64(partSize) + 1) * Int64(partSize)
                let count = Int(min(Int64(bytes.count - from), next - hashed))
                hash.update(UnsafeRawBufferPointer(rebasing: bytes[from..<from + count]))
                hashed += Int64(count)
                from += count
                if hashed == next { boundaries[next] = hash.state }
            }
        }
    }
    private let state: Mutex<State>
    /// Signalled when a part thread ends.
    private let idle = Semaphore()

    init(partials: BucketPartials, hold: PartialUploadHold, owner: Owner, tentative: Bool) throws(HTTPError) {
        guard let hash = SHA256(state: hold.partsSHA256) else {
            throw HTTPError(.internalServerError, detail: "upload \(hold.record.id): its recorded SHA-256 state is unreadable")
        }
        id = hold.record.id
        self.owner = owner
        key = UploadRecord.blobKey(hold.record.id)
        uploadID = hold.record.backendState
        generation = hold.generation
        self.tentative = tentative
        self.partials = partials
        partSize = partials.bucket.partSize
        var initial = State(
            bytes: S3PartBuffer(partSize: partials.bucket.partSize, holding: hold.tail), base: hold.partsEnd, recorded: hold.record.offset,
            parts: hold.parts,
            hash: hash, hashed: hold.partsEnd, partsStart: hold.partsEnd)
        hold.tail.withUnsafeBytes { initial.absorb($0, partSize: partials.bucket.partSize) }
        state = Mutex(initial)
    }

    // MARK: - While the body arrives (engine thread)

    func append(_ chunk: UnsafeRawBufferPointer) throws(HTTPError) {
        let partSize = partSize
        try state.withLock { (state: inout State) throws(HTTPError) in
            if let failure = state.failure { throw failure }
            if state.stopped || state.finished { throw HTTPError.takenOver(id) }
            state.bytes.append(chunk)
            state.absorb(chunk, partSize: partSize)
        }
        sendFullPart()
    }

    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.bytes.hasPartBeforeMore, state.busy else { return false }  // it just arrived: the next append sends
            state.onIdle = ready
            return true
        }
    }

    /// Hands a full part to a part thread when none is on its way (a byte past the part stays,
    /// so that the last part is `complete`'s).
    private func sendFullPart() {
        let partSize = partSize
        let cut = state.withLock { state -> (end: Int64, sha256: [UInt8]?)? in
            guard state.bytes.hasPartBeforeMore, !state.busy, state.failure == nil, !state.stopped, !state.finished else { return nil }
            state.sending = state.bytes.takePart()
            state.base += Int64(partSize)
            state.busy = true
            return (state.base, state.boundaries[state.base])
        }
        guard let cut else { return }
        let started = SystemThread.detach { [self] in
            // Swapped out and back in, so the part's buffer stays unique and is reused.
            var bytes: [UInt8] = []
            state.withLock { swap(&bytes, &$0.sending) }
            do {
                let part = try storePart(bytes)
                if !tentative {
                    let recording = PartialUploadRecording(
                        parts: [part], partsSHA256: cut.sha256, partsEnd: cut.end, offset: cut.end,
                        expiresAt: WallClock.seconds() + partials.lifetime, leaseSeconds: BucketPartials.lease,
                        reservesNextPart: true)
                    guard let recorded = try rows.recordPartialUpload(id: id, owner: owner, generation: generation, recording) else {
                        throw HTTPError.takenOver(id)
                    }
                    state.withLock { state in
                        state.reserved = recorded.reservedPart
                        state.recorded = cut.end
                        state.boundaries[cut.end] = nil
                    }
                }
                state.withLock { state in
                    state.parts.append(part)
                    if tentative { state.unrecorded.append(part) }
                }
            } catch {
                state.withLock { $0.failure = Self.refusal(error) }
            }
            let ready = state.withLock { state -> (@Sendable () -> Void)? in
                state.bytes.recycle(&bytes)
                state.busy = false
                defer { state.onIdle = nil }
                return state.onIdle
            }
            idle.signal()
            ready?()
        }
        if !started {
            state.withLock { state in
                state.busy = false
                state.failure = HTTPError(
                    .serviceUnavailable, detail: "the server cannot start the upload to the bucket now; try again shortly",
                    headers: HTTPHeaders([("Retry-After", StoreErrors.retryAfter)]), closesConnection: true)
            }
        }
    }

    // MARK: - Once the request is over (may block)

    /// Another request takes the upload over: nothing more is accepted, and what was received
    /// is recorded now (the new request waits for that), on a thread of its own.
    func stop() {
        let first = state.withLock { state -> Bool in
            guard !state.stopped, !state.finished else { return false }
            state.stopped = true
            return true
        }
        guard first else { return }
        let expiresAt = WallClock.seconds() + partials.lifetime
        let record: @Sendable () -> Void = { [self] in _ = try? keep(length: nil, expiresAt: expiresAt, discarding: tentative) }
        if !SystemThread.detach(record) { record() }
    }

    /// What keeping or completing goes on from, taken once no part is on its way.
    private struct Rest {
        var bytes: S3PartBuffer
        var base: Int64
        var recorded: Int64
        var parts: [BlobPart]
        var unrecorded: [BlobPart]
        var failure: HTTPError?
    }

    /// Waits for the part on its way, then takes what is left; nil when the request was kept
    /// or completed already (or, `completing`, was stopped: taken over).
    private func finishing(completing: Bool) throws(HTTPError) -> Rest? {
        waitIdle()
        return try state.withLock { (state: inout State) throws(HTTPError) -> Rest? in
            guard !state.finished else {
                if completing { throw HTTPError.takenOver(id) }
                return nil
            }
            if completing {
                if let failure = state.failure { throw failure }
                if state.stopped { throw HTTPError.takenOver(id) }
            }
            state.finished = true
            var bytes = S3PartBuffer(partSize: partSize)
            swap(&bytes, &state.bytes)
            return Rest(
                bytes: bytes, base: state.base, recorded: state.recorded, parts: state.parts,
                unrecorded: state.unrecorded, failure: state.failure)
        }
    }

    func keep(length: Int64?, expiresAt: Int64, discarding: Bool) throws -> Bool {
        guard let rest = try finishing(completing: false) else { return false }
        defer { partials.unregister(self) }
        guard !discarding, rest.failure == nil else {
            // Nothing of this request stays (a part of it was lost, or its checksum could not
            // hold): the row keeps what was recorded before; the lease goes.
            return try rows.recordPartialUpload(id: id, owner: owner, generation: generation, PartialUploadRecording(leaseSeconds: 0)) != nil
        }
        do {
            // Full parts first: the tail recorded is at most a part.
            var bytes = rest.bytes, base = rest.base, parts = rest.unrecorded
            while bytes.hasPartBeforeMore {
                var part = bytes.takePart()
                parts.append(try storePart(part))
                bytes.recycle(&part)
                base += Int64(partSize)
            }
            // The bytes the row has not got yet: those past its offset (or past the new parts).
            let from = max(base, rest.recorded)
            let piece = Array(bytes.filling[Int(from - base)...])
            let sha256 = parts.isEmpty ? nil : state.withLock { $0.boundaries[base] }
            let recording = PartialUploadRecording(
                parts: parts, partsSHA256: sha256, partsEnd: parts.isEmpty ? nil : base,
                tailPiece: piece.isEmpty ? nil : (from, piece), offset: base + Int64(bytes.count),
                length: length, expiresAt: expiresAt, leaseSeconds: 0)
            return try rows.recordPartialUpload(id: id, owner: owner, generation: generation, recording) != nil
        } catch {
            releaseLease()
            throw error
        }
    }

    func release() {
        guard (try? finishing(completing: false)) != nil else { return }
        releaseLease()
        partials.unregister(self)
    }

    func complete(length: Int64, expected: String?) throws -> String {
        guard let rest = try finishing(completing: true) else { throw HTTPError.takenOver(id) }
        defer { partials.unregister(self) }
        var bytes = rest.bytes, parts = rest.parts, newParts = rest.unrecorded
        guard rest.base + Int64(bytes.count) == length else {
            releaseLease()
            throw HTTPError(.internalServerError, detail: "upload \(id) holds \(rest.base + Int64(bytes.count)) bytes, not \(length)")
        }
        do {
            // The rest as parts, the last one as long as what is left (none for an empty upload).
            while !bytes.isEmpty {
                var taken = bytes.takePart()
                let part = try storePart(taken)
                bytes.recycle(&taken)
                parts.append(part)
                newParts.append(part)
            }
        } catch {
            releaseLease()
            throw error
        }
        let (whole, sha256) = state.withLock { state -> ([UInt8], String) in
            var done = SHA256()
            swap(&done, &state.hash)
            return (done.state, done.finish())
        }
        if let expected, expected != sha256 {
            try? bucket.abortMultipartUpload(key, uploadID: uploadID)
            throw PartialDigestMismatch(actual: sha256)
        }
        // Sealed: no take-over while the object is made (and, should this fail, all the parts
        // are recorded, so the upload can be completed again).
        let seal = PartialUploadRecording(
            parts: newParts, partsSHA256: whole, partsEnd: length, offset: length, length: length,
            leaseSeconds: BucketPartials.sealLease, seal: true)
        guard try rows.recordPartialUpload(id: id, owner: owner, generation: generation, seal) != nil else { throw HTTPError.takenOver(id) }
        do {
            if parts.isEmpty {
                // No multipart upload completes without a part: an empty object instead.
                try bucket.put(key, bytes: [])
                try? bucket.abortMultipartUpload(key, uploadID: uploadID)
            } else {
                do {
                    try bucket.completeMultipartUpload(key, uploadID: uploadID, parts: parts)
                } catch BlobError.notFound(_) {
                    // Completed by an earlier completion that went away before its row changed.
                    guard let found = try bucket.head(key), found.size == length else { throw BlobError.notFound(key) }
                }
            }
        } catch {
            // Resumable again: its offset is its length; an empty append completes it.
            releaseLease()
            throw error
        }
        return sha256
    }

    // MARK: - Parts

    /// Stores `bytes` as the upload's next part, under the number the row handed out with the
    /// last record, or a new one (which also says the request still holds the upload).
    private func storePart(_ bytes: [UInt8]) throws -> BlobPart {
        let reserved = state.withLock { state in
            defer { state.reserved = nil }
            return state.reserved
        }
        guard
            let number = try reserved
                ?? rows.reservePartialUploadPart(id: id, owner: owner, generation: generation, leaseSeconds: BucketPartials.lease)
        else {
            throw HTTPError.takenOver(id)
        }
        guard number <= bucket.maximumPartNumber else {
            throw HTTPError(
                .contentTooLarge, detail: "upload \(id) would need more than \(bucket.maximumPartNumber) parts in the bucket",
                closesConnection: true)
        }
        return try bucket.uploadPart(key, uploadID: uploadID, number: number, bytes: bytes)
    }

    /// Gives the lease up (and a seal), recording nothing else: a take-over need not wait.
    private func releaseLease() {
        _ = try? rows.recordPartialUpload(id: id, owner: owner, generation: generation, PartialUploadRecording(leaseSeconds: 0))
    }

    /// Waits until no part thread runs. Several may wait (a stop's recording, the request's
    /// own end): each one woken passes the signal on, so none sleeps past the part's end.
    private func waitIdle() {
        while state.withLock({ $0.busy }) { idle.wait() }
        idle.signal()
    }

    /// The error a failed part answers the request with (the body is not read further).
    private static func refusal(_ error: any Error) -> HTTPError {
        var refusal =
            (error as? HTTPError) ?? StoreErrors.http(error)
            ?? HTTPError(.internalServerError, detail: "the upload to the blob store failed: \(error)")
        refusal.closesConnection = true
        return refusal
    }
}
