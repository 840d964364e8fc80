/// Multipart uploads: an object stored part by part while its bytes arrive — no temporary file,
/// no part held longer than it takes to send it — and made whole at the end. A store that has
/// them (`S3BlobStore`) gives itself as `BlobStore.multipart`; the streamed and resumable
/// uploads of the server are built on this, whatever the store.
///
/// A multipart upload is invisible until completed; one neither completed nor aborted keeps
/// its parts until aborted, so a caller that gives up aborts, and a sweep finds leftovers with
/// `listMultipartUploads(prefix:)`. Every part but the last is `partSize` bytes; part numbers
/// run from 1 to `maximumPartNumber`; uploading a part number again replaces that part.
public protocol BlobMultipart: BlobStore {
    /// Bytes in every part but the last (and the largest object worth one `put`).
    var partSize: Int { get }

    /// The highest part number the store accepts.
    var maximumPartNumber: Int { get }

    /// Begins a multipart upload of `key`; the answer is its upload id, for every later call.
    func createMultipartUpload(_ key: String) throws -> String

    /// Stores part `number` of the upload.
    func uploadPart(_ key: String, uploadID: String, number: Int, bytes: [UInt8]) throws -> BlobPart

    /// Makes the object of `parts` (in order); a missing upload is `BlobError.notFound`.
    @discardableResult
    func completeMultipartUpload(_ key: String, uploadID: String, parts: [BlobPart]) throws -> BlobInfo

    /// Drops the upload and its parts.
    func abortMultipartUpload(_ key: String, uploadID: String) throws

    /// Every multipart upload begun under `prefix` and neither completed nor aborted, sorted by
    /// key then upload id.
    func listMultipartUploads(prefix: String) throws -> [BlobMultipartUpload]
}

/// One part as stored: its number, the ETag the store gave it (quoted), and its size.
public struct BlobPart: Sendable, Equatable {
    public let number: Int
    public let etag: String
    public let size: Int64

    public init(number: Int, etag: String, size: Int64) {
        self.number = number
        self.etag = etag
        self.size = size
    }
}

/// A multipart upload begun and neither completed nor aborted.
public struct BlobMultipartUpload: Sendable, Equatable {
    public let key: String
    public let uploadID: String
    /// When it was begun, Unix seconds (nil where the store did not say).
    public let initiated: Int64?
}
