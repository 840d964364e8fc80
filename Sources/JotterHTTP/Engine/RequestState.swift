import CMicroHTTPD

/// One request while libmicrohttpd serves it: its `RequestLifecycle` and what the engine itself
/// tracks (the suspended connection of a later reply, what was sent). Created in the URI-log
/// callback, kept in `*con_cls`, released in the completion callback.
///
/// Only the engine thread that owns the connection touches it (libmicrohttpd serves each
/// connection on one thread), so it needs no lock.
final class RequestState {
    let lifecycle: RequestLifecycle
    var headersRead = false
    /// Set while a later reply is awaited (the connection is suspended meanwhile).
    var slot: RenderSlot?
    var waker: ConnectionWaker?
    /// The status queued; 0 until a response is.
    var status = 0
    var bytesSent = 0
    /// Whether the head was folded, and whether it is a HEAD request: for `DirectAnswer`.
    var folded = false
    var headRequest = false
    /// The answer went to the socket past libmicrohttpd (`DirectAnswer`), all of it.
    var answeredDirectly = false

    init(lifecycle: RequestLifecycle) {
        self.lifecycle = lifecycle
    }

    var responded: Bool { status != 0 }
}
