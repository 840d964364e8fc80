import JotterHTTP
import JotterSystem

/// How a client speaks about an upload: the IETF draft "Resumable Uploads for HTTP" at one of
/// the interop versions URLSession and others send (3 to 8, each by its own rules), tus 1.0,
/// or a plain raw body (one request, not resumable).
enum UploadDialect: Equatable, Sendable {
    /// The draft; the interop version, nil when missing or unknown (then no 104 is sent and
    /// the latest rules apply).
    case ietf(Int?)
    case tus
    case raw

    static let interopVersions = 3...8
    static let tusVersion = "1.0.0"

    /// The protocol as a partial upload's row keeps it.
    var storedName: String {
        switch self {
        case .ietf(let version): "ietf-\(version ?? 0)"
        case .tus: "tus"
        case .raw: "raw"
        }
    }

    init(storedName: String) {
        if storedName == "tus" {
            self = .tus
        } else if storedName.hasPrefix("ietf-"), let version = Int(storedName.dropFirst(5)) {
            self = .ietf(Self.interopVersions.contains(version) ? version : nil)
        } else {
            self = .raw
        }
    }

    /// The dialect of a request: `Tus-Resumable` is tus; any of the draft's fields is the draft.
    static func of(_ headers: HTTPHeaders) -> UploadDialect {
        if headers["Tus-Resumable"] != nil { return .tus }
        let version = headers["Upload-Draft-Interop-Version"].flatMap { StructuredField.item($0)?.integer }.map(Int.init)
        let known = version.flatMap { interopVersions.contains($0) ? $0 : nil }
        if headers["Upload-Complete"] != nil || headers["Upload-Incomplete"] != nil || headers["Upload-Offset"] != nil
            || headers["Upload-Draft-Interop-Version"] != nil
        {
            return .ietf(known)
        }
        return .raw
    }
}

/// One interop version's rules of the draft (see docs/API.md, "Resumable uploads").
struct DraftRules: Sendable {
    /// The version the client sent; nil: none or unknown.
    let sent: Int?
    /// The rules applied: the version sent, else the latest.
    var version: Int { sent ?? 8 }

    /// 104 only for a version this server knows (the draft's "Draft Version Identification").
    var sendsInterim: Bool { sent != nil }
    /// Version 3 says `Upload-Incomplete` (true while incomplete); later ones `Upload-Complete`.
    var usesIncomplete: Bool { version == 3 }
    /// From 6: appends must be `application/partial-upload`.
    var requiresPartialUploadType: Bool { version >= 6 }
    /// From 6: `Upload-Limit` (in 6 the lifetime is `expires`, `max-age` from 7).
    var announcesLimits: Bool { version >= 6 }
    /// From 5: progress 104s with `Upload-Offset` while an append's body arrives.
    var sendsProgress: Bool { sendsInterim && version >= 5 }
    /// From 6: the registered problem types.
    var usesProblemTypes: Bool { version >= 6 }

    /// Whether the request says its content ends the upload; nil when it does not say.
    func isComplete(_ headers: HTTPHeaders) -> Bool? {
        func boolean(_ name: String) -> Bool? { headers[name].flatMap { StructuredField.item($0)?.boolean } }
        if sent == nil { return boolean("Upload-Complete") ?? boolean("Upload-Incomplete").map { !$0 } }
        return usesIncomplete ? boolean("Upload-Incomplete").map { !$0 } : boolean("Upload-Complete")
    }

    /// The field that tells whether the upload is complete, as this version spells it.
    func completeness(_ complete: Bool) -> (String, String) {
        usesIncomplete ? ("Upload-Incomplete", complete ? "?0" : "?1") : ("Upload-Complete", complete ? "?1" : "?0")
    }

    /// `Upload-Limit`'s value, nil before version 6.
    func limit(maxSize: Int64, remainingSeconds: Int64) -> String? {
        guard announcesLimits else { return nil }
        return "max-size=\(maxSize), \(version == 6 ? "expires" : "max-age")=\(max(0, remainingSeconds))"
    }

    /// A registered problem type, or `about:blank` before version 6.
    func problemType(_ name: String) -> String {
        usesProblemTypes ? "https://iana.org/assignments/http-problem-types#\(name)" : "about:blank"
    }
}

/// tus 1.0 fields.
enum Tus {
    static let extensions = "creation,creation-with-upload,termination,expiration,checksum"
    static let checksumAlgorithms = "sha1,sha256"

    /// `Upload-Metadata`: comma-separated `key base64value` pairs (the value may be absent).
    static func metadata(_ header: String?) throws(HTTPError) -> [String: String] {
        guard let header, !header.isEmpty else { return [:] }
        var result: [String: String] = [:]
        for pair in header.split(separator: ",") {
            let parts = pair.trimmingASCIISpaces().split(separator: " ", maxSplits: 1)
            guard let key = parts.first, !key.isEmpty else { throw HTTPError.badRequest("malformed Upload-Metadata") }
            if parts.count == 2 {
                guard let bytes = Base64.decode(String(parts[1])), let text = String(validating: bytes, as: UTF8.self) else {
                    throw HTTPError.badRequest("Upload-Metadata value of '\(printable(String(key)))' is not base64 of UTF-8 text")
                }
                result[String(key)] = text
            } else {
                result[String(key)] = ""
            }
        }
        return result
    }

    /// `Upload-Checksum: <algorithm> <base64>`.
    static func checksum(_ header: String?) throws(HTTPError) -> (MessageDigest.Algorithm, [UInt8])? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let digest = Base64.decode(String(parts[1])) else { throw HTTPError.badRequest("malformed Upload-Checksum") }
        switch parts[0].lowercased() {
        case "sha1": return (.sha1, digest)
        case "sha256": return (.sha256, digest)
        default: throw HTTPError.badRequest("Upload-Checksum algorithm '\(printable(String(parts[0])))' is not one of \(checksumAlgorithms)")
        }
    }
}

extension Substring {
    func trimmingASCIISpaces() -> Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}

/// Standard base64 (RFC 4648 §4), padding required.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let b0 = bytes[index], b1 = index + 1 < bytes.count ? bytes[index + 1] : 0, b2 = index + 2 < bytes.count ? bytes[index + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 3) << 4 | b1 >> 4)])
            out.append(index + 1 < bytes.count ? alphabet[Int((b1 & 15) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(b2 & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            var values: [UInt8] = []
            var padding = 0
            for byte in bytes[index..<index + 4] {
                if byte == UInt8(ascii: "=") { padding += 1; values.append(0); continue }
                guard padding == 0, let value = alphabet.firstIndex(of: byte) else { return nil }
                values.append(UInt8(value))
            }
            guard padding <= 2, padding == 0 || index + 4 == bytes.count else { return nil }
            out.append(values[0] << 2 | values[1] >> 4)
            if padding < 2 { out.append(values[1] << 4 | values[2] >> 2) }
            if padding < 1 { out.append(values[2] << 6 | values[3]) }
            index += 4
        }
        return out
    }
}

/// A client's text as an error message may quote it: printable ASCII, at most 100 characters.
func printable(_ text: String) -> String {
    String(String.UnicodeScalarView(text.unicodeScalars.prefix(100).map { $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
}
