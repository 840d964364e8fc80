import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operations of `HelloController`.
enum HelloOperations {
    static let ok = OpenAPIResponse(
        "`Hello <name>!` as text, or as JSON when `Accept` asks for `application/json` (or any `+json` type)",
        content: [
            "text/plain": .string(example: "Hello Bob!"), "application/json": .ref(HelloMessage.self),
        ])

    static let get = OpenAPIOperation(
        operationID: "hello", summary: "Hello",
        description: "`name` may also come from a body, as on `POST` (the body wins when both have it). An empty `name` is `Hello !`.",
        tags: ["hello"],
        parameters: [.query("name", required: true, description: "who to greet; `+` and percent-escapes are decoded")],
        responses: [200: ok, 400: .problem("the query is not valid percent-encoded UTF-8"), 422: .problem("no `name` was sent")])

    static let post = OpenAPIOperation(
        operationID: "helloPost", summary: "Hello, with the name in the body",
        description:
            "The `name` field may instead come from the query (`?name=Bob`); the body wins when both have it. A body without Content-Type is read as form-urlencoded.",
        tags: ["hello"],
        requestBody: .fields(.object(["name": .string(description: "who to greet")]), required: true),
        responses: [
            200: ok, 400: .problem("the body or the query is malformed (bad JSON, percent-encoding, UTF-8 or multipart)"),
            413: .problem("the body is over the server's limit"),
            415: .problem("the body is not form-urlencoded, multipart or JSON, or it has a file part (nothing of it is stored)"),
            422: .problem("no `name` was sent, or it is not a string, or a multipart body has too many parts"),
        ])

    static let alias = OpenAPIOperation.alias(of: "/hello", note: "the original client's path")
}
