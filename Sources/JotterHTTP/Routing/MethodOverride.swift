/// `POST` routed as another method: the `X-HTTP-Method-Override` header, or a `_method` field
/// in a form or JSON body where the route allows it. Only `PUT`, `PATCH` and `DELETE`.
enum MethodOverride {
    static let allowed: Set<String> = ["PUT", "PATCH", "DELETE"]

    static func resolve(_ request: Request, fromBody: Bool) throws(HTTPError) -> HTTPMethod {
        var value = request.headers["X-HTTP-Method-Override"]
        if value == nil, fromBody, let body = try? request.body() {
            value = try body.string("_method")
        }
        guard let value else { return request.method }
        let method = value.trimmingASCIISpaces().uppercased()
        guard allowed.contains(method) else {
            throw HTTPError.badRequest("method override '\(value)' is not one of PUT, PATCH, DELETE")
        }
        return HTTPMethod(method)
    }
}
