/// How a route reads its request body — decided from the head, before a body byte is accepted.
///
/// ```swift
/// routes.get("/notes/:id", handler: show)                                  // .noBody: GET takes none
/// routes.post("/notes", body: .buffered(limit: 64 << 10), handler: create) // in memory, bounded
/// routes.post("/uploads", body: .multipart(), handler: upload)             // files streamed to a store
/// routes.put("/raw/:id", body: .stream { head, _ in try Receiver(head) }, handler: finish)
/// ```
///
/// Defaults: `.noBody` for `GET`, `HEAD` and `OPTIONS`, `.buffered()` otherwise. A body sent to a
/// route that takes none, or a file part sent to a route that takes no files, is refused
/// before anything is stored.
public struct BodyPolicy: Sendable {
    enum Kind: Sendable {
        case none
        case buffered
        case multipart(files: (any MultipartFileStore)?)
        case stream(@Sendable (RequestHead, RequestContext) throws -> any RequestBodyStream)
        /// Picked from the head (after the head phase of middleware).
        case choosing(@Sendable (RequestHead) -> BodyPolicy)
    }

    let kind: Kind
    /// Bytes held in memory: a buffered body, or the plain fields of a multipart one. nil: the
    /// server's `maxBodySize`.
    let memoryLimit: Int?
    /// Bytes of all file parts together, or of a raw stream. nil: the server's `maxUploadSize`.
    let streamLimit: Int64?

    /// No body: any body byte is refused (`413`). (Not `.none`, which in a `BodyPolicy?`
    /// argument would mean "no policy given" and so the default.)
    public static let noBody = BodyPolicy(kind: .none, memoryLimit: nil, streamLimit: nil)

    /// The body in memory, at most `limit` bytes (nil: the server's `--max-body-size`). A
    /// multipart body is accepted for its plain fields; a file part in it is refused (`415`).
    /// Only a buffered body can carry a `_method` override (to a route whose body is buffered
    /// or that takes none).
    public static func buffered(limit: Int? = nil) -> BodyPolicy {
        BodyPolicy(kind: .buffered, memoryLimit: limit, streamLimit: nil)
    }

    /// A `multipart/form-data` body whose file parts stream into `files` (nil: the server's
    /// temporary files, hashed as they are written) and whose plain fields are held in memory.
    /// Any other body is held in memory, as `.buffered` would.
    public static func multipart(files: (any MultipartFileStore)? = nil, fieldLimit: Int? = nil, fileLimit: Int64? = nil) -> BodyPolicy {
        BodyPolicy(kind: .multipart(files: files), memoryLimit: fieldLimit, streamLimit: fileLimit)
    }

    /// The raw body handed chunk by chunk to the receiver `open` makes for the request (after
    /// the head phase of middleware), at most `limit` bytes (nil: the server's `--max-upload-size`).
    public static func stream(limit: Int64? = nil, _ open: @escaping @Sendable (RequestHead, RequestContext) throws -> any RequestBodyStream)
        -> BodyPolicy
    {
        BodyPolicy(kind: .stream(open), memoryLimit: nil, streamLimit: limit)
    }

    /// The policy `pick` returns for the request's head (its Content-Type, its fields): one
    /// route that takes a multipart form or a raw body, or a raw append or a small form.
    ///
    /// ```swift
    /// routes.post("/uploads", body: .choosing { head in
    ///     head.headers["Content-Type"]?.hasPrefix("multipart/") == true ? .multipart() : .stream { … }
    /// }, handler: create)
    /// ```
    public static func choosing(_ pick: @escaping @Sendable (RequestHead) -> BodyPolicy) -> BodyPolicy {
        BodyPolicy(kind: .choosing(pick), memoryLimit: nil, streamLimit: nil)
    }

    /// The default for `method`.
    static func standard(for method: HTTPMethod) -> BodyPolicy {
        method == .get || method == .head || method == .options ? .noBody : .buffered()
    }

    var isBuffered: Bool { if case .buffered = kind { true } else { false } }

    /// The policy for `head`: a choosing one's pick, any other itself.
    func resolved(for head: RequestHead) -> BodyPolicy {
        if case .choosing(let pick) = kind { pick(head) } else { self }
    }

    /// Whether a `_method` field may be read from a POST's body to pick among routes with this
    /// policy (resolved for the POST's head): a buffered body, or none (its route reads none).
    var letsBodyChoose: Bool {
        switch kind {
        case .buffered, .none: true
        default: false
        }
    }
}

/// Receives a raw request body as it arrives (`BodyPolicy.stream`). Used by one engine thread
/// at a time; `finish` or `abort` is called exactly once.
public protocol RequestBodyStream: AnyObject, Sendable {
    /// The next bytes of the body; throwing refuses the request (the rest is discarded).
    func receive(_ chunk: UnsafeRawBufferPointer) throws
    /// The body is complete; throwing answers with that error instead of calling the handler.
    func finish() throws
    /// The request ended without a complete body, or was refused: release what was kept.
    func abort()
    /// Back-pressure, as `MultipartFileWriter.mustWait`, asked after each piece of the body:
    /// true when the receiver is behind (a part still on its way to a bucket) and wants no more
    /// bytes for now; it then calls `ready` once, from any thread, and the engine reads no more
    /// of the body until then. `receive` must still accept what was already read (one read of
    /// the socket, or of an HTTP/2 connection).
    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool
}

extension RequestBodyStream {
    /// Never behind, unless a receiver says otherwise.
    public func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool { false }
}

/// Where the file parts of multipart bodies go while they stream in (`BodyPolicy.multipart`):
/// temporary files by default; object storage can plug in here.
public protocol MultipartFileStore: Sendable {
    /// A writer for one file part. `temporaryDirectory` is the server's folder for files of
    /// requests in flight.
    func open(field: String, filename: String, contentType: String, temporaryDirectory: String) throws(HTTPError) -> any MultipartFileWriter
}

/// One file part being written (`MultipartFileStore`). Used only by the engine thread of its request.
public protocol MultipartFileWriter: AnyObject {
    /// Where the bytes are: a path for temporary files, a key for object storage.
    var location: String { get }
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError)
    /// All bytes written: their count and SHA-256 (64 lowercase hex digits).
    func finish() throws(HTTPError) -> (size: Int64, sha256: String)
    /// For a text part, whether all its bytes were well-formed UTF-8; nil when not checked.
    var isUTF8: Bool? { get }
    /// Removes what was written (the request failed, or its handler did not take the file).
    func discard()
    /// Back-pressure: true when the writer is behind (say, a part still on its way to a bucket)
    /// and wants no more bytes for now; it then calls `ready` once, from any thread, when it
    /// can take them, and the engine reads no more of the request's body until then. `write`
    /// must still accept what was already read (at most one read of the socket).
    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool
}

extension MultipartFileWriter {
    /// Not checked, unless a writer says otherwise.
    public var isUTF8: Bool? { nil }
    /// Never behind, unless a writer says otherwise (a file on a local disk).
    public func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool { false }
}

/// A `MultipartFileStore` that keeps nothing of a file part but its size and SHA-256, for a
/// handler that only describes the files it receives (`/echo`): no byte reaches the disk, so a
/// request, however large or slow, holds no storage.
public struct DigestOnlyStore: MultipartFileStore {
    public init() {}
    public func open(field: String, filename: String, contentType: String, temporaryDirectory: String) throws(HTTPError) -> any MultipartFileWriter {
        DigestOnlyWriter(checksUTF8: MediaType(contentType)?.essence.hasPrefix("text/") == true)
    }
}

/// The default `MultipartFileStore`: a temporary file per part, hashed as it is written.
public struct TemporaryFileStore: MultipartFileStore {
    public init() {}
    public func open(field: String, filename: String, contentType: String, temporaryDirectory: String) throws(HTTPError) -> any MultipartFileWriter {
        // Text is checked for UTF-8 as it streams in, so it can be served with its charset.
        try FileSink(directory: temporaryDirectory, checksUTF8: MediaType(contentType)?.essence.hasPrefix("text/") == true)
    }
}
