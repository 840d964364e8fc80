import JotterWire

/// One input of a request — a query parameter, a path segment or a body field — declared once:
/// its name, how its text parses, what a client is told when it does not, and how the OpenAPI
/// document describes it. The same declaration reads the request (`QueryInput`) and lists the
/// parameter (`OpenAPIParameter.query(_:)`), so the two cannot drift apart.
///
/// ```swift
/// static let order = InputField.choice("order", ["desc": Order.newestFirst, "asc": .oldestFirst],
///                                      description: "`desc` (default) newest first, `asc` oldest first")
/// var input = try QueryInput(request)
/// let order = input[order] ?? .newestFirst   // "must be desc or asc" in the 400 when neither
/// try input.finish()
/// ```
public struct InputField<Value: Sendable>: Sendable {
    /// The parameter's or field's name.
    public let name: String
    /// The schema the OpenAPI document shows.
    public let schema: JSONSchema
    /// The OpenAPI document's prose for the parameter.
    public let description: String?
    /// The error a client gets for a value that does not parse: `must be …`.
    public let message: String
    private let parser: @Sendable (String) -> Value?

    /// A field whose text `parse` reads (nil: invalid, answered with `message`).
    public init(_ name: String, schema: JSONSchema, description: String? = nil, message: String,
                parse: @escaping @Sendable (String) -> Value?) {
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
    /// One of a few words, each meaning a value; the schema lists the words and the message
    /// names them in their order (`must be desc, asc or updated`).
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

/// A request's query, read field by field: each invalid value is noted, and `finish()` answers
/// all of them in one `400` (`errors` lists each one), so a client learns every mistake at once.
public struct QueryInput {
    /// The decoded query.
    public let fields: FormFields
    private var errors: [HTTPError.FieldError] = []

    /// The query of `request`; `400` when it is not valid percent-encoded UTF-8.
    public init(_ request: Request) throws(HTTPError) {
        fields = try request.query()
    }

    /// The value of `field`: nil when absent, or invalid (then noted for `finish()`).
    public subscript<Value>(field: InputField<Value>) -> Value? {
        mutating get {
            guard let text = fields[field.name] else { return nil }
            guard let value = field.parse(text) else {
                errors.append(field.error)
                return nil
            }
            return value
        }
    }

    /// `400` listing every invalid value read, when there was one.
    public func finish() throws(HTTPError) {
        guard errors.isEmpty else { throw HTTPError.badQuery(errors) }
    }
}
