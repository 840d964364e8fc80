import Foundation
import Testing
@testable import JotterHTTP
import JotterWire

/// The generator on a small route table built with `RouterBuilder`, as an application builds one.
@Suite("OpenAPI generator")
struct OpenAPIDocumentTests {
    struct Item: SchemaDescribing {
        static var schema: JSONSchema {
            .object(
                ["id": .string(pattern: "^[0-9]+$"), "note": JSONSchema.string().orNull, "tags": .array(of: .string())],
                optional: ["tags"], additional: .forbidden)
        }
    }

    static let show = OpenAPIOperation(
        operationID: "showItem", summary: "Show an item", description: "One item.", tags: ["items"],
        parameters: [.path("id", .string(pattern: "^[0-9]+$"), description: "the id"), .header("If-None-Match")],
        responses: [
            200: .json(.ref(Item.self), "the item", headers: ["ETag": OpenAPIHeader("the version")]),
            404: .problem("no such item"),
        ])

    static func table() -> [RouteEntry] {
        var routes = RouterBuilder()
        routes.get("/items/:id", operation: show) { _, _ in "item" }
        routes.get("/old/:id", operation: .alias(of: "/items/:id", note: "the old path")) { _, _ in "item" }
        routes.post(
            "/items",
            operation: OpenAPIOperation(
                summary: "Add", requestBody: .fields(.ref(Item.self), required: true),
                responses: [201: .empty("added")])
        ) { _, _ in "added" }
        routes.delete("/items/:id/tags/:tag", operation: OpenAPIOperation(responses: [200: .empty("gone")])) { _, _ in "gone" }
        routes.get("/undocumented") { _, _ in "x" }
        return routes.build().table
    }

    static func document() throws -> [String: Any] {
        let bytes = OpenAPIDocument.render(
            routes: table(),
            info: OpenAPIInfo(title: "Items", version: "2", description: "Prose \"quoted\"\n\tand\u{1}", servers: ["http://127.0.0.1:1"]),
            components: JSONSchema.components([Item.self]))
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    static func operation(_ document: [String: Any], _ path: String, _ method: String) throws -> [String: Any] {
        try #require(((document["paths"] as? [String: Any])?[path] as? [String: Any])?[method] as? [String: Any], "\(method) \(path)")
    }

    @Test("the table lists every route in order, with its pattern and operation")
    func table() {
        let table = Self.table()
        #expect(
            table.map { "\($0.method) \($0.path)" } == [
                "GET /items/:id", "GET /old/:id", "POST /items", "DELETE /items/:id/tags/:tag", "GET /undocumented",
            ])
        #expect(table[0].operation?.operationID == "showItem")
        #expect(table[4].operation == nil)
        #expect(table[3].openAPIPath == "/items/{id}/tags/{tag}" && table[3].pathParameterNames == ["id", "tag"])
    }

    @Test("info, servers, components; a route without an operation is left out")
    func skeleton() throws {
        let document = try Self.document()
        #expect(document["openapi"] as? String == "3.1.0")
        let info = try #require(document["info"] as? [String: Any])
        #expect(info["title"] as? String == "Items" && info["version"] as? String == "2")
        #expect(info["description"] as? String == "Prose \"quoted\"\n\tand\u{1}")
        #expect((document["servers"] as? [[String: Any]])?.first?["url"] as? String == "http://127.0.0.1:1")
        let paths = try #require(document["paths"] as? [String: Any])
        #expect(Set(paths.keys) == ["/items/{id}", "/old/{id}", "/items", "/items/{id}/tags/{tag}"])
        let item = try #require(((document["components"] as? [String: Any])?["schemas"] as? [String: Any])?["Item"] as? [String: Any])
        #expect(item["required"] as? [String] == ["id", "note"])
        #expect(item["additionalProperties"] as? Bool == false)
        #expect(((item["properties"] as? [String: Any])?["note"] as? [String: Any])?["type"] as? [String] == ["string", "null"])
    }

    @Test("an operation: id, prose, parameters (path ones from the pattern first), responses with content and headers")
    func operation() throws {
        let show = try Self.operation(try Self.document(), "/items/{id}", "get")
        #expect(show["operationId"] as? String == "showItem")
        #expect(show["summary"] as? String == "Show an item" && show["tags"] as? [String] == ["items"])
        let parameters = try #require(show["parameters"] as? [[String: Any]])
        #expect(
            parameters.map { "\($0["in"]!) \($0["name"]!) \($0["required"] as? Bool == true)" } == ["path id true", "header If-None-Match false"])
        #expect((parameters[0]["schema"] as? [String: Any])?["pattern"] as? String == "^[0-9]+$")
        let responses = try #require(show["responses"] as? [String: [String: Any]])
        #expect(Set(responses.keys) == ["200", "400", "404", "414"], "a route with parameters also documents the router's 400 and the engine's 414")
        #expect((responses["414"]?["description"] as? String)?.contains("6000 bytes") == true)
        let ok = try #require(responses["200"])
        #expect(
            ((ok["content"] as? [String: Any])?["application/json"] as? [String: Any]).map {
                ($0["schema"] as? [String: String]) == ["$ref": "#/components/schemas/Item"]
            } == true)
        #expect(((ok["headers"] as? [String: Any])?["ETag"] as? [String: Any])?["required"] as? Bool == true)
        #expect(((responses["404"]?["content"] as? [String: Any])?["application/problem+json"]) != nil)
    }

    @Test("undeclared path parameters are required strings; ids are derived when not given")
    func derived() throws {
        let document = try Self.document()
        let delete = try Self.operation(document, "/items/{id}/tags/{tag}", "delete")
        #expect(delete["operationId"] as? String == "deleteItemsByIdTagsByTag")
        let parameters = try #require(delete["parameters"] as? [[String: Any]])
        #expect(parameters.map { $0["name"] as? String } == ["id", "tag"])
        #expect(
            parameters.allSatisfy {
                $0["in"] as? String == "path" && $0["required"] as? Bool == true && ($0["schema"] as? [String: String]) == ["type": "string"]
            })
        let add = try Self.operation(document, "/items", "post")
        #expect(add["operationId"] as? String == "postItems")
        #expect((add["requestBody"] as? [String: Any])?["required"] as? Bool == true)
        #expect(
            Set(((add["requestBody"] as? [String: Any])?["content"] as? [String: Any])?.keys ?? [:].keys)
                == ["application/x-www-form-urlencoded", "application/json", "multipart/form-data"])
        #expect(Set((add["responses"] as? [String: Any])?.keys ?? [:].keys) == ["201"], "no 400 where the path has no parameters")
    }

    @Test("an alias is its original's operation with its own id, the note in the summary and a pointer in the description")
    func alias() throws {
        let document = try Self.document()
        var alias = try Self.operation(document, "/old/{id}", "get")
        var original = try Self.operation(document, "/items/{id}", "get")
        #expect(alias["operationId"] as? String == "getOldById")
        #expect(alias["summary"] as? String == "Show an item (the old path)")
        #expect(alias["description"] as? String == "One item.\n\nThe same operation as `GET /items/{id}`.")
        for key in ["operationId", "summary", "description"] { alias[key] = nil; original[key] = nil }
        #expect(
            try JSONSerialization.data(withJSONObject: alias, options: .sortedKeys)
                == JSONSerialization.data(withJSONObject: original, options: .sortedKeys))
    }

    @Test("the same table always renders the same bytes: sorted keys, two-space indentation, escaped strings, a final newline")
    func deterministic() {
        let render = {
            OpenAPIDocument.render(
                routes: Self.table(), info: OpenAPIInfo(title: "Items", version: "2", description: "a\"b\\c\n\u{1}é"),
                components: JSONSchema.components([Item.self]))
        }
        let text = String(decoding: render(), as: UTF8.self)
        #expect(render() == render())
        #expect(text.hasPrefix("{\n  \"components\": {\n    \"schemas\": {\n      \"Item\": {\n        \"additionalProperties\": false,\n"))
        #expect(text.contains(#""description": "a\"b\\c\n\u0001é""#))
        #expect(text.hasSuffix("}\n"))
        #expect(PrettyJSON.render([]) == Array("[]\n".utf8) && PrettyJSON.render([:]) == Array("{}\n".utf8))
        #expect(String(decoding: PrettyJSON.render([1, true, .null, "x"]), as: UTF8.self) == "[\n  1,\n  true,\n  null,\n  \"x\"\n]\n")
    }

    @Test("schema builders: nullable references become oneOf, maps, examples, bounds")
    func schemas() {
        #expect(JSONSchema.ref(Item.self).orNull.jsonValue == ["oneOf": [["$ref": "#/components/schemas/Item"], ["type": "null"]]])
        #expect(
            JSONSchema.map(of: .integer(minimum: 0, maximum: 9)).jsonValue
                == ["type": "object", "additionalProperties": ["type": "integer", "minimum": 0, "maximum": 9]])
        #expect(JSONSchema.string(enum: ["a", "b"], example: "a").jsonValue == ["type": "string", "enum": ["a", "b"], "examples": ["a"]])
        #expect(JSONSchema.any().jsonValue == [:])
        #expect(JSONSchema.ref(named: "Item").referencedComponent == "Item")
        #expect(Item.schema.allSchemas.count == 5)
    }

    @Test("an alias of nothing, a path parameter the pattern lacks, and a repeated operation id stop the program")
    func programmingErrors() async {
        await #expect(processExitsWith: .failure) {
            _ = OpenAPIDocument.document(
                routes: [RouteEntry(method: .get, path: "/old", operation: .alias(of: "/new", note: "old"))],
                info: OpenAPIInfo(title: "x", version: "1"), components: [:])
        }
        await #expect(processExitsWith: .failure) {
            let operation = OpenAPIOperation(parameters: [.path("id", .string())], responses: [200: .empty("ok")])
            _ = OpenAPIDocument.document(
                routes: [RouteEntry(method: .get, path: "/items", operation: operation)],
                info: OpenAPIInfo(title: "x", version: "1"), components: [:])
        }
        await #expect(processExitsWith: .failure) {
            let operation = OpenAPIOperation(operationID: "same", responses: [200: .empty("ok")])
            _ = OpenAPIDocument.document(
                routes: [RouteEntry(method: .get, path: "/a", operation: operation), RouteEntry(method: .get, path: "/b", operation: operation)],
                info: OpenAPIInfo(title: "x", version: "1"), components: [:])
        }
    }
}
