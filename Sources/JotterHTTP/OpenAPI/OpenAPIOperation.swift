import JotterWire

/// The OpenAPI description of one route, given where the route is registered:
///
/// ```swift
/// routes.get("/notes/:id", operation: NotesController.showOperation, handler: show)
/// routes.post("/upload", operation: .alias(of: "/uploads", note: "the original client's path"), handler: create)
/// ```
///
/// Path parameters come from the route's pattern (`:id` → `{id}`, required, a string unless
/// `parameters` gives it a schema with `.path(…)`).
public struct OpenAPIOperation: Sendable {
    /// Unique in the document; derived from the method and path when `nil`.
    public var operationID: String?
    public var summary: String?
    public var description: String?
    public var tags: [String]
    /// Query, header and (to give them a schema and prose) path parameters.
    public var parameters: [OpenAPIParameter]
    public var requestBody: OpenAPIRequestBody?
    /// By status code.
    public var responses: [Int: OpenAPIResponse]
    public var deprecated: Bool
    /// The path whose operation (same method) this route repeats; see `alias(of:note:operationID:)`.
    public internal(set) var aliasOf: String?

    public init(
        operationID: String? = nil, summary: String? = nil, description: String? = nil, tags: [String] = [],
        parameters: [OpenAPIParameter] = [], requestBody: OpenAPIRequestBody? = nil,
        responses: [Int: OpenAPIResponse], deprecated: Bool = false
    ) {
        self.operationID = operationID
        self.summary = summary
        self.description = description
        self.tags = tags
        self.parameters = parameters
        self.requestBody = requestBody
        self.responses = responses
        self.deprecated = deprecated
    }

    /// The same operation as the route of the same method on `path`, documented again under
    /// this route's path with its own operation id and `note` added to the summary and
    /// description — so an alias path is declared, never copied.
    public static func alias(of path: String, note: String, operationID: String? = nil) -> OpenAPIOperation {
        var operation = OpenAPIOperation(operationID: operationID, summary: note, responses: [:])
        operation.aliasOf = path
        return operation
    }
}

/// A query, header or path parameter.
public struct OpenAPIParameter: Sendable {
    public enum Location: String, Sendable {
        case query, header, path
    }

    public var name: String
    public var location: Location
    public var required: Bool
    public var description: String?
    public var schema: JSONSchema

    public init(name: String, location: Location, required: Bool = false, description: String? = nil, schema: JSONSchema = .string()) {
        self.name = name
        self.location = location
        self.required = required || location == .path
        self.description = description
        self.schema = schema
    }

    public static func query(_ name: String, _ schema: JSONSchema = .string(), required: Bool = false, description: String? = nil) -> Self {
        Self(name: name, location: .query, required: required, description: description, schema: schema)
    }

    public static func header(_ name: String, _ schema: JSONSchema = .string(), required: Bool = false, description: String? = nil) -> Self {
        Self(name: name, location: .header, required: required, description: description, schema: schema)
    }

    /// The schema and prose of the pattern's `:name` segment.
    public static func path(_ name: String, _ schema: JSONSchema, description: String? = nil) -> Self {
        Self(name: name, location: .path, required: true, description: description, schema: schema)
    }
}

/// A request body: its schema for each media type it may come as.
public struct OpenAPIRequestBody: Sendable {
    public var required: Bool
    public var description: String?
    /// Media type → schema.
    public var content: [String: JSONSchema]

    public init(required: Bool, description: String? = nil, content: [String: JSONSchema]) {
        self.required = required
        self.description = description
        self.content = content
    }

    /// The fields of `schema` as any of the body types the server decodes: form-urlencoded,
    /// JSON and multipart.
    public static func fields(_ schema: JSONSchema, required: Bool, description: String? = nil) -> Self {
        Self(
            required: required, description: description,
            content: [
                "application/x-www-form-urlencoded": schema, "application/json": schema, "multipart/form-data": schema,
            ])
    }
}

/// One documented response.
public struct OpenAPIResponse: Sendable {
    public var description: String
    /// Media type → schema; empty for a response without a body.
    public var content: [String: JSONSchema]
    public var headers: [String: OpenAPIHeader]

    public init(_ description: String, content: [String: JSONSchema] = [:], headers: [String: OpenAPIHeader] = [:]) {
        self.description = description
        self.content = content
        self.headers = headers
    }

    /// An `application/json` body.
    public static func json(_ schema: JSONSchema, _ description: String, headers: [String: OpenAPIHeader] = [:]) -> Self {
        Self(description, content: ["application/json": schema], headers: headers)
    }

    /// An `application/problem+json` body (the `Problem` component schema).
    public static func problem(_ description: String, headers: [String: OpenAPIHeader] = [:]) -> Self {
        Self(description, content: ["application/problem+json": .ref(named: problemComponent)], headers: headers)
    }

    /// No body.
    public static func empty(_ description: String, headers: [String: OpenAPIHeader] = [:]) -> Self {
        Self(description, headers: headers)
    }

    /// The component schema that `.problem` refers to.
    public static let problemComponent = "Problem"
}

/// A response header.
public struct OpenAPIHeader: Sendable {
    public var description: String?
    public var required: Bool
    public var schema: JSONSchema

    public init(_ description: String? = nil, required: Bool = true, schema: JSONSchema = .string()) {
        self.description = description
        self.required = required
        self.schema = schema
    }
}

/// One route of the table: what `Router.table` lists and `OpenAPIDocument` documents.
public struct RouteEntry: Sendable {
    public var method: HTTPMethod
    /// The pattern as registered, `:name` for a parameter: `/notes/:id`.
    public var path: String
    public var operation: OpenAPIOperation?

    public init(method: HTTPMethod, path: String, operation: OpenAPIOperation?) {
        self.method = method
        self.path = path
        self.operation = operation
    }

    /// The path in OpenAPI's form: `/notes/{id}`.
    public var openAPIPath: String {
        "/" + path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
    }

    /// The names of the pattern's parameters, in order.
    public var pathParameterNames: [String] {
        path.split(separator: "/").filter { $0.hasPrefix(":") }.map { String($0.dropFirst()) }
    }
}
