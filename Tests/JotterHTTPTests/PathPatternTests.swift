import Testing
@testable import JotterHTTP

@Suite("Path patterns")
struct PathPatternTests {
    /// A request path's segments: split on `/` with empty segments left out, each one
    /// percent-decoded when it holds a `%` (the definition, written the plain way).
    static func reference(_ path: Substring) throws(HTTPError) -> [String] {
        var result: [String] = []
        for part in path.utf8.split(separator: UInt8(ascii: "/")) {
            result.append(
                part.contains(UInt8(ascii: "%"))
                    ? try FormFields.percentDecode(part, plusIsSpace: false, context: "path")
                    : String(decoding: part, as: UTF8.self))
        }
        return result
    }

    @Test(arguments: [
        "", "/", "//", "/notes", "/notes/", "/notes/42", "//notes//42//", "/notes/42/content",
        "/a%20b/c", "/%2F/x", "/caf%C3%A9", "/é/日本", "notes/42", "/a/b/c/d/e/f/g/h/i", "/+/%2B",
    ])
    func segmentsAreTheSplitAndDecodedPath(_ path: String) throws {
        #expect(try PathPattern.segments(of: path[...]) == (try Self.reference(path[...])))
        // The same from inside a longer string (a target's path, before its query).
        let target = "/prefix" + path + "?q=1"
        let inner = target[target.index(target.startIndex, offsetBy: 7)..<target.firstIndex(of: "?")!]
        #expect(try PathPattern.segments(of: inner) == (try Self.reference(inner)))
    }

    @Test(arguments: ["/%", "/a%2", "/notes/%zz", "/ok/%E9"])
    func badEscapesAre400(_ path: String) {
        #expect(throws: HTTPError.self) { try PathPattern.segments(of: path[...]) }
        #expect(throws: HTTPError.self) { try Self.reference(path[...]) }
    }

    @Test func patternsMatchWithTheirParameters() throws {
        let pattern = PathPattern("/notes/:id/content")
        #expect(pattern.match(try PathPattern.segments(of: "/notes/42/content"))?.values.map(\.value) == ["42"])
        #expect(pattern.match(try PathPattern.segments(of: "/notes/42")) == nil)
        #expect(pattern.match(try PathPattern.segments(of: "/uploads/42/content")) == nil)
    }

    /// Empty segments are left out for every route alike: a static path with a trailing `/`
    /// or a doubled one is the same route, as a path with parameters is.
    @Test(arguments: [
        ("/hello", "/hello"), ("/hello/", "/hello"), ("//hello", "/hello"), ("/a/b//", "/a/b"), ("/a//b", "/a/b"),
        ("/notes/7/", "/notes/:id"), ("//notes//7", "/notes/:id"), ("/", "/"), ("//", "/"),
    ])
    func emptySegmentsAreLeftOutForEveryRoute(_ path: String, _ route: String) {
        var routes = RouterBuilder()
        for pattern in ["/", "/hello", "/a/b", "/notes/:id"] { routes.get(pattern) { _, _ in pattern } }
        let router = routes.build()
        var head = RequestHead(method: .get, target: path)
        guard case .route(let found, _) = router.resolve(&head) else {
            Issue.record("\(path) found no route")
            return
        }
        #expect(found.pattern.text == route)
        var other = RequestHead(method: .get, target: path + "x")
        if case .route = router.resolve(&other), !route.contains(":"), route != "/" { Issue.record("\(path)x found a route") }
    }
}
