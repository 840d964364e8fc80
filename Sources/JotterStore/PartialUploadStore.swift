/// A resumable upload still receiving bytes (the IETF draft "Resumable Uploads for HTTP", or
/// tus 1.0): its row. The bytes so far are in the blob store's partial area
/// (`PartialUploadRecord.blobKey(id)`); once complete, the row is replaced by an ordinary
/// upload with the same id (`PartialUploadStore.completePartialUpload`).
public struct PartialUploadRecord: Sendable, Hashable {
    /// 24 lowercase hex digits, as an upload's; the completed upload keeps it.
    public var id: String
    /// `ietf-3` … `ietf-8`, `tus`, or `raw`: how the client speaks to the upload resource.
    public var protocolName: String
    public var filename: String
    public var contentType: String
    /// The total length when the client declared it; nil until then.
    public var length: Int64?
    /// Bytes received and kept as of the last request's end (the partial file may hold more
    /// after a crash mid-request: its size is what counts on the data folder).
    public var offset: Int64
    /// The note the completed upload is attached to.
    public var noteID: Int64?
    /// `Repr-Digest`'s sha-256 (64 lowercase hex digits) the whole upload must have, if sent.
    public var expectedSHA256: String?
    /// What the blob backend keeps between requests (an S3 multipart upload's id and parts);
    /// empty on the data folder.
    public var backendState: String
    /// Unix seconds, UTC.
    public var createdAt: Int64
    /// When the sweep may delete it (Unix seconds); every request that appends moves it on.
    public var expiresAt: Int64
    /// tus's `Upload-Metadata` exactly as the creation request sent it, answered by every HEAD
    /// (and kept by the completed upload, `PartialUploadStore.uploadMetadata`); nil when none
    /// was sent. Its length is bounded by the server's request-head limit.
    public var tusMetadata: String?

    public init(
        id: String, protocolName: String, filename: String, contentType: String, length: Int64?, offset: Int64,
        noteID: Int64?, expectedSHA256: String?, backendState: String = "", createdAt: Int64, expiresAt: Int64,
        tusMetadata: String? = nil
    ) {
        self.id = id
        self.protocolName = protocolName
        self.filename = filename
        self.contentType = contentType
        self.length = length
        self.offset = offset
        self.noteID = noteID
        self.expectedSHA256 = expectedSHA256
        self.backendState = backendState
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.tusMetadata = tusMetadata
    }

    /// The key of a partial upload's bytes in the store's `BlobStore` (`partial/<id>`; with the
    /// local folder, the file `<data>/partial/<id>`), outside `uploads/` so no orphan sweep of
    /// finished uploads takes it.
    public static func blobKey(_ id: String) -> String { "partial/" + id }
}

/// A change of a partial upload's progress (`PartialUploadStore.updatePartialUpload`).
public struct PartialUploadProgress: Sendable, Hashable {
    public var offset: Int64
    public var length: Int64?
    public var expiresAt: Int64
    public var backendState: String

    public init(offset: Int64, length: Int64?, expiresAt: Int64, backendState: String) {
        self.offset = offset
        self.length = length
        self.expiresAt = expiresAt
        self.backendState = backendState
    }
}

/// What one user's partial uploads take of their limits.
public struct PartialUploadUsage: Sendable, Equatable {
    /// How many there are.
    public var count: Int
    /// The bytes they declared or hold.
    public var bytes: Int64
    /// When the first of them expires (Unix seconds), unless appended to; nil when there are none.
    public var firstExpiry: Int64?
}

/// The rows of resumable uploads in progress, each scoped by its `Owner` like every upload.
public protocol PartialUploadStore: Sendable {
    /// The partial upload `id` of `owner`, nil when there is none (or it is someone else's).
    func partialUpload(id: String, owner: Owner) throws -> PartialUploadRecord?
    /// How many partial uploads `owner` has, the bytes they declared or hold, their first expiry.
    func partialUploadUsage(owner: Owner) throws -> PartialUploadUsage
    /// Partial uploads whose `expiresAt` is at or before `now`, with their owners (at most `limit`).
    func expiredPartialUploads(now: Int64, limit: Int) throws -> [(PartialUploadRecord, Owner)]

    /// Records a new partial upload (its bytes, none yet or some, are in the partial area).
    func createPartialUpload(_ record: PartialUploadRecord, owner: Owner, completion: @escaping StoreCompletion<Void>)
    /// Records progress; false when the row is gone (cancelled, completed, expired).
    func updatePartialUpload(id: String, progress: PartialUploadProgress, owner: Owner, completion: @escaping StoreCompletion<Bool>)
    /// Replaces the partial row by the ordinary upload `upload` (same id; its bytes already
    /// moved to `UploadRecord.blobKey`), attached to the row's note when it still exists, in one
    /// transaction. nil when the partial row is gone.
    func completePartialUpload(_ upload: NewUpload, owner: Owner, completion: @escaping StoreCompletion<UploadsAdded?>)
    /// Deletes the row (the caller deletes the bytes); false when there was none.
    func deletePartialUpload(id: String, owner: Owner, completion: @escaping StoreCompletion<Bool>)
    /// The `tusMetadata` of the partial upload that became the upload `id` of `owner`: nil when
    /// it had none, or there is no such upload.
    func uploadMetadata(id: String, owner: Owner) throws -> String?
}

extension PartialUploadStore {
    /// Blocks until `createPartialUpload` is durable. Never from a completion.
    public func createPartialUpload(_ record: PartialUploadRecord, owner: Owner) throws(StoreError) {
        try StoreWait.wait { createPartialUpload(record, owner: owner, completion: $0) }
    }

    /// Blocks until `updatePartialUpload` is durable. Never from a completion.
    public func updatePartialUpload(id: String, progress: PartialUploadProgress, owner: Owner) throws(StoreError) -> Bool {
        try StoreWait.wait { updatePartialUpload(id: id, progress: progress, owner: owner, completion: $0) }
    }

    /// Blocks until `deletePartialUpload` is durable. Never from a completion.
    public func deletePartialUpload(id: String, owner: Owner) throws(StoreError) -> Bool {
        try StoreWait.wait { deletePartialUpload(id: id, owner: owner, completion: $0) }
    }

    /// Blocks until `completePartialUpload` is durable. Never from a completion.
    public func completePartialUpload(_ upload: NewUpload, owner: Owner) throws(StoreError) -> UploadsAdded? {
        try StoreWait.wait { completePartialUpload(upload, owner: owner, completion: $0) }
    }
}
