/// What a `GET` or `HEAD` of a representation does after its conditional fields (RFC 9110
/// §13.2.2), evaluated in the RFC's order against the representation's validators: `If-Match`
/// (strong comparison; without it, `If-Unmodified-Since`), then `If-None-Match` (weak
/// comparison; without it, `If-Modified-Since`). `If-Range` is the range's business
/// (`ByteRange`), after these.
///
/// ```swift
/// switch ReadCondition(request.headers, etag: #""3""#, lastModified: createdAt) {
/// case .proceed: …                                // 200 (or 206)
/// case .notModified: …                            // 304 with the validators
/// case .failed(let detail): throw HTTPError(.preconditionFailed, detail: detail)
/// }
/// ```
public enum ReadCondition: Sendable, Equatable {
    /// Serve the representation.
    case proceed
    /// `304`: the client's copy is current.
    case notModified
    /// `412`: the detail says which precondition failed.
    case failed(String)

    /// - Parameters:
    ///   - etag: the representation's entity tag, quoted (`"3"`).
    ///   - lastModified: its `Last-Modified`, in Unix seconds; nil when it sends none (the date
    ///     conditions are then ignored, as RFC 9110 says for a resource without one).
    public init(_ headers: HTTPHeaders, etag: String, lastModified: Int64? = nil) {
        // A list field sent in several lines is one list (RFC 9110 §5.3); an empty list is no
        // condition, as if absent (§5.6.1). A date sent more than once is ignored (§13.1.3).
        func list(_ name: String) -> String? {
            guard headers.contains(name) else { return nil }
            let members = headers.values(name).map { $0.trimmingASCIISpaces() }.filter { !$0.isEmpty }
            return members.isEmpty ? nil : members.joined(separator: ", ")
        }
        func date(_ name: String) -> String? {
            guard headers.contains(name) else { return nil }
            let values = headers.values(name)
            return values.count == 1 ? values[0] : nil
        }
        if let header = list("If-Match") {
            guard EntityTagCondition(header).matches(etag, weak: false) else {
                self = .failed("If-Match: \(header.trimmingASCIISpaces()) does not name the current ETag \(etag)")
                return
            }
        } else if let lastModified, let header = date("If-Unmodified-Since"), let date = HTTPDate.parse(header), lastModified > date {
            self = .failed("it was modified after If-Unmodified-Since: \(header.trimmingASCIISpaces())")
            return
        }
        if let header = list("If-None-Match") {
            self = EntityTagCondition(header).matches(etag, weak: true) ? .notModified : .proceed
        } else if let lastModified, let header = date("If-Modified-Since"), let date = HTTPDate.parse(header), lastModified <= date {
            self = .notModified
        } else {
            self = .proceed
        }
    }
}
