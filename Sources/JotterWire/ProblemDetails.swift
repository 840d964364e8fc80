/// An RFC 9457 problem as the server sends it on every error (`application/problem+json`).
///
/// The server renders these; clients decode them to say what went wrong.
public struct ProblemDetails: Codable, Sendable, Hashable, Error {
    /// One invalid field: `{"field":"body","message":"is required"}`.
    public struct FieldError: Codable, Sendable, Hashable {
        public var field: String
        public var message: String
        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    public var type: String
    public var title: String
    public var status: Int
    public var detail: String?
    public var errors: [FieldError]?
    /// The server's request id, to find the request in its log.
    public var requestID: String?
    /// Extension members of a problem type that defines integer ones (the resumable-upload
    /// draft's `expected-offset` and `provided-offset`), sent beside the standard members.
    public var integerMembers: [String: Int64]? = nil
    /// Other extension members a problem type defines (a `409`'s current `note`), sent beside
    /// the standard members.
    public var members: [String: JSONValue]? = nil

    enum CodingKeys: String, CodingKey {
        case type, title, status, detail, errors
        case requestID = "request_id"
    }

    public init(
        type: String = "about:blank", title: String, status: Int, detail: String? = nil,
        errors: [FieldError]? = nil, requestID: String? = nil
    ) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.errors = errors
        self.requestID = requestID
    }
}

extension ProblemDetails {
    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(title, forKey: .title)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(detail, forKey: .detail)
        try container.encodeIfPresent(errors, forKey: .errors)
        try container.encodeIfPresent(requestID, forKey: .requestID)
        var extra = encoder.container(keyedBy: MemberKey.self)
        for (name, value) in (integerMembers ?? [:]).sorted(by: { $0.key < $1.key }) {
            try extra.encode(value, forKey: MemberKey(stringValue: name))
        }
        for (name, value) in (members ?? [:]).sorted(by: { $0.key < $1.key }) {
            try extra.encode(value, forKey: MemberKey(stringValue: name))
        }
    }
}
