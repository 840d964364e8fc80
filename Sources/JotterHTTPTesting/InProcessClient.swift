import Dispatch
import Glibc
import JotterHTTP
import Synchronization

/// Sends requests through a router's full lifecycle — framing, routing, body policies,
/// middleware in all three phases, later replies — with no socket and no engine thread: fast
/// tests of routes and middleware.
///
/// ```swift
/// let client = InProcessClient(router: routes.build())
/// let answer = client.send("POST", "/notes", headers: [("Content-Type", "application/json")], body: #"{"body":"x"}"#)
/// #expect(answer.status == 201)
/// ```
public struct InProcessClient: Sendable {
    /// What came back, and what the lifecycle did on the way.
    public struct Answer: Sendable {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: [UInt8]
        /// Body bytes the lifecycle had accepted when the answer was decided (a refusal at the
        /// head accepts none).
        public var bytesAccepted: Int
        /// Whether the answer was decided before the body was sent.
        public var answeredBeforeBody: Bool

        public var text: String { String(decoding: body, as: UTF8.self) }
        public func header(_ name: String) -> String? { headers[name] }
    }

    let router: Router
    let limits: RequestLifecycle.Limits

    public init(
        router: Router, maxBodySize: Int = 1 << 20, maxUploadSize: Int64 = 1 << 30, maxParts: Int = 1000,
        temporaryDirectory: String = "/tmp"
    ) {
        self.router = router
        limits = RequestLifecycle.Limits(
            maxBodySize: maxBodySize, maxUploadSize: maxUploadSize, maxParts: maxParts,
            temporaryDirectory: temporaryDirectory)
    }

    /// Sends one request; the body in chunks of `chunkSize` bytes. A `Host` header is added
    /// when missing, and `Content-Length` for a non-empty body unless `chunked` is set.
    public func send(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [],
        chunkSize: Int = 16 << 10, chunked: Bool = false, remoteAddress: String = "127.0.0.1"
    ) -> Answer {
        var fields = HTTPHeaders(headers)
        if !fields.contains("Host") { fields.add("Host", "localhost") }
        if !body.isEmpty, !fields.contains("Content-Length"), !fields.contains("Transfer-Encoding") {
            if chunked { fields.add("Transfer-Encoding", "chunked") } else { fields.add("Content-Length", String(body.count)) }
        }
        let lifecycle = RequestLifecycle(router: router, limits: limits, target: target, remoteAddress: remoteAddress, clock: .system)
        var accepted = 0
        var action = Self.settle(lifecycle.headerComplete(method: method, version: "HTTP/1.1", headers: fields), lifecycle)
        var beforeBody = true
        if case .proceed = action {
            var offset = 0
            while offset < body.count, case .proceed = action {
                let end = min(body.count, offset + chunkSize)
                action = body[offset..<end].withUnsafeBytes { lifecycle.receive($0) }
                if case .proceed = action, !lifecycle.isRefused { accepted = end }
                offset = end
            }
            beforeBody = false
            if case .proceed = action { action = Self.settle(lifecycle.bodyComplete(), lifecycle) }
        }
        let response: Response?
        switch action {
        case .respond(let answer): response = answer
        case .wait(let later): response = Self.wait(for: later, lifecycle: lifecycle)
        case .proceed, .close, .elsewhere: response = nil
        }
        guard let response else {
            lifecycle.completed(status: 0, bytesSent: 0, outcome: .error)
            return Answer(status: 0, headers: HTTPHeaders(), body: [], bytesAccepted: accepted, answeredBeforeBody: beforeBody)
        }
        let bytes = Self.body(of: response)
        lifecycle.completed(status: response.status.code, bytesSent: bytes.count, outcome: .sent)
        var answerHeaders = response.headers
        answerHeaders.add("X-Content-Type-Options", "nosniff")
        return Answer(
            status: response.status.code, headers: answerHeaders, body: method == "HEAD" ? [] : bytes,
            bytesAccepted: accepted, answeredBeforeBody: beforeBody && !body.isEmpty)
    }

    public func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: String) -> Answer {
        send(method, target, headers: headers, body: Array(body.utf8))
    }

    /// A step on the route's executor, waited for: its action.
    private static func settle(_ action: RequestLifecycle.Action, _ lifecycle: RequestLifecycle) -> RequestLifecycle.Action {
        guard case .elsewhere = action else { return action }
        let ready = DispatchSemaphore(value: 0)
        lifecycle.goAway { _ in ready.signal() }
        ready.wait()
        return lifecycle.landed()
    }

    private static func wait(for later: Later, lifecycle: RequestLifecycle) -> Response {
        let slot = RenderSlot()
        let ready = DispatchSemaphore(value: 0)
        later.start { render in
            slot.set(render)
            ready.signal()
        }
        ready.wait()
        return lifecycle.resume(slot.take()!)
    }

    /// The bytes of a response body: its bytes, its file range, or what its stream has now.
    private static func body(of response: Response) -> [UInt8] {
        switch response.payload {
        case .bytes: return response.body
        case .file(let fd, let offset, let length):
            defer { close(fd) }
            var bytes = [UInt8](repeating: 0, count: Int(length))
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, Int(length), off_t(offset)) }
            return Array(bytes.prefix(max(0, count)))
        case .stream(let stream, _, _):
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            reading: while true {
                let result = buffer.withUnsafeMutableBytes { stream.read(into: $0, at: UInt64(bytes.count)) }
                switch result {
                case .bytes(let count): bytes += buffer.prefix(count)
                case .wait, .end, .failed: break reading
                }
            }
            stream.finish()
            return bytes
        }
    }
}

/// The render closure of a later reply, handed from whichever thread finished the work to the
/// thread that renders the response.
final class RenderSlot: Sendable {
    typealias Render = @Sendable () throws -> Response
    private let render = Mutex<Render?>(nil)

    func set(_ value: @escaping Render) {
        render.withLock { if $0 == nil { $0 = value } }
    }

    func take() -> Render? {
        render.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
