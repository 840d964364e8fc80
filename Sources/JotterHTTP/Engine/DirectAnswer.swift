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
    /// Kept free on top of the answer's own header section (libmicrohttpd asks for one byte
    /// more than the Date field takes, and the room is an estimate).
    static let margin = 96
    /// Room in which any header section of Jotter's fits, so the exact length is not counted.
    static let ample = 2048

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

}

extension HTTPServer {
    /// Writes `response` straight to the connection when libmicrohttpd would have no room to
    /// build its header section (see `DirectAnswer`); true when it did (the connection is then
    /// closed: return `.NO`).
    func answerDirectlyIfCramped(_ response: Response, state: RequestState, connection: OpaquePointer) -> Bool {
        guard case .bytes = response.payload, state.headersRead else { return false }
        let room = Int(jotter_mhd_reply_room(connection, configuration.connectionMemory))
        // Every request pays for this check, so the usual case stops here: Jotter's header
        // sections stay well under 2 KiB (the longest values are a Content-Disposition with a
        // 255-byte name twice, a Set-Cookie, a CSP).
        if room >= DirectAnswer.ample && !state.folded { return false }
        // The header section alone must fit (the body is sent from its own buffer): the status
        // line, Date, Connection and Content-Length take under 128 bytes.
        var headLength = 128 + DirectAnswer.margin
        for field in response.headers.fields { headLength += field.name.utf8.count + field.value.utf8.count + 4 }
        guard state.folded || room < headLength else { return false }
        let bytes = DirectAnswer.serialize(response, headRequest: state.headRequest)
        let sent = bytes.withUnsafeBytes { jotter_mhd_send_direct(connection, $0.baseAddress, $0.count, 100) }
        state.status = response.status.code
        state.bytesSent = response.body.count
        state.answeredDirectly = sent == 1
        return true
    }
}
