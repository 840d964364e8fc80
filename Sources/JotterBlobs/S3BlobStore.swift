#if canImport(Glibc)
import Glibc
#endif
import JotterSystem
import CCurl
import Synchronization

/// Blobs in an S3-compatible bucket (AWS S3, SeaweedFS, MinIO, …), path-style addressed
/// (`ENDPOINT/BUCKET/KEY`). libcurl does the HTTP and the AWS Signature Version 4
/// (`CURLOPT_AWS_SIGV4`); this type only builds the requests and reads the answers.
///
/// Objects up to `partSize` go up in one `PUT`; larger ones as a multipart upload, one part in
/// memory at a time (aborted if anything fails, so no parts are left behind); the multipart
/// primitives themselves are public (S3Multipart.swift) for callers that receive an object over time. Each body sent
/// carries its SHA-256 in `x-amz-content-sha256`, which the server checks. Downloads stream to
/// the sink as libcurl receives them, with an HTTP `Range` when asked; `download` does the same
/// without a thread of the caller's (S3Download.swift).
public final class S3BlobStore: BlobStore {
    /// Where the bucket is and who signs.
    public struct Configuration: Sendable, Equatable {
        public var bucket: String
        /// `http(s)://host[:port]`, no path. AWS: `https://s3.REGION.amazonaws.com`.
        public var endpoint: String
        public var region: String
        public var accessKey: String
        public var secretKey: String
        /// AWS_SESSION_TOKEN for temporary credentials, sent as `x-amz-security-token`.
        public var sessionToken: String?
        /// Bytes per multipart part, and the largest object sent in one PUT (S3's minimum part
        /// is 5 MiB; the default is 8 MiB).
        public var partSize: Int
        /// Seconds a request may take to connect; a stalled transfer fails after as long.
        public var connectTimeoutSeconds: Int

        public init(
            bucket: String, endpoint: String, region: String, accessKey: String, secretKey: String,
            sessionToken: String? = nil, partSize: Int = 8 << 20, connectTimeoutSeconds: Int = 10
        ) {
            self.bucket = bucket
            self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
            self.region = region
            self.accessKey = accessKey
            self.secretKey = secretKey
            self.sessionToken = sessionToken
            self.partSize = max(partSize, 5 << 20)
            self.connectTimeoutSeconds = connectTimeoutSeconds
        }

        /// Reads `s3://BUCKET?endpoint=URL&region=REGION` (query values percent-encoded).
        /// Whatever the URL leaves out comes from the environment: `AWS_ENDPOINT_URL_S3` or
        /// `AWS_ENDPOINT_URL`, `AWS_REGION` or `AWS_DEFAULT_REGION` (else `us-east-1`), and the
        /// credentials always do: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
        public init(url: String, environment: [String: String]) throws {
            guard url.hasPrefix("s3://") else { throw BlobError.invalidConfiguration("'\(url)' is not an s3:// URL") }
            let rest = url.dropFirst("s3://".count)
            let bucket = String(rest.prefix { $0 != "?" && $0 != "/" })
            guard !bucket.isEmpty else { throw BlobError.invalidConfiguration("no bucket in '\(url)'") }
            var query: [String: String] = [:]
            if let mark = rest.firstIndex(of: "?") {
                for pair in rest[rest.index(after: mark)...].split(separator: "&") {
                    let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    guard let name = percentDecoded(parts[0]), let value = percentDecoded(parts.count > 1 ? parts[1] : "") else {
                        throw BlobError.invalidConfiguration("bad percent-encoding in '\(url)'")
                    }
                    guard ["endpoint", "region"].contains(name) else { throw BlobError.invalidConfiguration("unknown option '\(name)' in '\(url)'") }
                    query[name] = value
                }
            }
            func setting(_ names: String...) -> String? { names.lazy.compactMap { environment[$0] }.first { !$0.isEmpty } }
            guard let endpoint = query["endpoint"] ?? setting("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
                endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://")
            else {
                throw BlobError.invalidConfiguration("no http(s) endpoint: add ?endpoint=URL or set AWS_ENDPOINT_URL")
            }
            guard let accessKey = setting("AWS_ACCESS_KEY_ID"), let secretKey = setting("AWS_SECRET_ACCESS_KEY") else {
                throw BlobError.invalidConfiguration("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set")
            }
            self.init(
                bucket: bucket, endpoint: endpoint, region: query["region"] ?? setting("AWS_REGION", "AWS_DEFAULT_REGION") ?? "us-east-1",
                accessKey: accessKey, secretKey: secretKey, sessionToken: setting("AWS_SESSION_TOKEN"))
        }
    }

    public let configuration: Configuration
    /// Idle easy handles, with their open connections.
    let handles = CurlHandles(keep: 16)
    /// The thread and multi handle behind `download` (S3Download.swift).
    let downloads = S3Downloads()
    /// Attempts per request when the bucket is unreachable or answers 5xx (each after a pause:
    /// 0.1 s, then 0.4 s); a download that has begun is not repeated.
    static let attempts = 3

    public init(_ configuration: Configuration) {
        _ = S3BlobStore.globalInit
        self.configuration = configuration
    }

    /// `curl_global_init` once per process, before any handle.
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    // MARK: - BlobStore

    @discardableResult
    public func put(_ key: String, chunks next: () throws -> [UInt8]?) throws -> BlobInfo {
        try validateBlobKey(key)
        var parts = S3PartBuffer(partSize: configuration.partSize)
        /// Reads until more than a part is here or the source ends; false at its end.
        func fill() throws -> Bool {
            while !parts.hasPartBeforeMore {
                guard let chunk = try next() else { return false }
                chunk.withUnsafeBytes { parts.append($0) }
            }
            return true
        }
        guard try fill() else {
            let answer = try request("PUT", key: key, body: parts.filling)
            try answer.check()
            return BlobInfo(key: key, size: Int64(parts.filling.count), etag: answer.header("etag") ?? "")
        }
        let uploadID = try createMultipartUpload(key)
        var uploaded: [UploadedPart] = []
        do {
            var more = true
            while more {
                var part = parts.takePart()
                uploaded.append(try uploadPart(key, uploadID: uploadID, number: uploaded.count + 1, bytes: part))
                parts.recycle(&part)
                more = try fill()
            }
            // The last part: what is left (never empty, as a full part goes only with more after it).
            uploaded.append(try uploadPart(key, uploadID: uploadID, number: uploaded.count + 1, bytes: parts.filling))
            return try completeMultipartUpload(key, uploadID: uploadID, parts: uploaded)
        } catch {
            try? abortMultipartUpload(key, uploadID: uploadID)
            throw error
        }
    }

    @discardableResult
    public func get(
        _ key: String, range: ClosedRange<Int64>?, opened: (BlobInfo) throws -> Void,
        into sink: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> BlobInfo {
        try validateBlobKey(key)
        // The transfer ends before `request` returns: the closures do not really escape.
        let answer = try withoutActuallyEscaping(sink) { sink in
            try withoutActuallyEscaping(opened) { opened in
                try request(
                    "GET", key: key, headers: Self.rangeHeaders(range), body: nil,
                    opened: { try opened(Self.info(key, $0)) }, sink: sink)
            }
        }
        return try Self.downloaded(key, answer)
    }

    /// The `Range` header a download of `range` sends.
    static func rangeHeaders(_ range: ClosedRange<Int64>?) -> [String] {
        range.map { ["Range: bytes=\($0.lowerBound)-\($0.upperBound)"] } ?? []
    }

    /// What a download's 2xx answer says of the whole object.
    static func info(_ key: String, _ answer: S3Answer) -> BlobInfo {
        BlobInfo(key: key, size: answer.totalSize ?? 0, etag: answer.header("etag") ?? "")
    }

    /// A finished download's answer as `get` returns it, or the error it stands for.
    static func downloaded(_ key: String, _ answer: S3Answer) throws -> BlobInfo {
        if answer.status == 404 { throw BlobError.notFound(key) }
        if answer.status == 416 { throw BlobError.invalidRange }
        try answer.check()
        return info(key, answer)
    }

    public func head(_ key: String) throws -> BlobInfo? {
        try validateBlobKey(key)
        let answer = try request("HEAD", key: key, body: nil)
        if answer.status == 404 { return nil }
        try answer.check()
        return BlobInfo(key: key, size: answer.header("content-length").flatMap { Int64($0) } ?? 0, etag: answer.header("etag") ?? "")
    }

    public func delete(_ key: String) throws {
        try validateBlobKey(key)
        let answer = try request("DELETE", key: key, body: nil)
        if answer.status == 404 { return }
        try answer.check()
    }

    public func list(prefix: String) throws -> [BlobInfo] {
        var found: [BlobInfo] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.insert(("continuation-token", token), at: 0) }
            let answer = try request("GET", key: nil, query: query, body: nil)
            try answer.check()
            for contents in XMLText.elements("Contents", in: answer.body) {
                guard let key = XMLText.values(of: "Key", in: contents).first else { continue }
                let size = XMLText.values(of: "Size", in: contents).first.flatMap { Int64($0) } ?? 0
                let modified = XMLText.values(of: "LastModified", in: contents).first.flatMap(Self.unixSeconds)
                found.append(BlobInfo(key: key, size: size, etag: XMLText.values(of: "ETag", in: contents).first ?? "", modified: modified))
            }
            let truncated = XMLText.values(of: "IsTruncated", in: answer.body).first == "true"
            token = truncated ? XMLText.values(of: "NextContinuationToken", in: answer.body).first : nil
        } while token != nil
        return found.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }

    /// `2026-12-01T12:00:00.000Z` (S3's `LastModified`) as Unix seconds (libc's `timegm`).
    static func unixSeconds(_ text: String) -> Int64? {
        let fields = text.split(whereSeparator: { !$0.isNumber }).prefix(6).compactMap { Int32($0) }
        guard text.hasSuffix("Z"), fields.count == 6 else { return nil }
        var parts = tm()
        parts.tm_year = fields[0] - 1900
        parts.tm_mon = fields[1] - 1
        parts.tm_mday = fields[2]
        parts.tm_hour = fields[3]
        parts.tm_min = fields[4]
        parts.tm_sec = fields[5]
        return Int64(timegm(&parts))
    }

    // MARK: - Requests

    /// Percent-encodes per RFC 3986 (unreserved kept; `/` kept in paths), as SigV4 expects.
    static func encoded(_ text: String, keepSlash: Bool) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepSlash:
                out += "/"
            default:
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xf, radix: 16, uppercase: true)
            }
        }
        return out
    }

    func request(
        _ method: String, key: String?, query: [(String, String)] = [], headers: [String] = [],
        body: [UInt8]?, opened: ((S3Answer) throws -> Void)? = nil,
        sink: ((UnsafeRawBufferPointer) throws -> Void)? = nil
    ) throws -> S3Answer {
        let (url, allHeaders) = address(key: key, query: query, headers: headers, body: body)
        // Every request here may be repeated: PUTs of objects and parts replace what they wrote,
        // GET/HEAD/DELETE are idempotent, completing an upload twice gives the same object, and
        // a repeated start only leaves an unused upload id (which the bucket's lifecycle drops).
        var attempt = 1
        while true {
            let transfer = try S3Transfer(
                configuration: configuration, handles: handles, method: method, url: url,
                headers: allHeaders, body: body, opened: opened, sink: sink)
            do {
                let answer = try transfer.perform()
                if answer.status < 500 || attempt == Self.attempts || transfer.delivered { return answer }
            } catch let error as BlobError {
                guard error.isTransient, attempt < Self.attempts, !transfer.delivered else { throw error }
            }
            usleep(useconds_t(Self.pause(after: attempt) * 1000))
            attempt += 1
        }
    }

    /// Milliseconds to wait before attempt `attempt + 1` of a request (100, then 400).
    static func pause(after attempt: Int) -> Int { 100 << (2 * (attempt - 1)) }

    /// A request's URL and headers (libcurl adds the signature).
    func address(key: String?, query: [(String, String)] = [], headers: [String] = [], body: [UInt8]?) -> (url: String, headers: [String]) {
        // The query is sent sorted and fully encoded, every name with `=`: already SigV4's
        // canonical form, whatever the libcurl version does with it.
        let queryText = query.map { (Self.encoded($0.0, keepSlash: false), Self.encoded($0.1, keepSlash: false)) }
            .sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        var url = configuration.endpoint + "/" + Self.encoded(configuration.bucket, keepSlash: false)
        url += key.map { "/" + Self.encoded($0, keepSlash: true) } ?? "/"
        if !queryText.isEmpty { url += "?" + queryText }
        var allHeaders = headers
        allHeaders.append("x-amz-content-sha256: " + SHA256.hex(body ?? []))
        if let token = configuration.sessionToken { allHeaders.append("x-amz-security-token: \(token)") }
        return (url, allHeaders)
    }
}

private func percentDecoded(_ text: Substring) -> String? {
    var bytes: [UInt8] = []
    var iterator = text.utf8.makeIterator()
    while let byte = iterator.next() {
        if byte == UInt8(ascii: "%") {
            guard let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { return nil }
            bytes.append(value)
        } else {
            bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
        }
    }
    return String(validating: bytes, as: UTF8.self)
}

// MARK: - Capabilities

extension S3BlobStore: BlobMultipart {
    /// Reading waits on the bucket.
    public var readsBlock: Bool { true }

    /// A stream of the range (`download`), or for no bytes a `HEAD` saying the object is there.
    public func open(_ key: String, offset: Int64, length: Int64, bufferLimit: Int) throws -> BlobOpening {
        guard length > 0 else {
            guard try head(key) != nil else { throw BlobError.notFound(key) }
            return .empty
        }
        return .download(download(key, range: offset...offset + length - 1, bufferLimit: bufferLimit))
    }

    /// One `HEAD` of a key that is never stored: a 404 when all is well.
    public func reachability() -> String? {
        do {
            _ = try head("healthz")
            return "ok"
        } catch {
            return "cannot reach the blob store: \(error)"
        }
    }

    public var multipart: (any BlobMultipart)? { self }

    public var partSize: Int { configuration.partSize }

    public var maximumPartNumber: Int { Self.maximumPartNumber }
}
