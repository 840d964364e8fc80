/// Builds raw `multipart/form-data` bodies byte by byte, so tests control every header
/// (hostile file names, `filename*`, missing Content-Disposition…).
public struct MultipartBuilder {
    public let boundary: String
    public private(set) var bytes: [UInt8] = []

    public init(boundary: String = "JotterTestBoundary7MA4YWxk") {
        self.boundary = boundary
    }

    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// A plain field.
    public mutating func field(_ name: String, _ value: String) {
        part(headers: "Content-Disposition: form-data; name=\"\(name)\"", body: Array(value.utf8))
    }

    /// A file part; `disposition` replaces the whole Content-Disposition value when given.
    public mutating func file(
        _ name: String, filename: String, contentType: String = "application/octet-stream",
        body: [UInt8], disposition: String? = nil
    ) {
        let value = disposition ?? "form-data; name=\"\(name)\"; filename=\"\(filename)\""
        part(headers: "Content-Disposition: \(value)\r\nContent-Type: \(contentType)", body: body)
    }

    /// A part with exactly these header lines.
    public mutating func part(headers: String, body: [UInt8]) {
        bytes += Array("--\(boundary)\r\n\(headers)\r\n\r\n".utf8) + body + Array("\r\n".utf8)
    }

    /// The body with its closing boundary.
    public func finished() -> [UInt8] {
        bytes + Array("--\(boundary)--\r\n".utf8)
    }
}
