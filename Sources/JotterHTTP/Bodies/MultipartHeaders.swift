extension MultipartParser {
    /// Reads a part's header lines: `Content-Disposition: form-data; name=…` is required.
    static func parseHeaders(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> MultipartPartHeaders {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw HTTPError.badRequest("a multipart part header is not valid UTF-8")
        }
        var disposition: String?
        var contentType: String?
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else {
                throw HTTPError.badRequest("malformed multipart part header '\(line.prefix(100))'")
            }
            let name = line[..<colon].lowercased()
            let value = String(line[line.index(after: colon)...].trimmingASCIISpaces())
            if name == "content-disposition" { disposition = value }
            if name == "content-type" { contentType = value }
        }
        guard let disposition else {
            throw HTTPError.badRequest("a multipart part has no Content-Disposition header")
        }
        let (type, parameters) = try parseParameters(disposition)
        guard type.lowercased() == "form-data" else {
            throw HTTPError.badRequest("a multipart part's Content-Disposition is '\(type)', not form-data")
        }
        guard let name = parameters["name"] else {
            throw HTTPError.badRequest("a multipart part's Content-Disposition has no name")
        }
        let filename = try parameters["filename*"].map(decodeExtendedValue) ?? parameters["filename"]
        return MultipartPartHeaders(name: name, filename: filename, contentType: contentType)
    }

    /// `type; key=value; key="quoted \"value\""` → the type and the parameters (keys lowercased).
    static func parseParameters(_ header: String) throws(HTTPError) -> (String, [String: String]) {
        var scalars = Substring(header).unicodeScalars[...]
        func skipSpaces() { while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() } }
        func token() -> String {
            var out = String.UnicodeScalarView()
            while let first = scalars.first, first != ";", first != "=", first != " ", first != "\t" { out.append(scalars.removeFirst()) }
            return String(out)
        }
        skipSpaces()
        let type = token()
        var parameters: [String: String] = [:]
        while true {
            skipSpaces()
            guard let first = scalars.first else { break }
            guard first == ";" else { throw HTTPError.badRequest("malformed Content-Disposition in a multipart part") }
            scalars.removeFirst()
            skipSpaces()
            if scalars.isEmpty { break }
            let key = token().lowercased()
            skipSpaces()
            guard scalars.first == "=" else { throw HTTPError.badRequest("malformed Content-Disposition parameter '\(key)'") }
            scalars.removeFirst()
            skipSpaces()
            var value = String.UnicodeScalarView()
            if scalars.first == "\"" {
                scalars.removeFirst()
                var closed = false
                while let next = scalars.first {
                    scalars.removeFirst()
                    if next == "\"" { closed = true; break }
                    // A backslash escapes only a quote or a backslash: browsers send Windows paths
                    // (`C:\dir\file`) with their backslashes as they are. Browsers never escape
                    // (WHATWG sends `"` as `%22`), so `name="x\"` is the name `x\`: a `\"` that
                    // ends the parameter (only spaces, then `;` or the end, follow) closes it.
                    if next == "\\", let escaped = scalars.first, escaped == "\"" || escaped == "\\",
                        !(escaped == "\"" && Self.endsParameter(scalars.dropFirst()))
                    {
                        scalars.removeFirst()
                        value.append(escaped)
                    } else {
                        value.append(next)
                    }
                }
                guard closed else { throw HTTPError.badRequest("unterminated quoted string in a multipart Content-Disposition") }
            } else {
                value = token().unicodeScalars
            }
            if parameters[key] == nil { parameters[key] = String(value) }
        }
        return (type, parameters)
    }

    /// True when only spaces or tabs, then `;` or the end, remain.
    private static func endsParameter(_ rest: Substring.UnicodeScalarView.SubSequence) -> Bool {
        let next = rest.first { $0 != " " && $0 != "\t" }
        return next == nil || next == ";"
    }

    /// RFC 5987 `charset'language'percent-encoded` (UTF-8 or ISO-8859-1).
    static func decodeExtendedValue(_ value: String) throws(HTTPError) -> String {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw HTTPError.badRequest("malformed filename* (RFC 5987) in a multipart part") }
        let charset = parts[0].lowercased()
        var bytes: [UInt8] = []
        var index = parts[2].utf8.startIndex
        let utf8 = parts[2].utf8
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high != utf8.endIndex, utf8.index(after: high) != utf8.endIndex,
                    let value = UInt8(String(decoding: [utf8[high], utf8[utf8.index(after: high)]], as: UTF8.self), radix: 16)
                else {
                    throw HTTPError.badRequest("bad percent-encoding in filename*")
                }
                bytes.append(value)
                index = utf8.index(high, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        switch charset {
        case "utf-8":
            guard let text = String(validating: bytes, as: UTF8.self) else { throw HTTPError.badRequest("filename* is not valid UTF-8") }
            return text
        case "iso-8859-1":
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default:
            throw HTTPError.badRequest("filename* charset '\(charset)' is not UTF-8 or ISO-8859-1")
        }
    }
}

/// The client's file name made safe, as the contract says: the last segment after `/` or `\`,
/// without U+0000–U+001F, U+007F and the bidirectional controls (U+061C, U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069, which make `invoice\u{202E}fdp.exe` show as
/// "invoiceexe.pdf"), at most 255 UTF-8 bytes (cut at a character), and `upload` when nothing
/// — or only `.` or `..` — is left. It is metadata only — never a path on disk.
public func cleanFilename(_ name: String) -> String {
    let last = name.split(omittingEmptySubsequences: false) { $0 == "/" || $0 == "\\" }.last.map(String.init) ?? ""
    var cleaned = String.UnicodeScalarView()
    var bytes = 0
    for scalar in last.unicodeScalars where scalar.value >= 0x20 && scalar.value != 0x7F && !isBidiControl(scalar) {
        let length = String(scalar).utf8.count
        if bytes + length > 255 { break }
        cleaned.append(scalar)
        bytes += length
    }
    let result = String(cleaned)
    return result.isEmpty || result == "." || result == ".." ? "upload" : result
}

/// The Unicode bidirectional formatting characters (UAX #9).
private func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
}

/// A request's own `Content-Disposition` (RFC 6266), as a raw upload sends it:
/// `attachment; filename="cat.png"; filename*=UTF-8''…` — the multipart parts' parser.
public enum ContentDisposition {
    /// The file name it gives (`filename*` over `filename`), cleaned (`cleanFilename`); nil
    /// when it names none. `400` when it is malformed.
    public static func filename(_ header: String) throws(HTTPError) -> String? {
        let (_, parameters) = try MultipartParser.parseParameters(header)
        return try (parameters["filename*"].map(MultipartParser.decodeExtendedValue) ?? parameters["filename"]).map(cleanFilename)
    }
}
