import CMicroHTTPD
import Glibc

// The C callbacks libmicrohttpd calls on its threads. They are plain non-capturing functions;
// the server arrives through `cls` and the request through `*con_cls`, both via `Unmanaged`.

/// Called once the request line is read: creates the request's state.
func engineURILog(_ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
    server.inFlight.add(1, ordering: .relaxed)
    let address = String(cString: jotter_mhd_client_address(connection))
    let state = RequestState(target: uri.map { String(validatingCString: $0) ?? String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) } ?? "",
                             remoteAddress: address)
    return Unmanaged.passRetained(state).toOpaque()
}

/// Called for every request that reached the URI-log callback, completed or aborted.
func engineRequestCompleted(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                            _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ termination: MHD_RequestTerminationCode) {
    guard let raw = conCls?.pointee else { return }
    conCls?.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
    server.watchdog.forget(state)
    state.multipart?.discard()  // temporary files not moved by a handler
    if let waker = state.waker {
        waker.close()
        server.wakers.unregister(waker)
    }
    // Last: whoever waits for the requests to end (shutdown, tests) finds their files gone.
    server.inFlight.subtract(1, ordering: .releasing)
    let outcome: String = switch termination.rawValue {  // MHD_REQUEST_TERMINATED_*
    case 0: ""
    case 2: "timeout"
    case 3: "shutdown"
    case 5: "client-abort"
    case 4: "read-error"
    default: "error"
    }
    guard server.log.accessLog else { return }
    // A request the engine refused before our handler saw it (malformed, header section too large)
    // still gets its line, with status 0 when libmicrohttpd answered it by itself.
    server.log.access(remote: state.remoteAddress, method: state.method.isEmpty ? "-" : state.method, target: state.target,
                      version: state.version.isEmpty ? "-" : state.version, status: state.status, bytes: state.bytesSent,
                      microseconds: Int(Clock.microseconds() - state.started), requestID: state.requestID.isEmpty ? "-" : state.requestID,
                      outcome: outcome)
}

/// The access handler: first call reads and checks the header section, later calls feed the
/// body, the last one answers.
func engineAccessHandler(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                         _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
                         _ uploadDataSize: UnsafeMutablePointer<Int>?, _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let connection, let raw = conCls?.pointee, let uploadDataSize else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()

    if state.responded {
        // Answered early (a refused body): libmicrohttpd discards the rest of the upload.
        uploadDataSize.pointee = 0
        return .YES
    }
    if !state.headersRead {
        state.headersRead = true
        state.method = method.map { String(cString: $0) } ?? ""
        state.version = version.map { String(cString: $0) } ?? ""
        state.headers = readHeaders(connection)
        state.requestID = server.requestID(from: state.headers)
        do throws(HTTPError) {
            if let error = FramingCheck.check(method: state.method, target: state.target, version: state.version, headers: state.headers) {
                throw error
            }
            try server.prepareBody(state)
        } catch {
            return server.queue(ErrorMiddleware.render(error, requestID: state.requestID), state: state, connection: connection)
        }
        return .YES
    }
    let size = uploadDataSize.pointee
    if size > 0 {
        uploadDataSize.pointee = 0
        server.watchdog.activity(state, fd: jotter_mhd_connection_fd(connection))
        if state.refusal != nil {
            // libmicrohttpd 0.9.75 can't answer in the middle of a body: drain it (bounded) and
            // answer on the last call; past the drain budget, close without an answer.
            state.drained += size
            return state.drained <= HTTPServer.drainBudget ? .YES : .NO
        }
        let chunk = UnsafeRawBufferPointer(start: uploadData, count: size)
        if let multipart = state.multipart {
            do throws(HTTPError) { try multipart.receive(chunk) } catch { state.refusal = error }
            return .YES
        }
        guard state.body.count + size <= server.configuration.maxBodySize else {
            state.body = []
            state.refusal = server.tooLarge()
            return .YES
        }
        state.body.append(contentsOf: chunk)
        return .YES
    }
    server.watchdog.forget(state)  // the body is complete
    if let refusal = state.refusal {
        return server.queue(ErrorMiddleware.render(refusal, requestID: state.requestID), state: state, connection: connection)
    }
    if let slot = state.deferred {
        // Called again after a deferred answer woke the connection.
        guard let result = slot.take() else {
            guard server.isStopping else { return .YES }
            return server.queue(ErrorMiddleware.render(HTTPError(.serviceUnavailable, detail: "the server is shutting down", closesConnection: true),
                                                       requestID: state.requestID), state: state, connection: connection)
        }
        let response: Response
        do { response = try result.get() } catch {
            response = ErrorMiddleware.render(error, for: state.request!, log: server.log)
        }
        return server.queue(response, state: state, connection: connection)
    }
    var multipart: (FormFields, [UploadedFile])?
    if let receiver = state.multipart {
        do throws(HTTPError) { try receiver.finish() } catch {
            return server.queue(ErrorMiddleware.render(error, requestID: state.requestID), state: state, connection: connection)
        }
        multipart = (receiver.fields, receiver.files)
    }
    let request = Request(method: HTTPMethod(state.method), target: state.target, version: state.version, headers: state.headers,
                          body: state.body, multipart: multipart, id: state.requestID, remoteAddress: state.remoteAddress)
    state.body = []
    let response = server.router.respond(to: request)
    if case .deferred(let start) = response.payload {
        let slot = DeferredSlot()
        let waker = ConnectionWaker(connection: connection)
        state.deferred = slot
        state.waker = waker
        state.request = request
        state.route = response.route
        server.wakers.register(waker, kind: .deferred)
        waker.suspendUnlessWoken()
        start { result in
            slot.set(result)
            waker.wake()
        }
        return .YES
    }
    return server.queue(response, state: state, connection: connection)
}

/// Every header field of the request, in order, with exact lengths (a NUL inside a value stays
/// visible to the framing check).
private func readHeaders(_ connection: OpaquePointer) -> HTTPHeaders {
    var headers = HTTPHeaders()
    withUnsafeMutablePointer(to: &headers) { pointer in
        _ = MHD_get_connection_values_n(connection, .HEADER_KIND, { cls, kind, key, keySize, value, valueSize in
            let headers = cls!.assumingMemoryBound(to: HTTPHeaders.self)
            let name = key.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: keySize), as: UTF8.self) } ?? ""
            let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
            headers.pointee.add(name, text)
            return .YES
        }, pointer)
    }
    return headers
}

extension HTTPServer {
    /// Bytes of a refused body read and dropped before its `413` can be sent.
    static let drainBudget = 64 << 20

    /// Chooses how the body is read: a multipart body streams to temporary files, anything
    /// else is held in memory. `413` at once when Content-Length already says it is too large.
    func prepareBody(_ state: RequestState) throws(HTTPError) {
        let declared = state.headers["Content-Length"].flatMap(Int64.init)
        if let contentType = state.headers["Content-Type"], MediaType(contentType)?.essence == "multipart/form-data" {
            let limits = MultipartLimits(fieldBytes: configuration.maxBodySize, fileBytes: configuration.maxUploadSize, parts: configuration.maxParts)
            if let declared, declared > limits.fileBytes + Int64(limits.fieldBytes) {
                throw HTTPError(.contentTooLarge, detail: "the request body is larger than the upload limit of \(limits.fileBytes) bytes (--max-upload-size)",
                                closesConnection: true)
            }
            state.multipart = try MultipartReceiver(contentType: contentType, limits: limits, temporaryDirectory: configuration.temporaryDirectory)
        } else if let declared, declared > Int64(configuration.maxBodySize) {
            throw tooLarge()
        }
    }

    func tooLarge() -> HTTPError {
        HTTPError(.contentTooLarge, detail: "the request body is larger than the limit of \(configuration.maxBodySize) bytes (--max-body-size)",
                  closesConnection: true)
    }

    /// Hands `response` to libmicrohttpd for this connection.
    func queue(_ response: Response, state: RequestState, connection: OpaquePointer) -> MHD_Result {
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
        case .deferred:
            log.error("request \(state.requestID): a deferred response answered with another deferred response")
            return queue(ErrorMiddleware.render(HTTPError(.internalServerError), requestID: state.requestID), state: state, connection: connection)
        }
        guard let handle else { return .NO }
        defer { MHD_destroy_response(handle) }
        for field in response.headers {
            _ = MHD_add_response_header(handle, field.name, field.value)
        }
        // Every response carries these two, errors refused before routing included.
        _ = MHD_add_response_header(handle, "X-Content-Type-Options", "nosniff")
        _ = MHD_add_response_header(handle, "X-Request-Id", state.requestID)
        state.status = response.status.code
        metrics?.record(method: state.method, route: response.route ?? state.route ?? "unmatched", status: response.status.code,
                        seconds: Double(Clock.microseconds() - state.started) / 1_000_000)
        switch response.payload {
        case .file(_, _, let length): state.bytesSent = Int(length)
        default: state.bytesSent = body.count
        }
        return MHD_queue_response(connection, UInt32(response.status.code), handle)
    }
}
