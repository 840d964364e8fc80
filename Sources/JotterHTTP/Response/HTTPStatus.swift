/// An HTTP status code and its reason phrase.
public struct HTTPStatus: Hashable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    public let code: Int
    public init(_ code: Int) { self.code = code }
    public init(integerLiteral code: Int) { self.code = code }

    public static let `continue`: HTTPStatus = 100
    /// An interim answer of resumable uploads (draft-ietf-httpbis-resumable-upload).
    public static let uploadResumptionSupported: HTTPStatus = 104
    public static let ok: HTTPStatus = 200
    public static let created: HTTPStatus = 201
    public static let noContent: HTTPStatus = 204
    public static let notModified: HTTPStatus = 304
    public static let badRequest: HTTPStatus = 400
    public static let unauthorized: HTTPStatus = 401
    public static let forbidden: HTTPStatus = 403
    public static let notFound: HTTPStatus = 404
    public static let methodNotAllowed: HTTPStatus = 405
    public static let preconditionFailed: HTTPStatus = 412
    public static let requestTimeout: HTTPStatus = 408
    public static let contentTooLarge: HTTPStatus = 413
    public static let uriTooLong: HTTPStatus = 414
    public static let unsupportedMediaType: HTTPStatus = 415
    public static let misdirectedRequest: HTTPStatus = 421
    public static let unprocessableContent: HTTPStatus = 422
    public static let requestHeaderFieldsTooLarge: HTTPStatus = 431
    /// tus 1.0's checksum extension: the body's checksum does not match `Upload-Checksum`.
    public static let checksumMismatch: HTTPStatus = 460
    public static let internalServerError: HTTPStatus = 500
    public static let notImplemented: HTTPStatus = 501
    public static let serviceUnavailable: HTTPStatus = 503
    public static let insufficientStorage: HTTPStatus = 507
    public static let httpVersionNotSupported: HTTPStatus = 505

    /// The reason phrase (RFC 9110's for every code it defines; RFC 6585's 428, 429, 431; RFC
    /// 8297's 103; RFC 4918's 507; the drafts' 104 and tus's 460), used as a problem's `title`.
    /// Another code gets `Status <code>`.
    public var reasonPhrase: String {
        switch code {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 103: "Early Hints"
        case 104: "Upload Resumption Supported"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 203: "Non-Authoritative Information"
        case 204: "No Content"
        case 205: "Reset Content"
        case 206: "Partial Content"
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 402: "Payment Required"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 426: "Upgrade Required"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 460: "Checksum Mismatch"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        case 507: "Insufficient Storage"
        default: "Status \(code)"
        }
    }

    public var description: String { "\(code) \(reasonPhrase)" }
}
