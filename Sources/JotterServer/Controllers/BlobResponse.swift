import Glibc
import JotterBlobs
import JotterHTTP
import JotterStore
import Synchronization

/// An upload's bytes as a response, from wherever the store keeps them: a local file goes by
/// `sendfile`; an object in a bucket streams through a bounded buffer fed by a thread of its
/// own, so a slow client holds at most `BlobStreamBody.bufferLimit` bytes of it.
///
/// From a bucket the status waits for the bucket's answer (`BlobStore.get`'s `opened`): an
/// object gone behind Jotter's back is a `404`, an unreachable bucket a `503` with
/// `Retry-After` — never a `200` and a cut connection.
enum BlobResponse {
    /// Downloads from a bucket streaming at once; more are `503` with `Retry-After`.
    static let maxStreams = 64
    private static let streams = Atomic<Int>(0)

    static func make(store: any DataStore, key: String, size: UInt64, range: String?, headers: HTTPHeaders, what: String) throws -> Reply {
        if let local = store.blobs as? LocalBlobStore {
            let fd = open(try local.path(for: key), O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw HTTPError(.notFound, detail: "the content of \(what) is gone") }
            return .now(try Response.ranged(fd: fd, size: size, range: range, headers: headers, what: what))
        }
        // The range is checked against the row's size first (a 416 needs no request to the bucket).
        var chosen: (offset: UInt64, length: UInt64, status: HTTPStatus, headers: HTTPHeaders)?
        _ = try Response.ranged(size: size, range: range, headers: headers, what: what) { offset, length, status, headers in
            chosen = (offset, length, status, headers)
            return Response(status: status)
        }
        guard let (offset, length, status, headers) = chosen else { throw HTTPError(.internalServerError) }
        guard streams.add(1, ordering: .relaxed).newValue <= maxStreams else {
            streams.subtract(1, ordering: .relaxed)
            throw busy("too many downloads in progress; try again shortly")
        }
        let blobs = store.blobs
        if length == 0 {
            // An empty object: nothing to stream, but it must still be there.
            defer { streams.subtract(1, ordering: .relaxed) }
            return Reply.elsewhere(store.dispatch) {
                guard try blobs.head(key) != nil else { throw BlobResponse.gone(what) }
                return .now(Response.stream(BlobStreamBody(ended: true), status: status, headers: headers, length: 0, blockSize: 64 << 10))
            }
        }
        let byteRange = Int64(offset)...Int64(offset + length - 1)
        return Reply.later { done in
            let started = StoreThreads.detach {
                defer { streams.subtract(1, ordering: .relaxed) }
                let body = BlobStreamBody()
                var answered = false
                do {
                    try blobs.get(key, range: byteRange, opened: { _ in
                        answered = true
                        done { Response.stream(body, status: status, headers: headers, length: length, blockSize: 64 << 10) }
                    }, into: { bytes in try body.push(bytes) })
                    body.end(failed: false)
                } catch {
                    if answered { return body.end(failed: true) }
                    if case BlobError.notFound = error { return done { throw BlobResponse.gone(what) } }
                    done { throw error }
                }
            }
            if !started {
                streams.subtract(1, ordering: .relaxed)
                done { throw BlobResponse.busy("cannot start a download now; try again shortly") }
            }
        }
    }

    private static func gone(_ what: String) -> HTTPError {
        HTTPError(.notFound, detail: "the content of \(what) is gone from the blob store")
    }

    private static func busy(_ detail: String) -> HTTPError {
        HTTPError(.serviceUnavailable, detail: detail, headers: HTTPHeaders([("Retry-After", "1")]))
    }
}

/// A response body filled by a producer thread (`push`, which blocks while the buffer is full)
/// and drained by the engine (`read`, which never blocks).
final class BlobStreamBody: StreamingBody {
    static let bufferLimit = 1 << 20

    struct Cancelled: Error {}

    private struct State {
        var queue = ChunkQueue()
        var ended = false
        var failed = false
        /// The engine is done with the body: the producer stops.
        var finished = false
        var producerWaiting = false
        var waker: ConnectionWaker?
    }

    private let state = Mutex(State())
    private let room = Semaphore()

    init(ended: Bool = false) {
        state.withLock { $0.ended = ended }
    }

    func start(waker: ConnectionWaker) {
        state.withLock { $0.waker = waker }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> StreamRead {
        let (read, wakeProducer) = state.withLock { state -> (StreamRead, Bool) in
            let written = state.queue.drain(into: buffer)
            let wake = state.producerWaiting && state.queue.count < Self.bufferLimit
            if wake { state.producerWaiting = false }
            if written > 0 { return (.bytes(written), wake) }
            if state.failed { return (.failed, wake) }
            return (state.ended ? .end : .wait, wake)
        }
        if wakeProducer { room.signal() }
        return read
    }

    func finish() {
        let wake = state.withLock { state -> Bool in
            state.finished = true
            state.queue.removeAll()
            defer { state.producerWaiting = false }
            return state.producerWaiting
        }
        if wake { room.signal() }
    }

    /// Adds bytes, waiting while the buffer is full; throws once the engine is done with the body.
    func push(_ bytes: UnsafeRawBufferPointer) throws {
        while true {
            let (proceed, finished) = state.withLock { state -> (Bool, Bool) in
                if state.finished { return (false, true) }
                if state.queue.count < Self.bufferLimit { return (true, false) }
                state.producerWaiting = true
                return (false, false)
            }
            if finished { throw Cancelled() }
            if proceed { break }
            room.wait()
        }
        let waker = state.withLock { state -> ConnectionWaker? in
            state.queue.append(Array(bytes))
            return state.waker
        }
        waker?.wake()
    }

    /// No more bytes; `failed`: the object could not be read whole (the connection is closed).
    func end(failed: Bool) {
        let waker = state.withLock { state -> ConnectionWaker? in
            state.ended = true
            state.failed = failed
            return state.waker
        }
        waker?.wake()
    }
}
