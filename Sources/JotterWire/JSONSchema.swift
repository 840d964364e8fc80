/// A JSON Schema (the 2020-12 dialect OpenAPI 3.1 uses), as much of it as the API needs to
/// describe its wire types: types (several for nullable), properties, `required`, `items`,
/// `enum`, `format`, `pattern`, bounds, `oneOf`, `additionalProperties`, `$ref`, prose and
/// examples.
///
/// ```swift
/// extension HealthStatus: SchemaDescribing {
///     public static var schema: JSONSchema {
///         .object(["status": .string(enum: ["ok"])], description: "the server can serve")
///     }
/// }
/// let nullable = JSONSchema.string().orNull          // "type": ["string", "null"]
/// let list = JSONSchema.array(of: .ref(Note.self))   // "items": {"$ref": "#/components/schemas/Note"}
/// ```
public struct JSONSchema: Sendable, Hashable {
    /// A JSON type name.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case string, integer, number, boolean, object, array, null
    }

    /// What may stand beside the declared properties.
    public indirect enum AdditionalProperties: Sendable, Hashable {
        /// `additionalProperties: false`: exactly the declared properties.
        case forbidden
        /// Every other property must match this schema.
        case schema(JSONSchema)
    }

    /// The allowed types; empty means any (the schema `{}` when nothing else is set).
    public var types: [Kind] = []
    public var properties: [String: JSONSchema] = [:]
    /// Names of the properties that are always present.
    public var required: [String] = []
    private var itemStorage: [JSONSchema] = []
    public var additionalProperties: AdditionalProperties?
    public var oneOf: [JSONSchema] = []
    public var enumValues: [Value] = []
    public var format: String?
    public var pattern: String?
    public var minimum: Int64?
    public var maximum: Int64?
    public var minLength: Int?
    public var maxLength: Int?
    public var description: String?
    public var example: Value?
    public var defaultValue: Value?
    /// A reference to a component schema: `#/components/schemas/<name>`.
    public var ref: String?

    /// The empty schema `{}`: any JSON value.
    public init() {}

    /// The schema of every element of an array.
    public var items: JSONSchema? {
        get { itemStorage.first }
        set { itemStorage = newValue.map { [$0] } ?? [] }
    }

    /// The same schema that also allows `null` (`"type": ["string", "null"]`; a `$ref` becomes
    /// `oneOf` the reference and `null`).
    public var orNull: JSONSchema {
        if ref != nil || types.isEmpty {
            var nullable = JSONSchema()
            nullable.oneOf = [self, JSONSchema(types: [.null])]
            return nullable
        }
        var copy = self
        if !copy.types.contains(.null) { copy.types.append(.null) }
        return copy
    }

    /// This schema with `description` set.
    public func described(_ description: String) -> JSONSchema {
        var copy = self
        copy.description = description
        return copy
    }

    init(types: [Kind]) { self.types = types }

    // MARK: - Builders

    /// A string, optionally with a pattern, a format, allowed values, lengths and an example.
    public static func string(
        pattern: String? = nil, format: String? = nil, enum values: [String] = [],
        minLength: Int? = nil, maxLength: Int? = nil,
        description: String? = nil, example: String? = nil
    ) -> JSONSchema {
        var schema = JSONSchema(types: [.string])
        schema.pattern = pattern
        schema.format = format
        schema.enumValues = values.map(Value.string)
        schema.minLength = minLength
        schema.maxLength = maxLength
        schema.description = description
        schema.example = example.map(Value.string)
        return schema
    }

    /// An integer, optionally bounded.
    public static func integer(
        minimum: Int64? = nil, maximum: Int64? = nil, format: String? = nil,
        description: String? = nil, example: Int64? = nil
    ) -> JSONSchema {
        var schema = JSONSchema(types: [.integer])
        schema.minimum = minimum
        schema.maximum = maximum
        schema.format = format
        schema.description = description
        schema.example = example.map(Value.integer)
        return schema
    }

    public static func boolean(description: String? = nil) -> JSONSchema {
        var schema = JSONSchema(types: [.boolean])
        schema.description = description
        return schema
    }

    /// An array whose elements all match `items`.
    public static func array(of items: JSONSchema, description: String? = nil) -> JSONSchema {
        var schema = JSONSchema(types: [.array])
        schema.items = items
        schema.description = description
        return schema
    }

    /// An object with `properties`; every property is required unless named in `optional`.
    /// `additional` nil leaves other properties allowed (request bodies, where the server
    /// ignores unknown fields); wire types the server writes pass `.forbidden`.
    public static func object(
        _ properties: [String: JSONSchema], optional: Set<String> = [],
        additional: AdditionalProperties? = nil, description: String? = nil
    ) -> JSONSchema {
        var schema = JSONSchema(types: [.object])
        schema.properties = properties
        schema.required = properties.keys.filter { !optional.contains($0) }.sorted()
        schema.additionalProperties = additional
        schema.description = description
        return schema
    }

    /// An object whose properties (any names) all match `values`: a map.
    public static func map(of values: JSONSchema, description: String? = nil) -> JSONSchema {
        var schema = JSONSchema(types: [.object])
        schema.additionalProperties = .schema(values)
        schema.description = description
        return schema
    }

    /// Exactly one of `schemas`.
    public static func oneOf(_ schemas: [JSONSchema], description: String? = nil) -> JSONSchema {
        var schema = JSONSchema()
        schema.oneOf = schemas
        schema.description = description
        return schema
    }

    /// Any JSON value.
    public static func any(description: String? = nil) -> JSONSchema {
        var schema = JSONSchema()
        schema.description = description
        return schema
    }

    /// A time of the API: a string, UTC `yyyy-MM-dd HH:mm:ss`; `description` says what the
    /// field means after the format.
    public static func timestamp(description: String? = nil, example: String = "2026-11-30 14:35:40") -> JSONSchema {
        string(
            pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$",
            description: "UTC, `yyyy-MM-dd HH:mm:ss`" + (description.map { "; \($0)" } ?? ""), example: example)
    }

    /// Bytes of any kind (`type: string, format: binary`): a file part or a download.
    public static func binary(description: String? = nil) -> JSONSchema {
        string(format: "binary", description: description)
    }

    /// A reference to the component schema of `type`.
    public static func ref(_ type: any SchemaDescribing.Type) -> JSONSchema {
        ref(named: type.componentName)
    }

    /// A reference to the component schema called `name`.
    public static func ref(named name: String) -> JSONSchema {
        var schema = JSONSchema()
        schema.ref = "#/components/schemas/\(name)"
        return schema
    }

    /// The component name a `$ref` points to, when this is a reference to a component schema.
    public var referencedComponent: String? {
        let prefix = "#/components/schemas/"
        guard let ref, ref.hasPrefix(prefix) else { return nil }
        return String(ref.dropFirst(prefix.count))
    }

    /// This schema and every schema nested in it, depth first.
    public var allSchemas: [JSONSchema] {
        var nested: [JSONSchema] = [self]
        for key in properties.keys.sorted() { nested += properties[key]!.allSchemas }
        if let items { nested += items.allSchemas }
        if case .schema(let schema) = additionalProperties { nested += schema.allSchemas }
        for schema in oneOf { nested += schema.allSchemas }
        return nested
    }
}

extension JSONSchema {
    /// A JSON value, for `enum`, `example` and `default`, and for whole documents built from
    /// schemas (objects keep no order: writers sort their keys).
    public typealias Value = JSONValue
}

/// A wire type that declares its JSON Schema beside its Codable conformance, so the OpenAPI
/// document is derived from the types the server encodes.
///
/// ```swift
/// extension HelloMessage: SchemaDescribing {
///     public static var schema: JSONSchema { .object(["message": .string(example: "Hello Bob!")], additional: .forbidden) }
/// }
/// ```
public protocol SchemaDescribing {
    /// The schema of this type's JSON form.
    static var schema: JSONSchema { get }
    /// The name under `#/components/schemas/`; by default the type's own name.
    static var componentName: String { get }
}

extension SchemaDescribing {
    public static var componentName: String { String(describing: Self.self) }
}

extension JSONSchema {
    /// The component schemas of `types`, by their component names.
    public static func components(_ types: [any SchemaDescribing.Type]) -> [String: JSONSchema] {
        Dictionary(types.map { ($0.componentName, $0.schema) }, uniquingKeysWith: { first, _ in first })
    }
}
