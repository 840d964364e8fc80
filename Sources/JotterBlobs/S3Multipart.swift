/// S3 multipart uploads, one request each: what `put` is built on, and what a caller that
/// receives an object over time (a streamed or resumable upload) drives itself.
///
/// A multipart upload is invisible until completed; an upload neither completed nor aborted
/// keeps its parts (and costs storage) until aborted, so a caller that gives up aborts, and a
/// sweep can find leftovers with `listMultipartUploads(prefix:)`. Every part but the last must
/// be at least 5 MiB (S3's rule; `Configuration.partSize` is never below it). Part numbers run
/// from 1 to 10,000; uploading a part number again replaces that part.
extension S3BlobStore {
    /// One part as stored (`BlobPart`).
    public typealias UploadedPart = BlobPart

    /// A multipart upload begun and neither completed nor aborted (`BlobMultipartUpload`).
    public typealias MultipartUpload = BlobMultipartUpload

    /// The highest part number S3 accepts.
    public static let maximumPartNumber = 10_000

    /// Begins a multipart upload of `key`; the answer is its upload id, for every later call.
    public func createMultipartUpload(_ key: String) throws -> String {
        try validateBlobKey(key)
        let started = try request("POST", key: key, query: [("uploads", "")], body: [])
        try started.check()
        guard let uploadID = XMLText.values(of: "UploadId", in: started.body).first, !uploadID.isEmpty else {
            throw BlobError.server(status: started.status, code: "", message: "no UploadId in the answer")
        }
        return uploadID
    }

    /// Stores `bytes` as part `number` (1…10,000) of the upload; the bytes' SHA-256 is sent and
    /// checked by the bucket. A missing (aborted, completed) upload is `BlobError.notFound`.
    @discardableResult
    public func uploadPart(_ key: String, uploadID: String, number: Int, bytes: [UInt8]) throws -> UploadedPart {
        try validateBlobKey(key)
        guard (1...Self.maximumPartNumber).contains(number) else {
            throw BlobError.invalidConfiguration("part number \(number) is outside 1…\(Self.maximumPartNumber)")
        }
        let answer = try request("PUT", key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)], body: bytes)
        try Self.checkUpload(answer, key: key)
        return UploadedPart(number: number, etag: answer.header("etag") ?? "", size: Int64(bytes.count))
    }

    /// Makes the object from `parts` (sorted by number, each as `uploadPart` or `listParts`
    /// returned it): it appears whole under `key`, replacing any object there. A missing upload
    /// is `BlobError.notFound`; a part the bucket does not have, or one below 5 MiB that is not
    /// the last, is `BlobError.server` (`InvalidPart`, `EntityTooSmall`).
    @discardableResult
    public func completeMultipartUpload(_ key: String, uploadID: String, parts: [UploadedPart]) throws -> BlobInfo {
        try validateBlobKey(key)
        let sorted = parts.sorted { $0.number < $1.number }
        var xml = "<CompleteMultipartUpload>"
        for part in sorted {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(XMLText.escaped(part.etag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let done = try request("POST", key: key, query: [("uploadId", uploadID)], body: Array(xml.utf8))
        try Self.checkUpload(done, key: key)
        // S3 can answer 200 with an <Error> body when completing fails late.
        if let code = XMLText.values(of: "Code", in: done.body).first {
            if code == "NoSuchUpload" { throw BlobError.notFound(key) }
            throw BlobError.server(status: done.status, code: code, message: XMLText.values(of: "Message", in: done.body).first ?? "")
        }
        let size = sorted.reduce(Int64(0)) { $0 + $1.size }
        guard let etag = XMLText.values(of: "ETag", in: done.body).first else {
            return try head(key) ?? BlobInfo(key: key, size: size, etag: "")
        }
        return BlobInfo(key: key, size: size, etag: etag)
    }

    /// Drops the upload and its parts; succeeds when there is no such upload (so it can repeat).
    public func abortMultipartUpload(_ key: String, uploadID: String) throws {
        try validateBlobKey(key)
        let answer = try request("DELETE", key: key, query: [("uploadId", uploadID)], body: nil)
        if answer.status == 404 { return }
        try answer.check()
    }

    /// The parts the bucket holds for the upload, sorted by number (what a resumed upload goes
    /// on from). A missing upload is `BlobError.notFound`.
    public func listParts(_ key: String, uploadID: String) throws -> [UploadedPart] {
        try validateBlobKey(key)
        var parts: [UploadedPart] = []
        var marker: String?
        repeat {
            var query = [("uploadId", uploadID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let answer = try request("GET", key: key, query: query, body: nil)
            try Self.checkUpload(answer, key: key)
            for element in XMLText.elements("Part", in: answer.body) {
                guard let number = XMLText.values(of: "PartNumber", in: element).first.flatMap({ Int($0) }) else { continue }
                parts.append(
                    UploadedPart(
                        number: number, etag: XMLText.values(of: "ETag", in: element).first ?? "",
                        size: XMLText.values(of: "Size", in: element).first.flatMap { Int64($0) } ?? 0))
            }
            let truncated = XMLText.values(of: "IsTruncated", in: answer.body).first == "true"
            let next = XMLText.values(of: "NextPartNumberMarker", in: answer.body).first
            marker = truncated && next != marker ? next : nil
        } while marker != nil
        return parts.sorted { $0.number < $1.number }
    }

    /// Every multipart upload begun under `prefix` and neither completed nor aborted, sorted by
    /// key then upload id.
    public func listMultipartUploads(prefix: String) throws -> [MultipartUpload] {
        var found: [MultipartUpload] = []
        var markers: (key: String, upload: String)?
        repeat {
            var query = [("uploads", ""), ("prefix", prefix)]
            if let markers { query += [("key-marker", markers.key), ("upload-id-marker", markers.upload)] }
            let answer = try request("GET", key: nil, query: query, body: nil)
            try answer.check()
            for element in XMLText.elements("Upload", in: answer.body) {
                guard let key = XMLText.values(of: "Key", in: element).first,
                    let uploadID = XMLText.values(of: "UploadId", in: element).first
                else { continue }
                found.append(
                    MultipartUpload(
                        key: key, uploadID: uploadID,
                        initiated: XMLText.values(of: "Initiated", in: element).first.flatMap(Self.unixSeconds)))
            }
            let truncated = XMLText.values(of: "IsTruncated", in: answer.body).first == "true"
            let next = (XMLText.values(of: "NextKeyMarker", in: answer.body).first, XMLText.values(of: "NextUploadIdMarker", in: answer.body).first)
            if truncated, let key = next.0, let upload = next.1, key != markers?.key || upload != markers?.upload {
                markers = (key, upload)
            } else {
                markers = nil
            }
        } while markers != nil
        return found.sorted { ($0.key.utf8.lexicographicallyPrecedes($1.key.utf8)) || ($0.key == $1.key && $0.uploadID < $1.uploadID) }
    }

    /// A 404 (`NoSuchUpload`) is `notFound`; other failures as `check` throws them.
    private static func checkUpload(_ answer: S3Answer, key: String) throws {
        if answer.status == 404 { throw BlobError.notFound(key) }
        try answer.check()
    }
}
