/// An HTTP request as handlers see it: complete, with its body read.
public struct Request: Sendable {
    /// The method after any `_method` / `X-HTTP-Method-Override`.
    public var method: HTTPMethod
    /// The method on the request line.
    public let originalMethod: HTTPMethod
    /// The request-target exactly as sent, e.g. `/hello?name=Bob`.
    public let target: String
    /// The path part of the target, still percent-encoded.
    public let path: Substring
    /// The query part of the target without `?`, still percent-encoded; `nil` when absent.
    public let rawQuery: Substring?
    public let version: String
    public let headers: HTTPHeaders
    /// The raw body bytes (empty when the body was streamed elsewhere, as multipart is).
    public let rawBody: [UInt8]
    /// The file parts of a multipart body, in temporary files until the request completes.
    public let files: [UploadedFile]
    /// The request id, also sent back as `X-Request-Id`.
    public let id: String
    /// The client's address as text.
    public let remoteAddress: String
    private let decodedBody: Result<RequestBody, HTTPError>

    public init(method: HTTPMethod, target: String, version: String = "HTTP/1.1", headers: HTTPHeaders = HTTPHeaders(),
                body: [UInt8] = [], multipart: (fields: FormFields, files: [UploadedFile])? = nil, id: String = "-", remoteAddress: String = "-") {
        self.method = method
        self.originalMethod = method
        self.target = target
        if let question = target.firstIndex(of: "?") {
            path = target[..<question]
            rawQuery = target[target.index(after: question)...]
        } else {
            path = target[...]
            rawQuery = nil
        }
        self.version = version
        self.headers = headers
        self.rawBody = body
        self.files = multipart?.files ?? []
        self.id = id
        self.remoteAddress = remoteAddress
        if let multipart {
            decodedBody = .success(.form(multipart.fields))
        } else {
            decodedBody = Result { () throws(HTTPError) in try RequestBody.decode(body, contentType: headers["Content-Type"]) }
        }
    }

    /// The decoded query string; `400` naming the problem when it is malformed.
    public func query() throws(HTTPError) -> FormFields {
        guard let rawQuery else { return FormFields() }
        return try FormFields(decoding: rawQuery.utf8, context: "query")
    }

    /// The body decoded by Content-Type (form, JSON or empty); `400`/`415` when it can't be.
    public func body() throws(HTTPError) -> RequestBody {
        try decodedBody.get()
    }
}

/// What the router knows about a request beyond the request itself.
public struct RequestContext: Sendable {
    /// Path parameters by name, e.g. `id` for `/notes/:id`.
    public var parameters: Parameters = Parameters()
    /// The error routing found (404, 405, a bad override), thrown by the fallback responder so
    /// that it passes through the same middleware as every route.
    var routingError: HTTPError?
    public init() {}
}

/// Decoded path parameters, with typed access that fails as `404`.
public struct Parameters: Sendable {
    var values: [(name: String, value: String)] = []

    public subscript(name: String) -> String? {
        values.first { $0.name == name }?.value
    }

    /// The parameter converted to `type`; a missing or unconvertible value is `404`, since
    /// no resource can have such a path.
    public func require<T: LosslessStringConvertible>(_ name: String, as type: T.Type = T.self) throws(HTTPError) -> T {
        guard let text = self[name], let value = T(text) else {
            throw HTTPError(.notFound, detail: "no resource at this path")
        }
        return value
    }
}
