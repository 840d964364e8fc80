import JotterBlobs
import JotterHTTP
import JotterStore

/// Where the bytes of partial uploads are kept between requests, and who may append to each:
/// the data folder of the one instance (`PartialFiles`: a file per upload) or the bucket every
/// instance shares (`BucketPartials`: an S3 multipart upload per upload, its state in
/// PostgreSQL).
///
/// One request at a time holds an upload. Every request on it (`HEAD`, an append, `DELETE`)
/// takes it over first: a request still appending stops — its later bytes are refused, what
/// it received is kept — and only then does the new one learn the offset. Every call blocks
/// (disk, database, bucket): on a store thread, or the engine thread with SQLite.
package protocol PartialStorage: Sendable {
    /// Records a new upload (`record`'s `backendState` is filled in here) and gives the
    /// creating request its writer.
    func create(_ record: PartialUploadRecord, owner: Owner, tentative: Bool) throws -> (record: PartialUploadRecord, writer: any PartialWriter)

    /// Takes upload `id` over for a new request; with `appending`, with a writer for its bytes
    /// (`tentative`: they are kept only if the request ends whole — a tus checksum).
    func takeOver(_ id: String, owner: Owner, appending: Bool, tentative: Bool) throws -> PartialTakeOver

    /// Deletes the upload — row and bytes — stopping any request appending to it; false when
    /// `owner` has no such partial upload.
    func cancel(_ id: String, owner: Owner) throws -> Bool

    /// Deletes an expired upload (the sweep): as `cancel`.
    func expire(_ record: PartialUploadRecord, owner: Owner)

    /// Removes what no row names any more: bytes a crash left between storing and recording
    /// them, older than any row can live (`lifetime` seconds).
    func sweepLeftovers(now: Int64, lifetime: Int64) -> Int
}

extension DataStore {
    /// Where this store keeps the bytes of partial uploads between requests: in the blob store,
    /// as multipart uploads whose state every instance shares, when the blob store has them and
    /// the store keeps rows for them (`blobs.multipart`, `bucketPartialUploads`: PostgreSQL
    /// with a bucket) — `BucketPartials`; otherwise a file each in `<dataDirectory>/partial`
    /// (`PartialFiles`). `lifetime`: seconds a partial upload lives after its last append.
    package func partialStorage(dataDirectory: String, lifetime: Int64) throws -> any PartialStorage {
        if let multipart = blobs.multipart, let rows = bucketPartialUploads {
            return BucketPartials(store: self, rows: rows, bucket: multipart, lifetime: lifetime)
        }
        return try PartialFiles(directory: dataDirectory + "/partial", store: self)
    }
}

/// What a take-over found.
package enum PartialTakeOver {
    /// The request holds the upload: its row, the bytes kept, and (when appending) its writer.
    case held(record: PartialUploadRecord, offset: Int64, writer: (any PartialWriter)?)
    /// Being completed (or removed) by another request right now: its row changes soon.
    case completing
    /// No partial upload of this owner has the id.
    case missing
}

/// The bytes one request appends to a partial upload it holds. `append` and `mustWait` come
/// from the request's engine thread while its body arrives; the rest once it has ended, from a
/// thread that may block.
package protocol PartialWriter: AnyObject, Sendable {
    /// Stores the next bytes of the request (at the writer's own offset). A request that was
    /// taken over is refused (`409`, its connection closed), as is one whose storage failed.
    func append(_ chunk: UnsafeRawBufferPointer) throws(HTTPError)

    /// Back-pressure (`RequestBodyStream.mustWait`).
    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool

    /// The request ended without completing the upload: its bytes are made durable and the row
    /// learns the offset (with `length`, `expiresAt`) — or, `discarding`, none of the
    /// request's bytes stay (a tus checksum that failed, or could not be checked). False when
    /// the upload was taken over or removed meanwhile (nothing recorded); throws when the bytes
    /// could not be stored.
    func keep(length: Int64?, expiresAt: Int64, discarding: Bool) throws -> Bool

    /// The request gives the upload up having stored nothing (it was refused): the upload
    /// stays as it was; a take-over need not wait for this request.
    func release()

    /// The upload is whole at `length` bytes: it becomes the object `UploadRecord.blobKey(id)`
    /// and its SHA-256 is returned. With `expected` and another SHA-256, its bytes are removed
    /// and `PartialDigestMismatch` thrown (the caller deletes the row). `409` when another
    /// request took the upload over.
    func complete(length: Int64, expected: String?) throws -> String
}

/// The bytes of a completed upload do not have the SHA-256 `Repr-Digest` gave; they are gone.
package struct PartialDigestMismatch: Error {
    /// The SHA-256 the bytes have.
    package let actual: String
}

extension HTTPError {
    /// A request whose upload another request took over: what it sends next is refused.
    package static func takenOver(_ id: String) -> HTTPError {
        HTTPError(HTTPStatus(409), detail: "a newer request took upload \(id) over", closesConnection: true)
    }
}
