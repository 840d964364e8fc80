import JotterBlobs

/// The state of resumable uploads whose bytes go to an S3 bucket as they arrive, kept where
/// every instance sees it (PostgreSQL: a bucket is only used with it), so that any instance
/// resumes an upload another one began, and no two requests ever append to one upload.
///
/// An upload's bytes are one S3 multipart upload (its id is the row's `backendState`): parts
/// of the bucket's part size, each recorded here once stored, and the bytes after the last part
/// (less than a part: "the tail") recorded here as they are, one piece per request, until they
/// fill a part or the upload completes. Here too: the SHA-256 state after the parts, so the
/// finished upload's SHA-256 needs no second read of its bytes.
///
/// **Holding an upload.** Every request on an upload (`HEAD`, an append, a cancel) first takes
/// it over (`takeOverPartialUpload`), which bumps the row's generation; every later write of
/// the request names the generation it got, and is refused once another request has taken the
/// upload over — so a request that was overtaken can no longer record anything, wherever it
/// runs. A request appending holds a lease (`writer_until`, renewed by each part); a take-over
/// while it runs is refused (`.busy`, naming the holder's generation) so that the caller can
/// first ask that holder to stop (`announcePartialUploadTakeOver`: every instance's
/// `observePartialUploadTakeOvers` handler hears it) and give it a moment to record what it
/// received, then try again — or force it. An announcement names the generation it is for:
/// heard late (after the announcing request was answered, and a later request took the upload
/// over), it must not stop that later request.
///
/// All calls block (the network): never on an engine thread.
public protocol BucketPartialUploadStore: Sendable {
    /// Records a new partial upload held by its creating request: generation 1, a lease of
    /// `leaseSeconds`, no parts, the SHA-256 state of no bytes `emptySHA256`.
    func createPartialUpload(_ record: PartialUploadRecord, owner: Owner, leaseSeconds: Int64, emptySHA256: [UInt8]) throws(StoreError)

    /// Takes the upload over for a new request. A request that appends passes `leaseSeconds`
    /// (0 for one that does not: `HEAD`, `DELETE`) and `loadingBytes` (its parts and tail).
    /// `.busy` while another request's lease runs, unless `force`. A sealed upload whose sealer's
    /// lease ran out (it failed, or its instance went away) is unsealed and taken over.
    func takeOverPartialUpload(id: String, owner: Owner, leaseSeconds: Int64, force: Bool, loadingBytes: Bool) throws(StoreError)
        -> PartialUploadTakeOver

    /// The next part number for the holder of `generation` (renewing its lease); nil when
    /// another request took the upload over.
    func reservePartialUploadPart(id: String, owner: Owner, generation: Int64, leaseSeconds: Int64) throws(StoreError) -> Int?

    /// Records what the holder of `generation` stored, in one transaction (with the next part's
    /// number when `recording.reservesNextPart`); nil (nothing recorded) when another request
    /// took the upload over or it is gone.
    func recordPartialUpload(id: String, owner: Owner, generation: Int64, _ recording: PartialUploadRecording) throws(StoreError)
        -> PartialUploadRecorded?

    /// Asks every instance to stop the request appending to `id` that holds generation
    /// `holder` (or an earlier one): it records what it has. nil: any request on it (the
    /// upload is being removed).
    func announcePartialUploadTakeOver(id: String, holder: Int64?)

    /// Calls `handler` with the upload's id and the holder's generation (nil: any) of every
    /// take-over announced, on any instance (this one's included). Set once, before serving.
    func observePartialUploadTakeOvers(_ handler: @escaping @Sendable (_ id: String, _ holder: Int64?) -> Void)

    /// Which of `ids` have a partial upload row (for the sweep of multipart uploads no row names).
    func knownPartialUploadIDs(_ ids: [String]) throws(StoreError) -> Set<String>
}

/// What `takeOverPartialUpload` found.
public enum PartialUploadTakeOver: Sendable {
    /// The caller holds the upload now.
    case held(PartialUploadHold)
    /// Another request appending holds a lease — the holder of generation `holder`: ask it to
    /// stop, then try again (or force).
    case busy(holder: Int64)
    /// A request is completing it (sealed, its lease running).
    case sealed
    /// No such partial upload of this owner (completed, cancelled, expired, or never).
    case missing
}

/// A partial upload as its new holder takes it.
public struct PartialUploadHold: Sendable {
    public var record: PartialUploadRecord
    /// What the holder's writes name.
    public var generation: Int64
    /// The stored parts, by number (loaded for a request that appends).
    public var parts: [BlobPart]
    /// The SHA-256 state after the parts' bytes (`JotterSystem.SHA256.state`).
    public var partsSHA256: [UInt8]
    /// The bytes after the parts, up to `record.offset` (loaded for a request that appends).
    public var tail: [UInt8]

    public init(record: PartialUploadRecord, generation: Int64, parts: [BlobPart], partsSHA256: [UInt8], tail: [UInt8]) {
        self.record = record
        self.generation = generation
        self.parts = parts
        self.partsSHA256 = partsSHA256
        self.tail = tail
    }

    /// Where the parts end: the tail's first byte.
    public var partsEnd: Int64 { parts.reduce(0) { $0 + $1.size } }
}

/// What a holder records (`recordPartialUpload`); nil fields stay as they are.
public struct PartialUploadRecording: Sendable {
    /// Parts stored since the last recording, in order.
    public var parts: [BlobPart] = []
    /// The SHA-256 state after all the parts (with `parts`).
    public var partsSHA256: [UInt8]?
    /// Where the parts now end: tail pieces before it are dropped (their bytes are in a part).
    public var partsEnd: Int64?
    /// Bytes after the parts not recorded yet, and where they start.
    public var tailPiece: (start: Int64, bytes: [UInt8])?
    /// The bytes kept so far.
    public var offset: Int64?
    public var length: Int64?
    public var expiresAt: Int64?
    /// The holder's lease from now on; 0 releases it (the request is over).
    public var leaseSeconds: Int64 = 0
    /// Being completed from now on: no take-over until the lease runs out.
    public var seal = false
    /// Hand out the next part number too (a request sending part after part saves a commit each).
    public var reservesNextPart = false

    public init(
        parts: [BlobPart] = [], partsSHA256: [UInt8]? = nil, partsEnd: Int64? = nil,
        tailPiece: (start: Int64, bytes: [UInt8])? = nil, offset: Int64? = nil, length: Int64? = nil,
        expiresAt: Int64? = nil, leaseSeconds: Int64 = 0, seal: Bool = false, reservesNextPart: Bool = false
    ) {
        self.parts = parts
        self.partsSHA256 = partsSHA256
        self.partsEnd = partsEnd
        self.tailPiece = tailPiece
        self.offset = offset
        self.length = length
        self.expiresAt = expiresAt
        self.leaseSeconds = leaseSeconds
        self.seal = seal
        self.reservesNextPart = reservesNextPart
    }
}

/// What `recordPartialUpload` did.
public struct PartialUploadRecorded: Sendable, Equatable {
    /// The part number handed out with it (`PartialUploadRecording.reservesNextPart`).
    public var reservedPart: Int?

    public init(reservedPart: Int?) { self.reservedPart = reservedPart }
}
