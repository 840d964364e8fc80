import JotterHTTP
import JotterStore

/// How store failures reach the client: a full disk is `507 Insufficient Storage` (the write
/// was refused and nothing of it kept); any other store failure stays a logged `500`.
enum StoreErrors {
    @Sendable static func http(_ error: any Error) -> HTTPError? {
        guard let error = error as? StoreError, error.isOutOfSpace else { return nil }
        return HTTPError(.insufficientStorage, detail: "the server's disk is full: the write was not stored; "
            + "deleting notes or uploads frees space")
    }
}
