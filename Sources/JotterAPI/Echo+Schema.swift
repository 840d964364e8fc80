import JotterWire

extension EchoResponse: SchemaDescribing {
    public static var componentName: String { "Echo" }

    public static var schema: JSONSchema {
        let strings = JSONSchema.map(of: .oneOf([.string(), .array(of: .string())]))
        return .object(
            [
                "method": .string(description: "the method, after an `X-HTTP-Method-Override`", example: "POST"),
                "url": .string(description: "the request target: path and query", example: "/echo?x=1"),
                "args": strings.described("the query parameters: a string for a name sent once, an array for one sent several times"),
                "form": strings.described("the form fields (form-urlencoded, or the plain fields of multipart), grouped like `args`"),
                "files": .map(
                    of: .oneOf([.ref(File.self), .array(of: .ref(File.self))]),
                    description: "the file parts by field name, grouped like `args`"),
                "json": .any(description: "the body parsed as JSON when it was JSON, else `null`"),
                "data": .string(
                    description: "the raw body as text when it was neither form nor multipart (a base64 `data:` URL when not UTF-8), else empty"),
                "headers": .map(of: .string(), description: "the request headers; repeated ones joined by commas"),
            ], additional: .forbidden, description: "The request as the server read it, shaped like httpbin's `/anything`.")
    }
}

extension EchoResponse.File: SchemaDescribing {
    public static var componentName: String { "EchoFile" }

    public static var schema: JSONSchema {
        .object(
            [
                "filename": .string(),
                "content_type": .string(),
                "size": .integer(minimum: 0, format: "int64", description: "bytes"),
                "sha256": .string(pattern: "^[0-9a-f]{64}$"),
            ], additional: .forbidden, description: "A file part: hashed while it streamed in, never kept.")
    }
}
