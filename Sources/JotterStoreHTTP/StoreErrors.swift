import JotterBlobs
import JotterHTTP
import JotterStore

/// How store failures reach the client: a full disk is `507 Insufficient Storage` (the write
/// was refused and nothing of it kept); a database or blob store that cannot be reached now is
/// `503 Service Unavailable` with `Retry-After` — its error text (which names the database's
/// or the bucket's host) goes to the log as the answer's `cause`, not to the client; a change
/// to an attachment of a note in the trash is `409` (`/problems/note-deleted`); any other store
/// failure stays a logged `500`.
package enum StoreErrors {
    /// Seconds a client is told to wait when the database or the blob store is unavailable.
    package static let retryAfter = "2"

    /// The answer for a store failure that has one (`507`, `503`); nil for any other error.
    @Sendable package static func http(_ error: any Error) -> HTTPError? {
        if let error = error as? StoreError {
            if error.isOutOfSpace {
                return HTTPError(
                    .insufficientStorage,
                    detail: "the server's disk is full: the write was not stored; "
                        + "deleting notes or uploads frees space")
            }
            if error == .noteInTrash {
                var answer = HTTPError(HTTPStatus(409), detail: error.message)
                answer.type = "/problems/note-deleted"
                return answer
            }
            if error.isTransient { return unavailable("the database", cause: error.message) }
        }
        if let error = error as? BlobError, error.isTransient { return unavailable("the blob store", cause: "\(error)") }
        return nil
    }

    /// `503` with `Retry-After` for `what` (the database, the blob store, the accounts) out of
    /// reach now; `cause`, the error's text, is for the log only.
    package static func unavailable(_ what: String, cause: String) -> HTTPError {
        var answer = HTTPError(
            .serviceUnavailable, detail: "\(what) cannot be reached now; try again shortly",
            headers: HTTPHeaders([("Retry-After", retryAfter)]))
        answer.cause = cause
        return answer
    }
}
