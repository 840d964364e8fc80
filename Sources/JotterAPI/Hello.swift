/// `{"message":"Hello Bob!"}`: the JSON answer of `/hello` to `Accept: application/json`.
public struct HelloMessage: Codable, Sendable, Hashable {
    public var message: String
    public init(message: String) { self.message = message }
}

/// `{"status":"ok"}` from `GET /healthz`.
public struct HealthStatus: Codable, Sendable, Hashable {
    public var status: String
    public init(status: String) { self.status = status }
}
