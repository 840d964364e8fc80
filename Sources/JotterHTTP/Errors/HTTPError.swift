#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An error that renders itself as an RFC 9457 `application/problem+json` response.
///
/// Throw it where bad input is found; the error middleware turns it into the response.
///
/// ```swift
/// throw HTTPError(.notFound, detail: "note 42 does not exist")
/// throw HTTPError.validation([.init(field: "body", message: "is required")])
/// ```
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// One invalid field: `{"field":"body","message":"is required"}`.
    public typealias FieldError = ProblemDetails.FieldError

    public var status: HTTPStatus
    public var detail: String?
    public var errors: [FieldError]
    /// Extra response headers, such as `Allow` on a 405.
    public var headers: HTTPHeaders
    /// Close the connection after the response (framing errors, refused bodies).
    public var closesConnection: Bool
    /// The problem type's URI (RFC 9457 `type`), `about:blank` unless a registered type fits.
    public var type = "about:blank"
    /// Integer extension members the problem type defines (`expected-offset`, …).
    public var integerMembers: [String: Int64]? = nil
    /// Other extension members the problem type defines (objects, strings, …).
    public var members: [String: JSONValue]? = nil
    /// What failed underneath, for the server's log only (`ErrorMiddleware` writes it with the
    /// request id): never sent, since a database's or a bucket's error text names its host.
    public var cause: String? = nil

    public init(
        _ status: HTTPStatus, detail: String? = nil, errors: [FieldError] = [],
        headers: HTTPHeaders = HTTPHeaders(), closesConnection: Bool = false
    ) {
        self.status = status
        self.detail = detail
        self.errors = errors
        self.headers = headers
        self.closesConnection = closesConnection
    }

    /// Where a request's fields came from (or were looked for), for a validation error's words.
    public enum FieldSource: Sendable {
        /// The body (a form or JSON).
        case body
        /// The query string.
        case query
        /// The body, else the query (`/hello`'s `name`).
        case bodyOrQuery
    }

    /// `422` listing invalid fields of the body, the query, or either.
    public static func validation(_ errors: [FieldError], in source: FieldSource = .body) -> HTTPError {
        let detail =
            switch source {
            case .body: "the request body has invalid fields"
            case .query: "the query has invalid fields"
            case .bodyOrQuery: "the request body and query have invalid fields"
            }
        return HTTPError(.unprocessableContent, detail: detail, errors: errors)
    }

    /// `400` listing invalid query parameters.
    public static func badQuery(_ errors: [FieldError]) -> HTTPError {
        HTTPError(.badRequest, detail: "the query has invalid parameters", errors: errors)
    }

    /// `400` for a malformed request (framing, encoding); the connection is closed when asked.
    public static func badRequest(_ detail: String, close: Bool = false) -> HTTPError {
        HTTPError(.badRequest, detail: detail, closesConnection: close)
    }

    public var description: String { "\(status)\(detail.map { ": \($0)" } ?? "")" }

    /// The problem+json response for this error, naming the request it answers.
    public func response(requestID: String) -> Response {
        var problem = ProblemDetails(
            type: type, title: status.reasonPhrase, status: status.code, detail: detail,
            errors: errors.isEmpty ? nil : errors, requestID: requestID)
        problem.integerMembers = integerMembers
        problem.members = members
        var response = Response(status: status, problem: problem)
        for field in headers { response.headers.add(field.name, field.value) }
        if closesConnection { response.headers.set("Connection", "close") }
        return response
    }
}

extension Response {
    /// A response whose body is `problem` as `application/problem+json`.
    public init(status: HTTPStatus, problem: ProblemDetails) {
        let data = (try? JSONCoding.encoder.encode(problem)) ?? Data()
        self.init(status: status, contentType: "application/problem+json", body: [UInt8](data))
    }
}
