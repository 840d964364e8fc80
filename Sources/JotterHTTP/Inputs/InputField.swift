import JotterWire

/// One input of a request — a query parameter, a path segment or a body field — declared once:
/// its name, how its text parses, what a client is told when it does not, and how the OpenAPI
/// document describes it. The same declaration reads the request (`QueryInput`) and lists the
/// parameter (`OpenAPIParameter.query(_:)`), so the two cannot drift apart.
///
/// ```swift
/// static let order = InputField.choice("order", ["desc": Order.newestFirst, "asc": .oldestFirst],
///                                      description: "`desc` (default) newest first, `asc` oldest first")
/// // "must be desc or asc" in the 400 when it is neither:
/// let chosen = try QueryInput.read(request) { $0[Self.order] ?? .newestFirst }
/// ```
public struct InputField<Value: Sendable>: Sendable {
    /// The parameter's or field's name.
    public let name: String
    /// The schema the OpenAPI document shows.
    public let schema: JSONSchema
    /// The OpenAPI document's prose for the parameter.
    public let description: String?
    /// The error a client gets for a value that does not parse: `must be …` (a path segment
    /// that does not parse names no resource: the route answers `404` instead).
    public let message: String
    private let parser: @Sendable (String) -> Value?

    /// A field whose text `parse` reads (nil: invalid, answered with `message`).
    public init(
        _ name: String, schema: JSONSchema, description: String? = nil, message: String,
        parse: @escaping @Sendable (String) -> Value?
    ) {
        self.name = name
        self.schema = schema
        self.description = description
        self.message = message
        self.parser = parse
    }

    /// The value `text` gives, or nil when it is not one.
    public func parse(_ text: String) -> Value? { parser(text) }

    /// The error of an invalid value, as a problem's `errors` lists it.
    public var error: HTTPError.FieldError { HTTPError.FieldError(field: name, message: message) }
}

extension InputField where Value == String {
    /// Any text (the query's decoding already checked it is UTF-8).
    public static func text(_ name: String, description: String? = nil) -> Self {
        Self(name, schema: .string(), description: description, message: "must be text") { $0 }
    }
}

extension InputField {
    /// One of a few words (all different), each meaning a value; the schema lists the words and
    /// the message names them in their order (`must be desc, asc or updated`).
    public static func choice(_ name: String, _ choices: KeyValuePairs<String, Value>, description: String? = nil) -> Self {
        let words = choices.map(\.key)
        let listed = words.count < 2 ? words.joined() : words.dropLast().joined(separator: ", ") + " or " + words[words.count - 1]
        let table = Dictionary(uniqueKeysWithValues: choices.map { ($0.key, $0.value) })
        return Self(name, schema: .string(enum: words), description: description, message: "must be \(listed)") { table[$0] }
    }
}

extension OpenAPIParameter {
    /// The query parameter `field` reads.
    public static func query<Value>(_ field: InputField<Value>, required: Bool = false) -> Self {
        .query(field.name, field.schema, required: required, description: field.description)
    }

    /// The path segment `field` reads.
    public static func path<Value>(_ field: InputField<Value>) -> Self {
        .path(field.name, field.schema, description: field.description)
    }
}

/// A request's query, read field by field: each invalid value is noted once, and when the
/// reading is done all of them are answered in one `400` (`errors` lists each one, in the order
/// read), so a client learns every mistake at once.
public struct QueryInput {
    /// The decoded query.
    public let fields: FormFields
    private var errors: [HTTPError.FieldError] = []

    private init(_ fields: FormFields) { self.fields = fields }

    /// What `read` makes of the query of `request`: `400` when the query is not valid
    /// percent-encoded UTF-8, or when a field `read` looked at was invalid.
    public static func read<Result>(_ request: Request, _ read: (inout QueryInput) -> Result) throws(HTTPError) -> Result {
        var input = QueryInput(try request.query())
        let result = read(&input)
        guard input.errors.isEmpty else { throw HTTPError.badQuery(input.errors) }
        return result
    }

    /// The value of `field`: nil when absent, or invalid (then noted for the `400`).
    public subscript<Value>(field: InputField<Value>) -> Value? {
        mutating get {
            guard let text = fields[field.name] else { return nil }
            guard let value = field.parse(text) else {
                if !errors.contains(where: { $0.field == field.name }) { errors.append(field.error) }
                return nil
            }
            return value
        }
    }
}
