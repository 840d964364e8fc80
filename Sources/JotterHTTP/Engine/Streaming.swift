import CMicroHTTPD
import Synchronization

/// The render closure of a later reply, handed from whichever thread finished the work to the
/// engine thread that renders and sends the response.
final class RenderSlot: Sendable {
    typealias Render = @Sendable () throws -> Response
    private let render = Mutex<Render?>(nil)

    func set(_ value: @escaping Render) {
        render.withLock { if $0 == nil { $0 = value } }
    }

    func take() -> Render? {
        render.withLock { value in
            defer { value = nil }
            return value
        }
    }
}

/// The part of the server's state that outlives it for as long as a callback may need it:
/// libmicrohttpd frees open streams while the server itself is being torn down.
final class EngineState: Sendable {
    let stopping = Atomic<Bool>(false)
    let wakers = WakerRegistry()

    var isStopping: Bool { stopping.load(ordering: .relaxed) }
}

/// What the content-reader callback needs: the body, its connection's waker, the engine state.
final class StreamContext {
    let body: any StreamingBody
    let waker: ConnectionWaker
    let engine: EngineState

    init(body: any StreamingBody, waker: ConnectionWaker, engine: EngineState) {
        self.body = body
        self.waker = waker
        self.engine = engine
    }
}

/// libmicrohttpd asks for more of a streaming body.
func engineStreamRead(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int {
    let context = Unmanaged<StreamContext>.fromOpaque(cls!).takeUnretainedValue()
    while true {
        if context.engine.isStopping { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
        switch context.body.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max), at: position) {
        case .bytes(let count): return count
        case .end: return -1                         // MHD_CONTENT_READER_END_OF_STREAM
        case .failed: return -2                      // MHD_CONTENT_READER_END_WITH_ERROR
        case .wait:
            // Returning 0 without suspending would stall: the socket stays writable, so the
            // edge-triggered event loop never calls again. A wake that came in since the read
            // means there may be data now: read again.
            if context.waker.suspendUnlessWoken() { return 0 }
        }
    }
}

/// libmicrohttpd is done with a streaming response.
func engineStreamFree(_ cls: UnsafeMutableRawPointer?) {
    let context = Unmanaged<StreamContext>.fromOpaque(cls!).takeRetainedValue()
    context.waker.close()
    context.engine.wakers.unregister(context.waker)
    context.body.finish()
}

/// The wakers of every suspended-or-suspendable connection, so shutdown can resume them all
/// (libmicrohttpd must not be stopped with a connection suspended).
final class WakerRegistry: Sendable {
    enum Kind { case stream, later }
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
