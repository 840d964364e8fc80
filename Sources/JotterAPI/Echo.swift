import JotterWire

/// The answer of `/echo`: the request as the server read it, in the shape of httpbin's
/// `/anything`.
///
/// In `args` and `form` a key sent once is a string on the wire and several times an array;
/// here both are arrays (`form["tag"] == ["a", "b"]`), and encoding restores the wire shape.
public struct EchoResponse: Codable, Sendable, Hashable {
    /// A file part as the server saw it: hashed while it streamed in, never kept.
    public struct File: Codable, Sendable, Hashable {
        public var filename: String
        public var contentType: String
        public var size: Int64
        public var sha256: String

        enum CodingKeys: String, CodingKey {
            case filename, size, sha256
            case contentType = "content_type"
        }

        public init(filename: String, contentType: String, size: Int64, sha256: String) {
            self.filename = filename
            self.contentType = contentType
            self.size = size
            self.sha256 = sha256
        }
    }

    /// Any JSON value (the parsed `json` body).
    public typealias JSONValue = JotterWire.JSONValue

    /// The method, after an `X-HTTP-Method-Override`.
    public var method: String
    /// The request target: path and query.
    public var url: String
    /// The query parameters, each with every value sent.
    @OneOrMany public var args: [String: [String]]
    /// The form fields (form-urlencoded or the plain fields of multipart).
    @OneOrMany public var form: [String: [String]]
    /// The file parts by field name.
    @OneOrMany public var files: [String: [File]]
    /// The body parsed as JSON, when it was JSON (`null` on the wire when it was not).
    @Nullable public var json: JSONValue?
    /// The raw body as text when it was neither form nor multipart.
    public var data: String
    /// The request headers (repeated ones joined by commas); credentials (`Authorization`,
    /// `Cookie`, `Proxy-Authorization`) as `[redacted]`.
    public var headers: [String: String]

    enum CodingKeys: String, CodingKey { case method, url, args, form, files, json, data, headers }

    public init(
        method: String, url: String, args: [String: [String]] = [:], form: [String: [String]] = [:],
        files: [String: [File]] = [:], json: JSONValue? = nil, data: String = "", headers: [String: String] = [:]
    ) {
        self.method = method
        self.url = url
        self.args = args
        self.form = form
        self.files = files
        self.json = json
        self.data = data
        self.headers = headers
    }
}

/// A map whose keys may come several times (`args`, `form`, `files` of `EchoResponse`): each
/// key's values, in JSON the value itself for a key sent once and an array for one sent more.
@propertyWrapper
public struct OneOrMany<Value: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    public var wrappedValue: [String: [Value]]

    public init(wrappedValue: [String: [Value]]) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try decoder.singleValueContainer().decode([String: Values].self).mapValues(\.values)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue.mapValues(Values.init))
    }

    /// One value as itself, several as an array.
    struct Values: Codable {
        var values: [Value]

        init(_ values: [Value]) { self.values = values }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(Value.self) { values = [one] } else { values = try container.decode([Value].self) }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            if values.count == 1 { try container.encode(values[0]) } else { try container.encode(values) }
        }
    }
}
