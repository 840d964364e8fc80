import CMicroHTTPD
import Glibc

/// One request while libmicrohttpd assembles it. Created in the URI-log callback, kept in
/// `*con_cls`, released in the completion callback.
///
/// Only the engine thread that owns the connection touches it (libmicrohttpd serves each
/// connection on one thread), so it needs no lock.
final class RequestState {
    let target: String
    let started: UInt64
    let remoteAddress: String
    var method = ""
    var version = ""
    var headers = HTTPHeaders()
    var headersRead = false
    var body: [UInt8] = []
    /// An answer decided while the body was still arriving, sent once it has been drained.
    var refusal: HTTPError?
    var drained = 0
    /// A multipart body streaming to temporary files.
    var multipart: MultipartReceiver?
    /// Set while a deferred answer is awaited (the connection is suspended meanwhile).
    var deferred: DeferredSlot?
    var waker: ConnectionWaker?
    var request: Request?
    /// The route pattern of a deferred answer, for metrics.
    var route: String?
    /// Set once a response is queued; further body bytes are discarded.
    var status = 0
    var bytesSent = 0
    var requestID = ""

    init(target: String, remoteAddress: String) {
        self.target = target
        self.remoteAddress = remoteAddress
        started = Clock.microseconds()
    }

    var responded: Bool { status != 0 }
}

enum Clock {
    /// Monotonic time in microseconds.
    static func microseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }
}
