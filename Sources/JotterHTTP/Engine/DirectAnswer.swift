import CMicroHTTPD

/// Answers libmicrohttpd 0.9.75 cannot send, written to the socket by the engine itself.
///
/// libmicrohttpd builds a response's status line and header fields in the connection's memory
/// pool (`connectionMemory`), after the request head, which stays there until the request ends.
/// When too little room is left, `build_header_response` fails in its `START_REPLY` state and
/// the connection is closed without a word ("failed to create response header"): a head that
/// leaves less than about 250 bytes of the 8 KiB pool gets no answer at all, whatever the
/// handler queued. Its own refusals (`transmit_error_response`) reset the pool first; ours
/// cannot. So before queueing a response the engine estimates the room left, and when it is
/// short it writes the response itself and closes the connection.
enum DirectAnswer {
    /// One header record in the pool (`struct MHD_HTTP_Header`, 56 bytes, rounded to 16).
    static let recordSize = 64
    /// What a read buffer grown to hold the head can keep past it: it grows by 128 bytes
    /// (`MHD_BUF_INC_SIZE / 8`) at a time once full, plus rounding to 16.
    static let readSlack = 144
    /// Kept free on top of the answer's own header section (libmicrohttpd asks for one byte
    /// more than the Date field takes, and this is an estimate).
    static let margin = 96

    /// The pool bytes a head's fields take besides their text: a record each, and for a
    /// `Cookie` field a copy of its value and a record per cookie (`parse_cookie_header`).
    static func fieldCost(_ headers: HTTPHeaders) -> Int {
        var cost = 0
        for field in headers {
            cost += recordSize
            if field.name.utf8.count == 6 && HTTPHeaders.equal(field.name, "Cookie") {
                let separators = field.value.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: ";") || $1 == UInt8(ascii: ",") ? 1 : 0) }
                cost += rounded(field.value.utf8.count + 1) + recordSize * (separators + 1)
            }
        }
        return cost
    }

    /// The least room libmicrohttpd will have for a response's header section: the pool less
    /// the head (its read buffer is half the pool at first, larger only when the head needed
    /// it) and the field records.
    static func room(poolSize: Int, headerSize: Int, fieldCost: Int) -> Int {
        poolSize - rounded(max(poolSize / 2, headerSize + readSlack)) - fieldCost
    }

    /// The response on the wire, as libmicrohttpd would have sent it with `Connection: close`.
    static func serialize(_ response: Response, headRequest: Bool) -> [UInt8] {
        var date = [CChar](repeating: 0, count: 32)
        jotter_http_date(&date)
        var text = "HTTP/1.1 \(response.status.code) \(response.status.reasonPhrase)\r\nDate: \(String(cString: date))\r\nConnection: close\r\n"
        for field in response.headers where !HTTPHeaders.equal(field.name, "Connection") {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "X-Content-Type-Options: nosniff\r\n"
        let bodyAllowed = response.status.code >= 200 && response.status.code != 204 && response.status.code != 304
        if bodyAllowed { text += "Content-Length: \(response.body.count)\r\n" }
        text += "\r\n"
        var bytes = Array(text.utf8)
        if bodyAllowed && !headRequest { bytes += response.body }
        return bytes
    }

    private static func rounded(_ size: Int) -> Int { (size + 15) & ~15 }
}

extension HTTPServer {
    /// Writes `response` straight to the connection when libmicrohttpd would have no room to
    /// build its header section (see `DirectAnswer`); true when it did (the connection is then
    /// closed: return `.NO`).
    func answerDirectlyIfCramped(_ response: Response, state: RequestState, connection: OpaquePointer) -> Bool {
        guard case .bytes = response.payload, state.headersRead else { return false }
        let headerSize = jotter_mhd_request_header_size(connection)
        let room = DirectAnswer.room(poolSize: configuration.connectionMemory, headerSize: headerSize, fieldCost: state.fieldCost)
        // The header section alone must fit (the body is sent from its own buffer): the status
        // line, Date, Connection and Content-Length take under 128 bytes.
        let headLength = response.headers.reduce(128) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
        guard state.folded || room < headLength + DirectAnswer.margin else { return false }
        let bytes = DirectAnswer.serialize(response, headRequest: state.headRequest)
        let sent = bytes.withUnsafeBytes { jotter_mhd_send_direct(connection, $0.baseAddress, $0.count, 100) }
        state.status = response.status.code
        state.bytesSent = response.body.count
        state.answeredDirectly = sent == 1
        return true
    }
}
