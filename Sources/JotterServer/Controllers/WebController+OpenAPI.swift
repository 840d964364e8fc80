import JotterHTTP
import JotterWire

/// The OpenAPI operations of `WebController` and `FormPageController`.
enum WebOperations {
    static let etag = OpenAPIHeader("a strong tag of the content", schema: .string(pattern: "^\"[0-9a-f]+\"$"))
    static let cacheHeaders: [String: OpenAPIHeader] = [
        "ETag": etag,
        "Cache-Control": OpenAPIHeader(schema: .string(enum: ["no-cache"])),
        "Content-Security-Policy": OpenAPIHeader("only this server's own scripts, styles and connections"),
    ]
    static let ifNoneMatch = OpenAPIParameter.header(
        "If-None-Match", description: "ETags separated by commas, or `*`: when one is current, the answer is `304` (a malformed value never matches)")

    static let page = OpenAPIOperation(
        operationID: "webApp", summary: "The notes web app", tags: ["web"],
        parameters: [ifNoneMatch],
        responses: [
            200: OpenAPIResponse("the page", content: ["text/html": .string()], headers: cacheHeaders),
            304: .empty("unchanged", headers: cacheHeaders),
        ])

    /// The web app manifest (W3C Web Application Manifest): the members the app's manifest
    /// has, others allowed.
    static let manifest: JSONSchema = .object(
        [
            "name": .string(), "short_name": .string(), "start_url": .string(), "display": .string(),
            "icons": .array(
                of: .object(
                    ["src": .string(), "sizes": .string(), "type": .string(), "purpose": .string()],
                    optional: ["sizes", "type", "purpose"])),
        ], description: "the web app manifest")

    static func asset(names: [String]) -> OpenAPIOperation {
        OpenAPIOperation(
            operationID: "webAsset", summary: "A script, style sheet, icon, the manifest or the service worker of the web app", tags: ["web"],
            parameters: [.path("name", .string(enum: names), description: "the file's name"), ifNoneMatch],
            responses: [
                200: OpenAPIResponse(
                    "the file",
                    content: [
                        "text/javascript": .string(), "text/css": .string(), "image/svg+xml": .string(),
                        "image/png": .string(format: "binary"), "application/manifest+json": manifest,
                    ],
                    headers: cacheHeaders.merging([
                        "Service-Worker-Allowed": OpenAPIHeader("`/` on `sw.js` only: the service worker's scope is the whole app", required: false)
                    ]) { $1 }),
                304: .empty("unchanged", headers: cacheHeaders),
                404: .problem("no such file"),
            ])
    }

    static let form = OpenAPIOperation(
        operationID: "testForm", summary: "A test form posting to /echo and /uploads", tags: ["web"],
        responses: [
            200: OpenAPIResponse(
                "the page", content: ["text/html": .string()],
                headers: ["Cache-Control": OpenAPIHeader(schema: .string(enum: ["no-cache"]))])
        ])
}
