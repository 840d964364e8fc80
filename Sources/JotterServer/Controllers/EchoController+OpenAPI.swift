import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operations of `EchoController`: one per method.
enum EchoOperations {
    /// Any content type is accepted; these are the ones it reads into `form`, `files` and `json`,
    /// and two that it returns as `data`.
    static let body = OpenAPIRequestBody(
        required: false,
        description:
            "Any content type: form and multipart fields are listed in `form` and `files`, JSON is parsed into `json`, anything else is returned as text in `data`.",
        content: [
            "application/x-www-form-urlencoded": .object([:]),
            "multipart/form-data": .object([:]),
            "application/json": .any(),
            "text/plain": .string(),
            "application/octet-stream": .binary(),
        ])

    /// `POST /post`: the recipe's WEBrick servlet path.
    static let postAlias = OpenAPIOperation.alias(of: "/echo", note: "the recipe's WEBrick servlet path")

    static func echo(_ method: HTTPMethod) -> OpenAPIOperation {
        let takesBody = [HTTPMethod.post, .put, .patch].contains(method)
        return OpenAPIOperation(
            operationID: "echo" + method.rawValue.prefix(1) + method.rawValue.dropFirst().lowercased(),
            summary: "\(method) /echo: the request as JSON",
            description:
                "Shaped like httpbin's `/anything`. Any query; \(takesBody ? "any body of any content type: form fields and file parts are listed (files hashed as they stream, never kept), JSON is parsed, anything else is returned as text. Only the `X-HTTP-Method-Override` header overrides the method here." : "a body, of any type, is read as on `POST`.")",
            tags: ["echo"],
            requestBody: takesBody ? body : nil,
            responses: [
                200: .json(.ref(EchoResponse.self), "the request"),
                400: .problem("the query, or a form or multipart body, is malformed"),
                413: .problem("the body is over the server's limits"),
                422: .problem("a multipart body has too many parts"),
            ])
    }
}
