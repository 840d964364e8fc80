import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `multipart/form-data` body (RFC 7578) of text fields and files, built without reading the
/// files: they are streamed from disk when the body is written or sent.
///
/// The boundary is random. Names and filenames are escaped the way browsers do (`"` as `%22`,
/// CR and LF as `%0D` and `%0A`); a filename that is not plain ASCII, or holds one of those,
/// also goes as RFC 5987 `filename*`, which the server prefers, so it arrives exactly.
///
/// ```swift
/// var form = MultipartFormData()
/// form.append("42", name: "note_id")
/// try form.append(fileAt: URL(fileURLWithPath: "/tmp/photo.jpg"), name: "file")
/// let uploads = try await client.uploads.upload(form)
///
/// // or with any URLRequest:
/// let body = FileManager.default.temporaryDirectory.appendingPathComponent("body")
/// try form.writeBody(to: body)
/// request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
/// let (data, response) = try await URLSession.shared.upload(for: request, fromFile: body)
/// ```
public struct MultipartFormData: Sendable {
    enum Part: Sendable {
        case field(name: String, value: String)
        case file(name: String, url: URL, filename: String, contentType: String, size: Int64)
    }

    /// The boundary between parts (random unless given).
    public let boundary: String
    private(set) var parts: [Part] = []

    /// An empty body with a random boundary (or `boundary`).
    public init(boundary: String = MultipartFormData.randomBoundary()) {
        self.boundary = boundary
    }

    /// `jotter-` and 32 random letters and digits.
    public static func randomBoundary() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return "jotter-" + String((0..<32).map { _ in alphabet.randomElement()! })
    }

    /// The `Content-Type` header to send with this body.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Adds a text field.
    public mutating func append(_ value: String, name: String) {
        parts.append(.field(name: name, value: value))
    }

    /// Adds the file at `url` as a file part; only its size is read now.
    ///
    /// - Parameters:
    ///   - filename: the name the server records (default: the file's own name).
    ///   - contentType: its media type (default: guessed from the extension, else
    ///     `application/octet-stream`).
    /// - Throws: `JotterClientError` (`.localFile`) when it is not a readable regular file.
    public mutating func append(fileAt url: URL, name: String, filename: String? = nil, contentType: String? = nil) throws(JotterClientError) {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        } catch {
            throw .localFile("cannot read \(url.path): no such file or not readable")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular, FileManager.default.isReadableFile(atPath: url.path) else {
            throw .localFile("cannot upload \(url.path): not a readable regular file")
        }
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        parts.append(
            .file(
                name: name, url: url, filename: filename ?? url.lastPathComponent,
                contentType: contentType ?? Self.contentType(forExtension: url.pathExtension), size: size))
    }

    /// The body's size in bytes (the files' sizes when they were appended).
    public var contentLength: Int64 {
        parts.reduce(Int64(closing.count)) { total, part in
            switch part {
            case .field(_, let value): total + Int64(head(of: part).count + value.utf8.count + 2)
            case .file(_, _, _, _, let size): total + Int64(head(of: part).count) + size + 2
            }
        }
    }

    /// The delimiter and headers that open `part`.
    func head(of part: Part) -> Data {
        var text = "--\(boundary)\r\n"
        switch part {
        case .field(let name, _):
            text += "Content-Disposition: form-data; name=\"\(Self.escape(name))\"\r\n\r\n"
        case .file(let name, _, let filename, let contentType, _):
            text += "Content-Disposition: form-data; name=\"\(Self.escape(name))\"; filename=\"\(Self.escape(filename))\""
            if filename.unicodeScalars.contains(where: { !(0x20..<0x7F).contains($0.value) || $0 == "\"" || $0 == "%" }) {
                text += "; filename*=UTF-8''" + FormURLEncodedBody.percentEncode(filename, spaceAsPlus: false)
            }
            text += "\r\nContent-Type: \(contentType)\r\n\r\n"
        }
        return Data(text.utf8)
    }

    /// The final delimiter.
    var closing: Data { Data("--\(boundary)--\r\n".utf8) }

    /// A name or filename inside quotes, as the HTML standard escapes it.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(of: "\n", with: "%0A")
    }

    /// A media type for common extensions; `application/octet-stream` otherwise.
    static func contentType(forExtension pathExtension: String) -> String {
        let types = [
            "txt": "text/plain", "md": "text/markdown", "csv": "text/csv", "html": "text/html", "htm": "text/html",
            "json": "application/json", "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip",
            "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
            "heic": "image/heic", "svg": "image/svg+xml", "mp3": "audio/mpeg", "m4a": "audio/mp4", "mp4": "video/mp4",
            "mov": "video/quicktime",
        ]
        return types[pathExtension.lowercased()] ?? "application/octet-stream"
    }
}
