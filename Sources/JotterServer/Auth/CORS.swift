import JotterHTTP

/// Cross-origin access for the origins of `--cors-origin` (none by default): their requests
/// get `Access-Control-Allow-Origin`, and their preflight `OPTIONS` is answered `204` with the
/// methods and headers the API takes. Tokens go in `Authorization`; cookies are not offered
/// cross-origin (no `Access-Control-Allow-Credentials`).
struct CORSMiddleware: Middleware {
    let origins: Set<String>
    static let methods = "GET, HEAD, POST, PUT, PATCH, DELETE"
    /// Every request field the API reads that is not CORS-safelisted: credentials, preconditions
    /// and ranges, idempotency, merges, raw uploads' name, and both resumable-upload protocols
    /// (tus 1.0 and the IETF draft).
    static let allowedHeaders = [
        "Authorization", "Content-Type", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range", "Range",
        "Idempotency-Key", "Last-Event-ID",
        "X-HTTP-Method-Override", "Base-Version", "Content-Disposition", "Tus-Resumable", "Upload-Offset", "Upload-Length",
        "Upload-Defer-Length", "Upload-Metadata", "Upload-Checksum", "Upload-Complete", "Upload-Incomplete",
        "Upload-Draft-Interop-Version", "Repr-Digest",
    ].joined(separator: ", ")
    /// Every response field a page needs that is not CORS-safelisted.
    static let exposedHeaders = [
        "ETag", "Location", "Retry-After", "RateLimit", "RateLimit-Policy", "X-Request-Id", "Idempotent-Replayed", "Content-Disposition",
        "Content-Range", "Accept-Ranges", "Tus-Resumable", "Tus-Version", "Tus-Extension", "Tus-Max-Size", "Tus-Checksum-Algorithm",
        "Upload-Offset", "Upload-Length", "Upload-Defer-Length", "Upload-Metadata", "Upload-Expires", "Upload-Limit", "Upload-Complete",
        "Upload-Incomplete", "Upload-Draft-Interop-Version",
    ].joined(separator: ", ")

    init(origins: [String]) {
        self.origins = Set(origins.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
    }

    func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
        guard let origin = request.headers["Origin"], origins.contains(origin) else { return try next(request, context) }
        if request.head.originalMethod == .options, request.headers["Access-Control-Request-Method"] != nil {
            return .now(
                Response(
                    status: HTTPStatus(204),
                    headers: HTTPHeaders([
                        ("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
                        ("Access-Control-Allow-Methods", Self.methods), ("Access-Control-Allow-Headers", Self.allowedHeaders),
                        ("Access-Control-Max-Age", "600"),
                    ])))
        }
        return try next(request, context).map { response in
            var response = response
            response.headers.set("Access-Control-Allow-Origin", origin)
            response.headers.add("Vary", "Origin")
            response.headers.set("Access-Control-Expose-Headers", Self.exposedHeaders)
            return response
        }
    }
}
