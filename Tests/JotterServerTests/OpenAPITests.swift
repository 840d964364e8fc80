import Foundation
import Testing
import JotterTestSupport

@Suite("OpenAPI document")
struct OpenAPITests {
    @Test("/openapi.json names exactly the routes the server registers")
    func exact() throws {
        try TestApp.with { app in
            let response = try app.request("GET", "/openapi.json")
            #expect(response.status == 200)
            let document = try response.json()
            #expect(document["openapi"] as? String == "3.1.0")
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            let methods: Set<String> = ["get", "put", "post", "patch", "delete", "options", "head"]
            var documented = Set<String>()
            for (path, item) in paths {
                for method in item.keys where methods.contains(method) { documented.insert("\(method.uppercased()) \(path)") }
            }
            let registered = Set(app.app.routes.map { route in
                let path = route.path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }
                    .reduce("") { $0 + "/" + $1 }
                return "\(route.method) " + (path.isEmpty ? "/" : path)  // the web app is at the root
            })
            #expect(registered.subtracting(documented).isEmpty, "not documented: \(registered.subtracting(documented).sorted())")
            // The one extra: POST on a note documents the method override the router applies.
            #expect(documented.subtracting(registered) == ["POST /notes/{id}"])
            // Every schema reference resolves.
            let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
            let text = response.text
            for match in text.matches(of: /"#\/components\/schemas\/(\w+)"/) {
                #expect(schemas[String(match.1)] != nil, "missing schema \(match.1)")
            }
        }
    }
}
