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
    public var args: [String: [String]]
    /// The form fields (form-urlencoded or the plain fields of multipart).
    public var form: [String: [String]]
    /// The file parts by field name.
    public var files: [String: [File]]
    /// The body parsed as JSON, when it was JSON.
    public var json: JSONValue?
    /// The raw body as text when it was neither form nor multipart.
    public var data: String
    /// The request headers (repeated ones joined by commas).
    public var headers: [String: String]

    enum CodingKeys: String, CodingKey { case method, url, args, form, files, json, data, headers }

    public init(method: String, url: String, args: [String: [String]] = [:], form: [String: [String]] = [:],
                files: [String: [File]] = [:], json: JSONValue? = nil, data: String = "", headers: [String: String] = [:]) {
        self.method = method
        self.url = url
        self.args = args
        self.form = form
        self.files = files
        self.json = json
        self.data = data
        self.headers = headers
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        method = try container.decode(String.self, forKey: .method)
        url = try container.decode(String.self, forKey: .url)
        args = try container.decode([String: OneOrMany<String>].self, forKey: .args).mapValues(\.values)
        form = try container.decode([String: OneOrMany<String>].self, forKey: .form).mapValues(\.values)
        files = try container.decode([String: OneOrMany<File>].self, forKey: .files).mapValues(\.values)
        json = try container.decodeIfPresent(JSONValue.self, forKey: .json).flatMap { $0 == .null ? nil : $0 }
        data = try container.decode(String.self, forKey: .data)
        headers = try container.decode([String: String].self, forKey: .headers)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(method, forKey: .method)
        try container.encode(url, forKey: .url)
        try container.encode(args.mapValues(OneOrMany.init), forKey: .args)
        try container.encode(form.mapValues(OneOrMany.init), forKey: .form)
        try container.encode(files.mapValues(OneOrMany.init), forKey: .files)
        try container.encode(json ?? .null, forKey: .json)
        try container.encode(data, forKey: .data)
        try container.encode(headers, forKey: .headers)
    }

    /// One value as itself, several as an array.
    struct OneOrMany<Value: Codable>: Codable {
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
