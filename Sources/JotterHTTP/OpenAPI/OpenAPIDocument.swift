import JotterWire

/// The document's `info` and `servers`.
public struct OpenAPIInfo: Sendable {
    public var title: String
    public var version: String
    public var description: String?
    /// Base URLs.
    public var servers: [String]

    public init(title: String, version: String, description: String? = nil, servers: [String] = []) {
        self.title = title
        self.version = version
        self.description = description
        self.servers = servers
    }
}

/// An OpenAPI 3.1 document derived from the route table: one operation per route (an alias
/// repeats the operation it names), path parameters from the patterns, and the component
/// schemas the wire types declare.
///
/// ```swift
/// let bytes = OpenAPIDocument.render(routes: router.table, info: OpenAPIInfo(title: "Jotter", version: "1"),
///                                    components: JSONSchema.components(WireSchemas.types))
/// ```
///
/// The output is deterministic: keys sorted, two-space indentation, a final newline.
public enum OpenAPIDocument {
    /// The methods in the order OpenAPI path items list them.
    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// The document as pretty-printed JSON.
    public static func render(routes: [RouteEntry], info: OpenAPIInfo, components: [String: JSONSchema]) -> [UInt8] {
        PrettyJSON.render(document(routes: routes, info: info, components: components))
    }

    /// The document as a JSON value. Routes without an operation are left out (a test of the
    /// application should insist that there are none). An alias whose original is missing, a
    /// path parameter that is not in the pattern or a repeated operation id is a programming
    /// error and traps.
    public static func document(routes: [RouteEntry], info: OpenAPIInfo, components: [String: JSONSchema]) -> JSONSchema.Value {
        var paths: [String: [String: JSONSchema.Value]] = [:]
        var operationIDs: Set<String> = []
        for route in routes {
            guard let operation = resolved(route, in: routes) else { continue }
            let method = route.method.rawValue.lowercased()
            let rendered = render(operation, for: route)
            if case .object(let fields) = rendered, case .string(let id)? = fields["operationId"] {
                precondition(operationIDs.insert(id).inserted, "OpenAPI: operation id \(id) is used twice")
            }
            paths[route.openAPIPath, default: [:]][method] = rendered
        }
        var document: [String: JSONSchema.Value] = [
            "openapi": "3.1.0",
            "info": .object(
                compact([
                    "title": .string(info.title), "version": .string(info.version), "description": info.description.map(JSONSchema.Value.string),
                ])),
            "paths": .object(paths.mapValues(JSONSchema.Value.object)),
            "components": ["schemas": .object(components.mapValues(\.jsonValue))],
        ]
        if !info.servers.isEmpty {
            document["servers"] = .array(info.servers.map { ["url": .string($0)] })
        }
        return .object(document)
    }

    /// The operation documented for `route`: its own, or for an alias the original's with the
    /// alias's note and operation id.
    static func resolved(_ route: RouteEntry, in routes: [RouteEntry]) -> OpenAPIOperation? {
        guard let operation = route.operation else { return nil }
        guard let target = operation.aliasOf else { return operation }
        guard let original = routes.first(where: { $0.method == route.method && $0.path == target })?.operation, original.aliasOf == nil else {
            preconditionFailure("OpenAPI: \(route.method) \(route.path) is an alias of \(route.method) \(target), which has no operation")
        }
        var alias = original
        let note = operation.summary ?? "an alias"
        alias.operationID = operation.operationID ?? derivedID(route)
        alias.summary = original.summary.map { "\($0) (\(note))" } ?? note
        let sameAs = "The same operation as `\(route.method) \(RouteEntry(method: route.method, path: target, operation: nil).openAPIPath)`."
        alias.description = original.description.map { "\($0)\n\n\(sameAs)" } ?? sameAs
        return alias
    }

    static func render(_ operation: OpenAPIOperation, for route: RouteEntry) -> JSONSchema.Value {
        let names = route.pathParameterNames
        for parameter in operation.parameters where parameter.location == .path {
            precondition(
                names.contains(parameter.name),
                "OpenAPI: \(route.method) \(route.path) documents a path parameter '\(parameter.name)' its pattern lacks")
        }
        let pathParameters = names.map { name in
            operation.parameters.first { $0.location == .path && $0.name == name } ?? .path(name, .string())
        }
        let parameters = pathParameters + operation.parameters.filter { $0.location != .path }
        var responses = operation.responses
        if !names.isEmpty, responses[400] == nil {
            // The router decodes a path with parameters; a bad percent-escape there is a 400.
            responses[400] = .problem("the path is not valid percent-encoded UTF-8")
        }
        if parameters.contains(where: { $0.location == .path || $0.location == .query }), responses[414] == nil {
            // The engine answers a request-target past its limit before any route is chosen.
            responses[414] = .problem("the request-target (path and query) is longer than \(FramingCheck.maxTargetLength) bytes")
        }
        var fields: [String: JSONSchema.Value?] = [
            "operationId": .string(operation.operationID ?? derivedID(route)),
            "summary": operation.summary.map(JSONSchema.Value.string),
            "description": operation.description.map(JSONSchema.Value.string),
            "responses": .object(Dictionary(uniqueKeysWithValues: responses.map { (String($0.key), render($0.value)) })),
        ]
        if !operation.tags.isEmpty { fields["tags"] = .array(operation.tags.map(JSONSchema.Value.string)) }
        if !parameters.isEmpty { fields["parameters"] = .array(parameters.map(render)) }
        if let body = operation.requestBody {
            fields["requestBody"] = .object(
                compact([
                    "required": .bool(body.required),
                    "description": body.description.map(JSONSchema.Value.string),
                    "content": content(body.content),
                ]))
        }
        if operation.deprecated { fields["deprecated"] = .bool(true) }
        return .object(compact(fields))
    }

    static func render(_ parameter: OpenAPIParameter) -> JSONSchema.Value {
        .object(
            compact([
                "name": .string(parameter.name),
                "in": .string(parameter.location.rawValue),
                "required": .bool(parameter.required),
                "description": parameter.description.map(JSONSchema.Value.string),
                "schema": parameter.schema.jsonValue,
            ]))
    }

    static func render(_ response: OpenAPIResponse) -> JSONSchema.Value {
        var fields: [String: JSONSchema.Value] = ["description": .string(response.description)]
        if !response.content.isEmpty { fields["content"] = content(response.content) }
        if !response.headers.isEmpty {
            fields["headers"] = .object(
                response.headers.mapValues { header in
                    .object(
                        compact([
                            "description": header.description.map(JSONSchema.Value.string),
                            "required": .bool(header.required),
                            "schema": header.schema.jsonValue,
                        ]))
                })
        }
        return .object(fields)
    }

    static func content(_ content: [String: JSONSchema]) -> JSONSchema.Value {
        .object(content.mapValues { ["schema": $0.jsonValue] })
    }

    /// `getNotesById` for `GET /notes/:id`, `getRoot` for `GET /`.
    static func derivedID(_ route: RouteEntry) -> String {
        var id = route.method.rawValue.lowercased()
        let segments = route.path.split(separator: "/")
        if segments.isEmpty { return id + "Root" }
        for segment in segments {
            let parameter = segment.hasPrefix(":")
            let words = (parameter ? segment.dropFirst() : segment).split { !$0.isLetter && !$0.isNumber }
            id += (parameter ? "By" : "") + words.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        }
        return id
    }

    static func compact(_ fields: [String: JSONSchema.Value?]) -> [String: JSONSchema.Value] {
        fields.compactMapValues { $0 }
    }
}

extension JSONSchema {
    /// The schema as JSON (`{"type": "string", "pattern": "…"}`).
    public var jsonValue: Value {
        var fields: [String: Value] = [:]
        if let ref { fields["$ref"] = .string(ref) }
        switch types.count {
        case 0: break
        case 1: fields["type"] = .string(types[0].rawValue)
        default: fields["type"] = .array(types.map { .string($0.rawValue) })
        }
        if !properties.isEmpty { fields["properties"] = .object(properties.mapValues(\.jsonValue)) }
        if !required.isEmpty { fields["required"] = .array(required.map(Value.string)) }
        if let items { fields["items"] = items.jsonValue }
        switch additionalProperties {
        case nil: break
        case .forbidden: fields["additionalProperties"] = false
        case .schema(let schema): fields["additionalProperties"] = schema.jsonValue
        }
        if !oneOf.isEmpty { fields["oneOf"] = .array(oneOf.map(\.jsonValue)) }
        if !enumValues.isEmpty { fields["enum"] = .array(enumValues) }
        if let format { fields["format"] = .string(format) }
        if let pattern { fields["pattern"] = .string(pattern) }
        if let minimum { fields["minimum"] = .integer(minimum) }
        if let maximum { fields["maximum"] = .integer(maximum) }
        if let minLength { fields["minLength"] = .integer(Int64(minLength)) }
        if let maxLength { fields["maxLength"] = .integer(Int64(maxLength)) }
        if let description { fields["description"] = .string(description) }
        if let example { fields["examples"] = [example] }
        if let defaultValue { fields["default"] = defaultValue }
        return .object(fields)
    }
}

/// Pretty-printed JSON with sorted keys: the same value always gives the same bytes.
enum PrettyJSON {
    static func render(_ value: JSONSchema.Value) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 * 1024)
        write(value, indent: 0, to: &out)
        out.append(UInt8(ascii: "\n"))
        return out
    }

    static func write(_ value: JSONSchema.Value, indent: Int, to out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .integer(let number): out += Array(String(number).utf8)
        case .number(let number): out += Array((number.isFinite ? "\(number)" : "null").utf8)
        case .string(let text): string(text, to: &out)
        case .array(let elements):
            guard !elements.isEmpty else { out += Array("[]".utf8); return }
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                out += Array((index == 0 ? "\n" : ",\n").utf8)
                out += Array(repeating: UInt8(ascii: " "), count: indent + 2)
                write(element, indent: indent + 2, to: &out)
            }
            out.append(UInt8(ascii: "\n"))
            out += Array(repeating: UInt8(ascii: " "), count: indent)
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            guard !fields.isEmpty else { out += Array("{}".utf8); return }
            out.append(UInt8(ascii: "{"))
            for (index, key) in fields.keys.sorted().enumerated() {
                out += Array((index == 0 ? "\n" : ",\n").utf8)
                out += Array(repeating: UInt8(ascii: " "), count: indent + 2)
                string(key, to: &out)
                out += Array(": ".utf8)
                write(fields[key]!, indent: indent + 2, to: &out)
            }
            out.append(UInt8(ascii: "\n"))
            out += Array(repeating: UInt8(ascii: " "), count: indent)
            out.append(UInt8(ascii: "}"))
        }
    }

    static func string(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += Array("\\\"".utf8)
            case UInt8(ascii: "\\"): out += Array("\\\\".utf8)
            case UInt8(ascii: "\n"): out += Array("\\n".utf8)
            case UInt8(ascii: "\t"): out += Array("\\t".utf8)
            case UInt8(ascii: "\r"): out += Array("\\r".utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
