#if canImport(Glibc)
import Glibc
#endif

/// Where upload bytes live: a local folder (`LocalBlobStore`) or an S3-compatible bucket
/// (`S3BlobStore`). Keys are relative paths (`uploads/ab/cdef`): no leading `/`, no empty, `.`
/// or `..` segment. Every operation is synchronous and may block on disk or network; memory
/// stays bounded whatever the size of the object.
///
/// Contract (checked by the conformance suite against every implementation):
/// - `put` makes the object appear whole or not at all; a reader never sees a partial object.
/// - `get` with a range streams exactly those bytes; a range starting past the end is
///   `BlobError.invalidRange`; a missing key is `BlobError.notFound`.
/// - `delete` of a missing key succeeds (so a sweep can repeat).
/// - `list(prefix:)` returns every key starting with `prefix`, sorted by key.
public protocol BlobStore: Sendable {
    /// Stores the bytes `next` returns, chunk after chunk, until it returns nil. Only about
    /// one part (`S3BlobStore.Configuration.partSize`) is held in memory at a time.
    @discardableResult
    func put(_ key: String, chunks next: () throws -> [UInt8]?) throws -> BlobInfo

    /// Opens the object (all of it, or `range`, both ends inclusive and clamped to the object's
    /// size), calls `opened` with what `head` would return once the store has answered — before
    /// any byte reaches `sink` — then streams the bytes to `sink`, in chunks. A missing key
    /// (`BlobError.notFound`), a range past the end (`.invalidRange`) or an unreachable store
    /// (a transient error) throws before `opened` is called, so a caller can still choose its
    /// answer; once `opened` returned, a failure means the bytes were cut short. An error thrown
    /// by `opened` stops the transfer and is rethrown.
    @discardableResult
    func get(
        _ key: String, range: ClosedRange<Int64>?, opened: (BlobInfo) throws -> Void,
        into sink: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> BlobInfo

    /// The object's size and ETag, or nil when there is no such key.
    func head(_ key: String) throws -> BlobInfo?

    /// Removes the object; succeeds when it was not there.
    func delete(_ key: String) throws

    /// Every object whose key starts with `prefix`, sorted by key.
    func list(prefix: String) throws -> [BlobInfo]

    /// Stores the file at `path` under `key`, the file being the caller's to give up: after
    /// `put` returns (or throws) it may be gone.
    @discardableResult
    func put(_ key: String, movingFile path: String) throws -> BlobInfo

    // MARK: Capabilities: what callers would otherwise learn by asking which store this is

    /// True when reading an object waits on the network (a bucket): whoever serves it does so
    /// on threads that may block. False for files on this machine's disk.
    var readsBlock: Bool { get }

    /// Opens `length` bytes of the object from `offset` for an answer whose status is not sent
    /// yet: a file to send from (`LocalBlobStore`: the descriptor of the whole object's file),
    /// or the bytes on their way (`S3BlobStore`: a `BlobDownload` whose `whenOpened` tells
    /// whether the store has the object), or, for no bytes, nothing once the object is known
    /// to be there. A missing object is `BlobError.notFound`, thrown here or (a download)
    /// given to `whenOpened`.
    func open(_ key: String, offset: Int64, length: Int64, bufferLimit: Int) throws -> BlobOpening

    /// "ok", or why the store cannot be reached now; nil when there is nothing to reach (a
    /// folder on this machine: the data folder's own checks cover it). `/healthz` reports it.
    func reachability() -> String?

    /// The store's multipart uploads — an object stored part by part while its bytes arrive,
    /// made whole at the end — where it has them (a bucket); nil otherwise (a local folder:
    /// bytes arrive in a file, renamed into place).
    var multipart: (any BlobMultipart)? { get }
}

/// An object opened for serving (`BlobStore.open`).
public enum BlobOpening: Sendable {
    /// An open descriptor of the file holding the whole object: the caller sends the range from
    /// it, and closes it.
    case file(descriptor: Int32)
    /// The range on its way from the store; the caller waits for `whenOpened`, and cancels it
    /// when done.
    case download(BlobDownload)
    /// No bytes asked for, and the object is there.
    case empty
}

extension BlobStore {
    /// Streams the object's bytes (all, or `range`, both ends inclusive and clamped to the
    /// object's size) to `sink`, in chunks, returning what `head` would.
    @discardableResult
    public func get(_ key: String, range: ClosedRange<Int64>?, into sink: (UnsafeRawBufferPointer) throws -> Void) throws -> BlobInfo {
        try get(key, range: range, opened: { _ in }, into: sink)
    }

    /// Stores a file's contents, read in chunks of `chunkSize` bytes.
    @discardableResult
    public func put(_ key: String, contentsOfFile path: String, chunkSize: Int = 1 << 20) throws -> BlobInfo {
        let file = try BlobFile(readingFrom: path)
        return try put(key) { try file.read(upTo: chunkSize) }
    }

    /// Stores a file's contents, then removes the file (for stores that keep bytes elsewhere;
    /// `LocalBlobStore` renames the file into place instead).
    @discardableResult
    public func put(_ key: String, movingFile path: String) throws -> BlobInfo {
        let info = try put(key, contentsOfFile: path)
        unlink(path)
        return info
    }

    /// Stores bytes held in memory.
    @discardableResult
    public func put(_ key: String, bytes: [UInt8]) throws -> BlobInfo {
        var sent = false
        return try put(key) {
            if sent { return nil }
            sent = true
            return bytes
        }
    }

    /// The whole object (or `range`) in memory: for small objects and tests.
    public func bytes(_ key: String, range: ClosedRange<Int64>? = nil) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try get(key, range: range) { bytes.append(contentsOf: $0) }
        return bytes
    }
}

/// What a store knows of one object.
public struct BlobInfo: Sendable, Equatable {
    public let key: String
    /// Bytes in the whole object.
    public let size: Int64
    /// Changes whenever the content changes; quoted as HTTP sends it (`"…"`).
    public let etag: String
    /// When the object was stored, Unix seconds; given by `list` (what an orphan sweep needs
    /// to spare uploads still in flight), nil where the store did not say.
    public let modified: Int64?

    public init(key: String, size: Int64, etag: String, modified: Int64? = nil) {
        self.key = key
        self.size = size
        self.etag = etag
        self.modified = modified
    }
}

/// A blob store's failure.
public enum BlobError: Error, Equatable, CustomStringConvertible, Sendable {
    /// No object with this key.
    case notFound(String)
    /// The range starts at or past the end of the object.
    case invalidRange
    /// The key is empty, absolute, or has an empty, `.` or `..` segment.
    case invalidKey(String)
    /// The `s3://` URL or the configuration cannot be used.
    case invalidConfiguration(String)
    /// The server refused the credentials or the signature (403).
    case accessDenied(String)
    /// The server answered with another error status; `code` is S3's error code when sent.
    case server(status: Int, code: String, message: String)
    /// No answer: connection refused, reset, timed out (libcurl's message).
    case transport(String)
    /// A local file operation failed (`errno` description).
    case io(String)

    /// True when trying again later may succeed (network trouble, a 5xx, a 503 SlowDown).
    public var isTransient: Bool {
        switch self {
        case .transport: return true
        case .server(let status, _, _): return status >= 500
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .notFound(let key): return "no blob \(key)"
        case .invalidRange: return "range not satisfiable"
        case .invalidKey(let key): return "invalid blob key '\(key)'"
        case .invalidConfiguration(let why): return "blob store configuration: \(why)"
        case .accessDenied(let message): return "access denied: \(message)"
        case .server(let status, let code, let message): return "blob store answered \(status) \(code): \(message)"
        case .transport(let message): return "blob store unreachable: \(message)"
        case .io(let message): return "blob file: \(message)"
        }
    }
}

/// Checks a key against the rules of `BlobStore`.
func validateBlobKey(_ key: String) throws {
    let segments = key.split(separator: "/", omittingEmptySubsequences: false)
    guard !key.isEmpty, !segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }),
        !key.utf8.contains(0)
    else {
        throw BlobError.invalidKey(key)
    }
}
