import Synchronization

/// Reads one request body the way its route's `BodyPolicy` says, within the server's limits.
///
/// `Sendable` by construction: a reader is made on the route's executor when the route runs
/// there, fed on the engine's thread, and finished on the executor again (`RequestLifecycle`'s
/// steps away), so what it changes as bytes arrive is behind a lock — taken once per piece of
/// the body, never by a request without one.
enum BodyReader: Sendable {
    case none
    /// Any bytes are refused: the route takes no body.
    case refusing(routeName: String)
    case buffered(Buffer)
    case multipart(Multipart)
    case stream(StreamReceiver)

    final class Buffer: Sendable {
        let bytes = Mutex<[UInt8]>([])
        let limit: Int
        /// Whether the limit is the route's own (else the server's `--max-body-size`).
        let isRouteLimit: Bool
        init(limit: Int, isRouteLimit: Bool) {
            self.limit = limit
            self.isRouteLimit = isRouteLimit
        }
    }

    /// A multipart body's receiver, behind its lock.
    final class Multipart: Sendable {
        let receiver: Mutex<MultipartReceiver>
        init(_ receiver: sending MultipartReceiver) { self.receiver = Mutex(receiver) }
    }

    final class StreamReceiver: Sendable {
        let stream: any RequestBodyStream
        let limit: Int64
        /// The route's own limit, not the server's `--max-upload-size`.
        let isRouteLimit: Bool
        /// The bytes received, and whether the stream is still open (neither finished nor aborted).
        let progress = Mutex<(received: Int64, open: Bool)>((0, true))
        init(stream: any RequestBodyStream, limit: Int64, isRouteLimit: Bool) {
            self.stream = stream
            self.limit = limit
            self.isRouteLimit = isRouteLimit
        }

        var open: Bool { progress.withLock { $0.open } }

        /// Closes the stream's side here; whether it was open.
        func close() -> Bool {
            progress.withLock { progress in
                defer { progress.open = false }
                return progress.open
            }
        }
    }

    /// The reader for `policy`; `413` at once when Content-Length already exceeds its limit.
    /// (A function, not an initializer: its arguments are borrowed, not copied.)
    static func make(
        policy: BodyPolicy, head: RequestHead, context: RequestContext, limits: RequestLifecycle.Limits,
        routeName: @autoclosure () -> String
    ) throws -> BodyReader {
        if case .none = policy.kind {
            guard head.hasBody else { return .none }
            let name = routeName()
            if head.declaredLength != nil { throw HTTPError(.contentTooLarge, detail: "\(name) takes no request body", closesConnection: true) }
            return .refusing(routeName: name)
        }
        if case .choosing(let pick) = policy.kind {
            let chosen = pick(head)
            if case .choosing = chosen.kind { throw HTTPError(.internalServerError, detail: "a body policy chose another choice") }
            return try make(policy: chosen, head: head, context: context, limits: limits, routeName: routeName())
        }
        return try BodyReader(policy: policy, head: head, context: context, limits: limits, routeName: routeName())
    }

    private init(
        policy: BodyPolicy, head: RequestHead, context: RequestContext, limits: RequestLifecycle.Limits, routeName: @autoclosure () -> String
    ) throws {
        let declared = head.declaredLength
        let memoryLimit = policy.memoryLimit ?? limits.maxBodySize
        let isRouteLimit = policy.memoryLimit != nil
        let media = head.headers["Content-Type"].flatMap(MediaType.init)
        func buffer() throws(HTTPError) -> BodyReader {
            if let declared, declared > Int64(memoryLimit) { throw Self.tooLarge(memoryLimit, isRouteLimit: isRouteLimit) }
            return head.hasBody ? .buffered(Buffer(limit: memoryLimit, isRouteLimit: isRouteLimit)) : .none
        }
        func multipart(_ store: (any MultipartFileStore)?, fileLimit: Int64) throws(HTTPError) -> BodyReader {
            let multipartLimits = MultipartLimits(fieldBytes: memoryLimit, fileBytes: fileLimit, parts: limits.maxParts)
            // The fields' limit is on their values: the framing has its own allowance.
            if store != nil, let declared, declared > multipartLimits.totalBytes {
                throw HTTPError(
                    .contentTooLarge, detail: "the request body is larger than the upload limit of \(fileLimit) bytes (--max-upload-size)",
                    closesConnection: true)
            }
            if store == nil, let declared, declared > multipartLimits.totalBytes {
                throw Self.tooLarge(memoryLimit, isRouteLimit: isRouteLimit)
            }
            return .multipart(
                Multipart(
                    try MultipartReceiver(
                        contentType: head.headers["Content-Type"] ?? "", limits: multipartLimits,
                        temporaryDirectory: limits.temporaryDirectory, store: store, routeName: routeName())))
        }
        switch policy.kind {
        case .none, .choosing:
            self = .none  // handled above
        case .buffered:
            self = media?.essence == "multipart/form-data" ? try multipart(nil, fileLimit: 0) : try buffer()
        case .multipart(let store):
            self =
                media?.essence == "multipart/form-data"
                ? try multipart(store ?? TemporaryFileStore(), fileLimit: policy.streamLimit ?? limits.maxUploadSize)
                : try buffer()
        case .stream(let open):
            let limit = policy.streamLimit ?? limits.maxUploadSize
            if let declared, declared > limit { throw Self.tooLarge(limit, isRouteLimit: policy.streamLimit != nil, option: "--max-upload-size") }
            self = .stream(StreamReceiver(stream: try open(head, context), limit: limit, isRouteLimit: policy.streamLimit != nil))
        }
    }

    /// Whether the consumer is behind and wants no more bytes until it calls `ready`.
    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        switch self {
        case .multipart(let multipart): return multipart.receiver.withLock { $0.mustWait(then: ready) }
        case .stream(let receiver): return receiver.open && receiver.stream.mustWait(then: ready)
        default: return false
        }
    }

    func receive(_ chunk: UnsafeRawBufferPointer) throws {
        switch self {
        case .none: throw HTTPError(.contentTooLarge, detail: "this request takes no body", closesConnection: true)
        case .refusing(let routeName): throw HTTPError(.contentTooLarge, detail: "\(routeName) takes no request body", closesConnection: true)
        case .buffered(let buffer):
            let fits = buffer.bytes.withLock { bytes in
                guard bytes.count + chunk.count <= buffer.limit else {
                    bytes = []
                    return false
                }
                bytes.append(contentsOf: chunk)
                return true
            }
            guard fits else { throw Self.tooLarge(buffer.limit, isRouteLimit: buffer.isRouteLimit) }
        case .multipart(let multipart):
            // The bytes cross into the lock as a span: borrowed, read there, not kept.
            let bytes = chunk.bytes
            try multipart.receiver.withLock { receiver throws(HTTPError) in
                try bytes.withUnsafeBytes { chunk throws(HTTPError) in try receiver.receive(chunk) }
            }
        case .stream(let receiver):
            let received = receiver.progress.withLock {
                $0.received += Int64(chunk.count)
                return $0.received
            }
            guard received <= receiver.limit else {
                throw Self.tooLarge(receiver.limit, isRouteLimit: receiver.isRouteLimit, option: "--max-upload-size")
            }
            try receiver.stream.receive(chunk)
        }
    }

    /// The body is complete: the request as the handler sees it.
    func finish(head: RequestHead) throws -> Request {
        switch self {
        case .none, .refusing: return Request(head: head)
        case .buffered(let buffer):
            return Request(
                head: head,
                body: buffer.bytes.withLock { bytes in
                    defer { bytes = [] }
                    return bytes
                })
        case .multipart(let multipart):
            let parts = try multipart.receiver.withLock { receiver throws(HTTPError) in
                try receiver.finish()
                return (receiver.fields, receiver.files)
            }
            return Request(head: head, multipart: parts)
        case .stream(let receiver):
            _ = receiver.close()
            try receiver.stream.finish()
            return Request(head: head, bodyStream: receiver.stream)
        }
    }

    /// The request is over or refused: nothing of its body stays behind (files a handler
    /// moved away are already gone).
    func discard() {
        switch self {
        case .multipart(let multipart): multipart.receiver.withLock { $0.discard() }
        case .stream(let receiver):
            if receiver.close() { receiver.stream.abort() }
        default: break
        }
    }

    /// `413` for a body over `limit`: the route's own, or the server's (named by its `option`).
    static func tooLarge(_ limit: some BinaryInteger, isRouteLimit: Bool, option: String = "--max-body-size") -> HTTPError {
        let name = isRouteLimit ? "this endpoint's limit of \(limit) bytes" : "the limit of \(limit) bytes (\(option))"
        return HTTPError(.contentTooLarge, detail: "the request body is larger than \(name)", closesConnection: true)
    }
}
