import Foundation
import JotterHTTP

/// Checks JSON values against the JSON Schemas of an OpenAPI document (the subset the document
/// uses: `$ref`, `type`, `properties`, `required`, `additionalProperties`, `items`, `oneOf`,
/// `enum`, `pattern`, bounds and lengths). It also records which properties of each component
/// schema it saw, so a test can insist that samples exercise every documented property.
final class SchemaValidator {
    let document: JSONValue
    let schemas: [String: JSONValue]
    /// Component name → the property names seen in values checked against it.
    private(set) var seen: [String: Set<String>] = [:]

    init(document: JSONValue) {
        self.document = document
        if case .object(let root) = document, case .object(let components)? = root["components"],
            case .object(let schemas)? = components["schemas"]
        {
            self.schemas = schemas.reduce(into: [:]) { result, entry in
                if case .object = entry.value { result[entry.key] = entry.value }
            }
        } else {
            schemas = [:]
        }
    }

    convenience init(documentBytes: [UInt8]) throws {
        self.init(document: try JSONDecoder().decode(JSONValue.self, from: Data(documentBytes)))
    }

    /// The problems of `value` against `schema`; empty when it conforms.
    func errors(_ value: JSONValue, against schema: JSONValue, at path: String = "$", component: String? = nil) -> [String] {
        guard case .object(let schema) = schema else { return ["\(path): the schema is not an object"] }
        var errors: [String] = []
        if case .string(let ref)? = schema["$ref"] {
            let name = String(ref.dropFirst("#/components/schemas/".count))
            guard ref.hasPrefix("#/components/schemas/"), let target = schemas[name] else { return ["\(path): unresolved $ref \(ref)"] }
            errors += self.errors(value, against: target, at: path, component: name)
        }
        if let types = schema["type"] {
            let allowed: [String]
            switch types {
            case .string(let one): allowed = [one]
            case .array(let many): allowed = many.compactMap { if case .string(let name) = $0 { name } else { nil } }
            default: allowed = []
            }
            guard allowed.contains(where: { Self.matches(value, type: $0) }) else {
                return errors + ["\(path): \(Self.describe(value)) is not of type \(allowed.joined(separator: " or "))"]
            }
        }
        if case .array(let options)? = schema["enum"], !options.contains(value) {
            errors.append("\(path): \(Self.describe(value)) is not one of \(options.map(Self.describe))")
        }
        if case .array(let options)? = schema["oneOf"] {
            let matching = options.filter { self.quietErrors(value, against: $0, at: path).isEmpty }
            if matching.count != 1 {
                errors.append("\(path): \(Self.describe(value)) matches \(matching.count) of the oneOf schemas, not exactly one")
            } else {
                errors += self.errors(value, against: matching[0], at: path)  // records what it saw
            }
        }
        switch value {
        case .string(let text):
            if case .string(let pattern)? = schema["pattern"],
                text.range(of: pattern, options: .regularExpression) == nil
            {
                errors.append("\(path): \"\(text)\" does not match \(pattern)")
            }
            if case .number(let minimum)? = schema["minLength"], Double(text.count) < minimum {
                errors.append("\(path): shorter than \(minimum)")
            }
            if case .number(let maximum)? = schema["maxLength"], Double(text.count) > maximum {
                errors.append("\(path): longer than \(maximum)")
            }
        case .number(let number):
            if case .number(let minimum)? = schema["minimum"], number < minimum { errors.append("\(path): \(number) < \(minimum)") }
            if case .number(let maximum)? = schema["maximum"], number > maximum { errors.append("\(path): \(number) > \(maximum)") }
        case .array(let elements):
            if let items = schema["items"] {
                for (index, element) in elements.enumerated() { errors += self.errors(element, against: items, at: "\(path)[\(index)]") }
            }
        case .object(let fields):
            let properties: [String: JSONValue]
            if case .object(let declared)? = schema["properties"] { properties = declared } else { properties = [:] }
            if case .array(let required)? = schema["required"] {
                for case .string(let name) in required where fields[name] == nil {
                    errors.append("\(path): the required property \(name) is absent")
                }
            }
            for (key, field) in fields {
                if let property = properties[key] {
                    errors += self.errors(field, against: property, at: "\(path).\(key)")
                } else if let additional = schema["additionalProperties"] {
                    if additional == .bool(false) {
                        errors.append("\(path): the property \(key) is not documented")
                    } else {
                        errors += self.errors(field, against: additional, at: "\(path).\(key)")
                    }
                }
            }
            if let component { seen[component, default: []].formUnion(fields.keys.filter { properties[$0] != nil }) }
        default:
            break
        }
        return errors
    }

    /// `errors` without recording what it saw (for trying the branches of a `oneOf`).
    private func quietErrors(_ value: JSONValue, against schema: JSONValue, at path: String) -> [String] {
        let saved = seen
        defer { seen = saved }
        return errors(value, against: schema, at: path)
    }

    /// The errors of `bytes` (a JSON document) against the component schema `name`.
    func errors(json bytes: [UInt8], component name: String) -> [String] {
        do {
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
            return errors(value, against: .object(["$ref": .string("#/components/schemas/\(name)")]))
        } catch {
            return ["not JSON: \(String(decoding: bytes, as: UTF8.self))"]
        }
    }

    static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object), ("number", .number): true
        case ("integer", .number(let number)): number.rounded() == number
        case ("integer", .integer), ("number", .integer): true
        default: false
        }
    }

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): "\(flag)"
        case .number(let number): "\(number)"
        case .integer(let number): "\(number)"
        case .string(let text): "\"\(text)\""
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Every `$ref` in the document, with where it is.
    func references() -> [(at: String, ref: String)] {
        var found: [(String, String)] = []
        func walk(_ value: JSONValue, _ path: String) {
            switch value {
            case .object(let fields):
                for (key, field) in fields {
                    if key == "$ref", case .string(let ref) = field { found.append((path, ref)) } else { walk(field, "\(path)/\(key)") }
                }
            case .array(let elements):
                for (index, element) in elements.enumerated() { walk(element, "\(path)/\(index)") }
            default: break
            }
        }
        walk(document, "#")
        return found
    }

    /// The value at a JSON pointer of the document (`#/components/schemas/Note`).
    func resolve(_ pointer: String) -> JSONValue? {
        guard pointer.hasPrefix("#") else { return nil }
        var current = document
        for token in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: true) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch current {
            case .object(let fields): guard let next = fields[key] else { return nil }; current = next
            case .array(let elements): guard let index = Int(key), elements.indices.contains(index) else { return nil }; current = elements[index]
            default: return nil
            }
        }
        return current
    }
}
