import Synchronization
@testable import JotterHTTP

/// A body's consumer — a multipart file writer, a raw body's receiver — that is behind
/// (`mustWait`) after its first bytes until the test lets it go: back-pressure from a request body's consumer, over a socket
/// (`BodyBackPressureTests`) and with none (`HTTP1StateMachineTests`).
final class BodyGate: @unchecked Sendable {
    let state = Mutex<(received: Int, ready: (@Sendable () -> Void)?, released: Bool, paused: Int)>((0, nil, false, 0))

    /// What a gated consumer answers the engine: behind once bytes came, until released.
    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard !state.released, state.received > 0 else { return false }
            state.ready = ready
            state.paused += 1
            return true
        }
    }

    func release() {
        let ready = state.withLock { state -> (@Sendable () -> Void)? in
            state.released = true
            defer { state.ready = nil }
            return state.ready
        }
        ready?()
    }
}

/// Opens a `GatedWriter` for every file part.
struct GatedStore: MultipartFileStore {
    let gate: BodyGate
    func open(field: String, filename: String, contentType: String, temporaryDirectory: String) throws(HTTPError) -> any MultipartFileWriter {
        GatedWriter(gate: gate)
    }
}

final class GatedWriter: MultipartFileWriter {
    let gate: BodyGate
    init(gate: BodyGate) { self.gate = gate }
    var location: String { "gated" }
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) { gate.state.withLock { $0.received += bytes.count } }
    func finish() throws(HTTPError) -> (size: Int64, sha256: String) { (Int64(gate.state.withLock { $0.received }), "") }
    func discard() {}
    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool { gate.mustWait(then: ready) }
}

/// A raw body's receiver (`RequestBodyStream`) gated the same way.
final class GatedStream: RequestBodyStream, @unchecked Sendable {
    let gate: BodyGate
    init(gate: BodyGate) { self.gate = gate }
    func receive(_ chunk: UnsafeRawBufferPointer) throws { gate.state.withLock { $0.received += chunk.count } }
    func finish() throws {}
    func abort() {}
    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool { gate.mustWait(then: ready) }
}
