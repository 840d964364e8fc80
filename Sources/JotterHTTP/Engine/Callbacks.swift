import CMicroHTTPD
import Glibc

// The C callbacks libmicrohttpd calls on its threads. They are plain non-capturing functions;
// the server arrives through `cls` and the request through `*con_cls`, both via `Unmanaged`.
// They only translate libmicrohttpd's calls into `RequestLifecycle` events and carry out the
// actions it returns.

/// Called once the request line is read: creates the request's state.
func engineURILog(_ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
    server.inFlight.add(1, ordering: .relaxed)
    let target = uri.map { String(validatingCString: $0) ?? String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) } ?? ""
    if let uri { jotter_mhd_skip_query_arguments(uri) }
    let lifecycle = RequestLifecycle(router: server.router, limits: server.limits, target: target,
                                     remoteAddress: String(cString: jotter_mhd_client_address(connection)))
    return Unmanaged.passRetained(RequestState(lifecycle: lifecycle)).toOpaque()
}

/// Called for every request that reached the URI-log callback, completed or aborted.
func engineRequestCompleted(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                            _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ termination: MHD_RequestTerminationCode) {
    guard let raw = conCls?.pointee else { return }
    conCls?.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
    server.watchdog.forget(state)
    if let connection { jotter_mhd_request_finished(connection) }
    if let waker = state.waker {
        waker.close()
        server.wakers.unregister(waker)
    }
    let outcome: CompletedExchange.Outcome = switch termination.rawValue {  // MHD_REQUEST_TERMINATED_*
    case _ where state.answeredDirectly: .sent
    case 0: .sent
    case 2: .timeout
    case 3: .shutdown
    case 5: .clientAbort
    case 4: .readError
    default: .error
    }
    // A request the engine refused before our handler saw it (header section too large) still
    // reaches the middleware, with status 0: libmicrohttpd answered it by itself.
    state.lifecycle.completed(status: state.status, bytesSent: state.bytesSent, outcome: outcome)
    // Last, after `completed` discarded the request's files: whoever waits for the requests to
    // end (shutdown, tests) finds nothing of them left.
    server.inFlight.subtract(1, ordering: .releasing)
}

/// The access handler: the first call brings the header section, later calls the body, the
/// last one (size 0) its end — and, after a later reply woke the connection, the answer.
func engineAccessHandler(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                         _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
                         _ uploadDataSize: UnsafeMutablePointer<Int>?, _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let connection, let raw = conCls?.pointee, let uploadDataSize else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
    let lifecycle = state.lifecycle

    if state.responded {
        // Answered early (a refused body): libmicrohttpd discards the rest of the upload.
        uploadDataSize.pointee = 0
        return .YES
    }
    if !state.headersRead {
        state.headersRead = true
        jotter_mhd_headers_received(connection)
        let read = readHeaders(connection)
        state.folded = read.folded
        state.headRequest = method.map { strcmp($0, "HEAD") == 0 } ?? false
        let action = lifecycle.headerComplete(method: method.map { String(cString: $0) } ?? "", version: version.map { String(cString: $0) } ?? "",
                                              headers: read.headers, folded: read.folded)
        if case .proceed = action, lifecycle.head?.hasBody == true {
            server.watchdog.begin(state, fd: jotter_mhd_connection_fd(connection))
        }
        return server.perform(action, state: state, connection: connection)
    }
    let size = uploadDataSize.pointee
    if size > 0 {
        uploadDataSize.pointee = 0
        server.watchdog.activity(state, fd: jotter_mhd_connection_fd(connection), count: size)
        return server.perform(lifecycle.receive(UnsafeRawBufferPointer(start: uploadData, count: size)), state: state, connection: connection)
    }
    server.watchdog.forget(state)  // the body is complete
    if let slot = state.slot {
        // Called again after a later reply woke the connection.
        guard let render = slot.take() else {
            guard server.isStopping else { return .YES }
            return server.queue(HTTPError(.serviceUnavailable, detail: "the server is shutting down", closesConnection: true)
                                    .response(requestID: lifecycle.context.requestID), state: state, connection: connection)
        }
        state.slot = nil
        return server.queue(lifecycle.resume(render), state: state, connection: connection)
    }
    return server.perform(lifecycle.bodyComplete(), state: state, connection: connection)
}

/// Every header field of the request, in order, with exact lengths (a NUL inside a value stays
/// visible to the framing check), and whether a field was continued by obsolete line folding.
///
/// libmicrohttpd 0.9.75 parses the header section in place: a field's value lies just after
/// its name, separated by the NUL that replaced the colon and any spaces or tabs. A folded line
/// (one starting with a space or tab) is appended to the previous field's *name*, which
/// libmicrohttpd copies to a new block further on in the connection's pool — so a name that
/// does not sit just before its value was folded.
private func readHeaders(_ connection: OpaquePointer) -> (headers: HTTPHeaders, folded: Bool) {
    var read = (headers: HTTPHeaders(), folded: false)
    withUnsafeMutablePointer(to: &read) { pointer in
        _ = MHD_get_connection_values_n(connection, .HEADER_KIND, { cls, kind, key, keySize, value, valueSize in
            let read = cls!.assumingMemoryBound(to: (headers: HTTPHeaders, folded: Bool).self)
            let name = key.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: keySize), as: UTF8.self) } ?? ""
            let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
            if let key, let value, !valueFollowsName(key, keySize, value) { read.pointee.folded = true }
            read.pointee.headers.add(name, text)
            return .YES
        }, pointer)
    }
    return read
}

/// True when `value` starts right after `key`'s terminating NUL and optional spaces or tabs.
private func valueFollowsName(_ key: UnsafePointer<CChar>, _ keySize: Int, _ value: UnsafePointer<CChar>) -> Bool {
    let end = key + keySize
    guard value > end, value - end <= 8192, end.pointee == 0 else { return false }
    var byte = end + 1
    while byte < value {
        guard byte.pointee == 0x20 || byte.pointee == 0x09 else { return false }
        byte += 1
    }
    return true
}

extension HTTPServer {
    /// Carries out what the lifecycle decided.
    func perform(_ action: RequestLifecycle.Action, state: RequestState, connection: OpaquePointer) -> MHD_Result {
        switch action {
        case .proceed: return .YES
        case .close: return .NO
        case .respond(let response): return queue(response, state: state, connection: connection)
        case .wait(let later):
            let slot = RenderSlot()
            let waker = ConnectionWaker(connection: connection)
            state.slot = slot
            state.waker = waker
            wakers.register(waker, kind: .later)
            waker.suspendUnlessWoken()
            later.start { render in
                slot.set(render)
                waker.wake()
            }
            return .YES
        }
    }

    /// Hands `response` to libmicrohttpd for this connection.
    func queue(_ response: Response, state: RequestState, connection: OpaquePointer) -> MHD_Result {
        if answerDirectlyIfCramped(response, state: state, connection: connection) { return .NO }
        let body = response.body
        let handle: OpaquePointer?
        switch response.payload {
        case .bytes:
            handle = body.withUnsafeBytes { bytes in jotter_mhd_response_copy(bytes.count, bytes.baseAddress) }
        case .stream(let stream, let length, let blockSize):
            let waker = ConnectionWaker(connection: connection)
            wakers.register(waker, kind: .stream)
            let context = Unmanaged.passRetained(StreamContext(body: stream, waker: waker, engine: engine)).toOpaque()
            handle = MHD_create_response_from_callback(length ?? UInt64.max, blockSize, engineStreamRead, context, engineStreamFree)
            if handle == nil { engineStreamFree(context) } else { stream.start(waker: waker) }
        case .file(let fd, let offset, let length):
            handle = MHD_create_response_from_fd_at_offset64(length, fd, offset)
            if handle == nil { close(fd) }
        }
        guard let handle else { return .NO }
        defer { MHD_destroy_response(handle) }
        for field in response.headers {
            _ = MHD_add_response_header(handle, field.name, field.value)
        }
        // Every response carries it, errors refused before routing included.
        _ = MHD_add_response_header(handle, "X-Content-Type-Options", "nosniff")
        state.status = response.status.code
        switch response.payload {
        case .file(_, _, let length): state.bytesSent = Int(length)
        default: state.bytesSent = body.count
        }
        return MHD_queue_response(connection, UInt32(response.status.code), handle)
    }
}
