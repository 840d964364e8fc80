/// `{"message":"Hello Bob!"}`: the JSON answer of `/hello` to `Accept: application/json`.
public struct HelloMessage: Codable, Sendable, Hashable {
    public var message: String
    public init(message: String) { self.message = message }
}

/// `{"status":"ok"}` from `GET /healthz`, with what was checked.
///
/// `checks` maps `database`, `data_folder` and `free_space` to `"ok"` or what is wrong;
/// `freeBytes` is the space left for the data folder. Both are absent from older servers.
public struct HealthStatus: Codable, Sendable, Hashable {
    public var status: String
    public var checks: [String: String]?
    public var freeBytes: Int64?

    enum CodingKeys: String, CodingKey {
        case status, checks
        case freeBytes = "free_bytes"
    }

    public init(status: String, checks: [String: String]? = nil, freeBytes: Int64? = nil) {
        self.status = status
        self.checks = checks
        self.freeBytes = freeBytes
    }
}
