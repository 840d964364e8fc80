#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An RFC 9457 problem document, as rendered on every error response.
public struct Problem: Codable, Sendable, Hashable {
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String?
    public var errors: [HTTPError.FieldError]?
    /// The request id, so a client's report can be matched with the server's log.
    public var requestID: String?

    enum CodingKeys: String, CodingKey {
        case type, title, status, detail, errors
        case requestID = "request_id"
    }

    public init(status: HTTPStatus, detail: String?, errors: [HTTPError.FieldError] = [], requestID: String? = nil) {
        self.type = "about:blank"
        self.title = status.reasonPhrase
        self.status = status.code
        self.detail = detail
        self.errors = errors.isEmpty ? nil : errors
        self.requestID = requestID
    }
}

extension Response {
    /// A response whose body is `problem` as `application/problem+json`.
    public init(status: HTTPStatus, problem: Problem) {
        let data = (try? JSONCoding.encoder.encode(problem)) ?? Data()
        self.init(status: status, contentType: "application/problem+json", body: [UInt8](data))
    }
}
