import CMicroHTTPD
import Synchronization

/// The answer of a deferred response, handed from whichever thread completes it to the engine
/// thread that sends it.
final class DeferredSlot: Sendable {
    private let result = Mutex<Result<Response, any Error>?>(nil)

    func set(_ value: Result<Response, any Error>) {
        result.withLock { if $0 == nil { $0 = value } }
    }

    func take() -> Result<Response, any Error>? {
        result.withLock { value in
            defer { value = nil }
            return value
        }
    }
}

/// What the content-reader callback needs: the body, its connection's waker, the server.
final class StreamContext {
    let body: any StreamingBody
    let waker: ConnectionWaker
    unowned let server: HTTPServer

    init(body: any StreamingBody, waker: ConnectionWaker, server: HTTPServer) {
        self.body = body
        self.waker = waker
        self.server = server
    }
}

/// libmicrohttpd asks for more of a streaming body.
func engineStreamRead(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int {
    let context = Unmanaged<StreamContext>.fromOpaque(cls!).takeUnretainedValue()
    if context.server.isStopping { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
    switch context.body.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max), at: position) {
    case .bytes(let count): return count
    case .end: return -1                         // MHD_CONTENT_READER_END_OF_STREAM
    case .failed: return -2                      // MHD_CONTENT_READER_END_WITH_ERROR
    case .wait:
        context.waker.suspendUnlessWoken()
        return 0
    }
}

/// libmicrohttpd is done with a streaming response.
func engineStreamFree(_ cls: UnsafeMutableRawPointer?) {
    let context = Unmanaged<StreamContext>.fromOpaque(cls!).takeRetainedValue()
    context.waker.close()
    context.server.wakers.unregister(context.waker)
    context.body.finish()
}

/// The wakers of every suspended-or-suspendable connection, so shutdown can resume them all
/// (libmicrohttpd must not be stopped with a connection suspended).
final class WakerRegistry: Sendable {
    enum Kind { case stream, deferred }
    private let entries = Mutex<[ObjectIdentifier: (waker: ConnectionWaker, kind: Kind)]>([:])

    func register(_ waker: ConnectionWaker, kind: Kind) {
        entries.withLock { $0[ObjectIdentifier(waker)] = (waker, kind) }
    }

    func unregister(_ waker: ConnectionWaker) {
        _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(waker)) }
    }

    /// Wakes every registered connection of `kind`.
    func wakeAll(_ kind: Kind) {
        let wakers = entries.withLock { $0.values.filter { $0.kind == kind }.map(\.waker) }
        for waker in wakers { waker.wake() }
    }

    var count: Int { entries.withLock { $0.count } }
}
