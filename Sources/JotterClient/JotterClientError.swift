import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

/// Every error the SDK throws: the server's answer when there was one, else what went wrong on
/// the way.
///
/// The server's `application/problem+json` travels with it (`problem`, `status`, `title`,
/// `detail`, `fieldErrors`); the checks cover the cases an app handles.
///
/// ```swift
/// do {
///     try await client.notes.update("42", body: text, ifMatch: note.etag)
/// } catch let error as JotterClientError where error.isConflict {
///     // someone else changed note 42 meanwhile: reload it and merge
/// } catch let error as JotterClientError where error.isTransport {
///     // offline, or the server is down: try again later
/// }
/// ```
public struct JotterClientError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; new kinds may be added.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case httpStatus = "HTTP status", transport, cancelled, invalidResponse = "invalid response", localFile = "local file"
            case destinationExists = "destination exists", invalidRequest = "invalid request", tls = "TLS"
            case replicaOfAnotherUser = "replica of another user"
        }
        private let base: Base

        /// The server answered with a 4xx or 5xx status.
        public static let httpStatus = Kind(base: .httpStatus)
        /// The server could not be reached, or the connection failed (see `urlErrorCode`).
        public static let transport = Kind(base: .transport)
        /// The task was cancelled.
        public static let cancelled = Kind(base: .cancelled)
        /// The server's answer was not what the API promises (wrong JSON, wrong status).
        public static let invalidResponse = Kind(base: .invalidResponse)
        /// A file on this machine could not be read or written.
        public static let localFile = Kind(base: .localFile)
        /// A download's destination is another file, left untouched (pass `replacing: true`).
        public static let destinationExists = Kind(base: .destinationExists)
        /// The TLS handshake with an `https://` server failed: its certificate is not trusted
        /// (a private CA: `Configuration.trust`), has expired or names another host, or the
        /// two sides share no protocol. Not retried.
        public static let tls = Kind(base: .tls)
        /// The request can't be sent as asked (a body on `GET` or `HEAD`); nothing was sent.
        public static let invalidRequest = Kind(base: .invalidRequest)
        /// A `NotesSyncEngine` replica file was synced by another user than the one the client
        /// is signed in as: it is not synced (a replica file is per user). Nothing was sent.
        public static let replicaOfAnotherUser = Kind(base: .replicaOfAnotherUser)

        public var description: String { base.rawValue }
    }

    /// What kind of failure: `.httpStatus`, `.transport`, `.cancelled`, …
    public let kind: Kind
    /// The HTTP status when the server answered, else `nil`.
    public let status: Int?
    /// The server's problem details (RFC 9457) when it sent them.
    public let problem: ProblemDetails?
    /// The `URLError` code behind a transport failure.
    public let urlErrorCode: URLError.Code?
    /// Seconds the server asked to wait (`Retry-After`), when it did.
    public let retryAfter: Double?
    /// What happened, in one line.
    public let message: String
    /// Every attempt of the request failed before a connection was made (refused, host
    /// unknown, no network): the server certainly never saw it. Set by `withRetries`.
    var neverReachedServer = false

    init(
        kind: Kind, status: Int? = nil, problem: ProblemDetails? = nil, urlErrorCode: URLError.Code? = nil,
        retryAfter: Double? = nil, message: String
    ) {
        self.kind = kind
        self.status = status
        self.problem = problem
        self.urlErrorCode = urlErrorCode
        self.retryAfter = retryAfter
        self.message = message
    }

    /// The problem's title, or the status's reason.
    public var title: String? { problem?.title ?? status.map { HTTPURLResponse.localizedString(forStatusCode: $0).capitalized } }
    /// The problem's detail: what exactly was wrong.
    public var detail: String? { problem?.detail }
    /// The invalid fields of a `422` (or `400` for query parameters).
    public var fieldErrors: [ProblemDetails.FieldError] { problem?.errors ?? [] }

    /// `404`: the note or upload does not exist.
    public var isNotFound: Bool { status == 404 }
    /// `401`: no token, or one that is malformed, unknown, revoked or expired (sign in again).
    public var isUnauthorized: Bool { status == 401 }
    /// `412`: `If-Match` named a version that is no longer current.
    public var isConflict: Bool { status == 412 }
    /// `409` from a write with `Base-Version` the server can't merge: the base version is no
    /// longer kept (`/problems/unknown-base`), the merge is past the server's bounds
    /// (`/problems/merge-too-large`) or the note is in the trash (`/problems/note-deleted`).
    /// Nothing changed; keep the user's text (as a new note, as `NotesSyncEngine` does).
    public var isMergeConflict: Bool {
        guard status == 409, let type = problem?.type else { return false }
        return Self.mergeProblemTypes.contains { type.hasSuffix($0) }
    }

    /// The problem types of `isMergeConflict`.
    static let mergeProblemTypes = ["/problems/unknown-base", "/problems/merge-too-large", "/problems/note-deleted"]
    /// `422`: a field is missing or invalid (`fieldErrors` says which).
    public var isValidation: Bool { status == 422 }
    /// `413`: the body or upload is over the server's limit.
    public var isTooLarge: Bool { status == 413 }
    /// The server could not be reached or the connection broke.
    public var isTransport: Bool { kind == .transport }
    /// The TLS handshake failed (see `Kind.tls`).
    public var isTLS: Bool { kind == .tls }
    /// The request was cancelled (the task was cancelled). A write already sent may still be
    /// done by the server (the request finishes in the background): a cancelled
    /// `notes.create(_:)` may have created the note. To try again without a duplicate, create
    /// with a key the app keeps, `notes.create(_:idempotencyKey:)`, and resend with that key.
    public var isCancelled: Bool { kind == .cancelled }
    /// The sync engine's replica file belongs to another user than the one the client is
    /// signed in as (`Kind.replicaOfAnotherUser`).
    public var isReplicaOfAnotherUser: Bool { kind == .replicaOfAnotherUser }

    /// A transport failure before any connection was made: nothing of the request left.
    var isConnectionNotMade: Bool {
        kind == .transport && urlErrorCode.map(Self.connectionNotMadeCodes.contains) == true
    }

    /// The `URLError` codes of a connection that was never made.
    static let connectionNotMadeCodes: Set<URLError.Code> = [.cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet]

    public var description: String { message }
}

extension JotterClientError {
    /// An error status, with the problem+json body when the server sent one.
    static func http(status: Int, body: Data, response: HTTPURLResponse?) -> JotterClientError {
        let problem = try? JSONDecoder().decode(ProblemDetails.self, from: body)
        let reason = problem?.title ?? HTTPURLResponse.localizedString(forStatusCode: status).capitalized
        let detail = problem?.detail.map { ": \($0)" } ?? ""
        return JotterClientError(
            kind: .httpStatus, status: status, problem: problem,
            retryAfter: response.flatMap { RetryPolicy.retryAfter($0) },
            message: "\(status) \(reason)\(detail)")
    }

    /// Maps anything URLSession throws: cancellation (which Linux reports as `URLError(.cancelled)`)
    /// and transport failures.
    static func wrapping(_ error: any Error, url: URL?) -> JotterClientError {
        if let error = error as? JotterClientError { return error }
        if error is CancellationError { return .cancelled }
        guard let urlError = error as? URLError else {
            return JotterClientError(kind: .transport, message: "\(error)")
        }
        if urlError.code == .cancelled { return .cancelled }
        let place = url.flatMap { $0.host }.map { " \($0)\(url?.port.map { ":\($0)" } ?? "")" } ?? ""
        if isTLS(urlError) {
            // The SDK's own TLS says "TLS: …" already; URLSession (libcurl) says "SSL …", and an
            // untrusted certificate in the words the SDK's own TLS uses for it.
            var what = urlError.localizedDescription
            let untrusted = "SSL certificate problem: "
            if what.hasPrefix(untrusted), let host = url?.host {
                what = "TLS: the certificate of \(host) is not trusted (\(what.dropFirst(untrusted.count)))"
            } else if what.contains("wrong version number") {
                // OpenSSL's SSL_R_WRONG_VERSION_NUMBER (0A00010B): the answer was no TLS record —
                // an HTTP server's plain answer to the handshake.
                let plain =
                    url.flatMap { url -> String? in
                        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
                        parts.scheme = "http"
                        parts.path = ""
                        parts.query = nil
                        return parts.url?.absoluteString
                    } ?? "http://"
                what = "TLS: \(Self.plainHTTPAnswer); use \(plain)"
            } else if !what.hasPrefix("TLS: ") {
                what = "TLS: \(what)"
            }
            return JotterClientError(kind: .tls, urlErrorCode: urlError.code, message: "\(what) (connecting to\(place))")
        }
        let what =
            switch urlError.code {
            case .cannotConnectToHost: "cannot connect to\(place) (connection refused)"
            case .timedOut: "timed out waiting for\(place)"
            case .cannotFindHost, .dnsLookupFailed: "cannot find host\(place)"
            case .networkConnectionLost: "the connection to\(place) was lost"
            case .notConnectedToInternet: "not connected to a network"
            default: "cannot reach\(place): \(urlError.localizedDescription) (URLError \(urlError.code.rawValue))"
            }
        return JotterClientError(kind: .transport, urlErrorCode: urlError.code, message: what)
    }

    /// A TLS failure: URLError's TLS codes, or libcurl's SSL errors, which URLSession on Linux
    /// reports as `URLError(.unknown)` ("SSL certificate problem: unable to get local issuer
    /// certificate").
    static func isTLS(_ error: URLError) -> Bool {
        let codes: Set<URLError.Code> = [
            .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid,
            .clientCertificateRejected, .clientCertificateRequired,
        ]
        if codes.contains(error.code) { return true }
        let text = error.localizedDescription
        return error.code == .unknown && (text.contains("SSL") || text.contains("TLS") || text.contains("certificate"))
    }

    /// What a TLS error says when the port answered in plain HTTP.
    static let plainHTTPAnswer = "the server answered in plain HTTP, not TLS: that port serves http://, not https://"

    /// A TLS handshake that a plain-HTTP server answered: the URL should be `http://`.
    public var isPlainHTTPServer: Bool { kind == .tls && message.contains(Self.plainHTTPAnswer) }

    static let cancelled = JotterClientError(kind: .cancelled, message: "cancelled")

    static func invalidResponse(_ message: String) -> JotterClientError {
        JotterClientError(kind: .invalidResponse, message: "unexpected answer from the server: \(message)")
    }

    static func localFile(_ message: String) -> JotterClientError {
        JotterClientError(kind: .localFile, message: message)
    }
}
