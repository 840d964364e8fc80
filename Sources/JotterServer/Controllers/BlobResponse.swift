import Glibc
import JotterBlobs
import JotterHTTP
import JotterStore
import Synchronization

/// An upload's bytes as a response, from wherever the store keeps them (`BlobStore.open`): a
/// file on this machine goes by `sendfile`; an object in a bucket streams through a `BlobDownload` — every download of the
/// bucket shares one libcurl thread, and the engine drains each one's bounded buffer as its
/// client reads (a client that stops reading pauses its transfer: it holds at most
/// `bufferLimit` bytes and no thread).
///
/// From a bucket the status waits for the bucket's answer (`BlobDownload.whenOpened`): an
/// object gone behind Jotter's back is a `404`, an unreachable bucket a `503` with
/// `Retry-After` — never a `200` and a cut connection.
enum BlobResponse {
    /// Downloads from a bucket streaming at once; more are `503` with `Retry-After`. Each holds
    /// at most `bufferLimit` bytes (and libcurl's 16 KiB block), no thread.
    static let maxStreams = 1024
    static let bufferLimit = 128 << 10
    private static let streams = Atomic<Int>(0)

    static func make(store: any DataStore, key: String, size: UInt64, range: String?, headers: HTTPHeaders, what: String) throws -> Reply {
        // The range is checked against the row's size first (a 416 needs no request to the store).
        var chosen: (offset: UInt64, length: UInt64, status: HTTPStatus, headers: HTTPHeaders)?
        _ = try Response.ranged(size: size, range: range, headers: headers, what: what) { offset, length, status, headers in
            chosen = (offset, length, status, headers)
            return Response(status: status)
        }
        guard let (offset, length, status, headers) = chosen else { throw HTTPError(.internalServerError) }
        // A stream's place is taken before the store is asked: past the limit, no request to a
        // bucket is started only to be cancelled. A file or no bytes gives it back at once.
        guard streams.add(1, ordering: .relaxed).newValue <= maxStreams else {
            streams.subtract(1, ordering: .relaxed)
            throw busy("too many downloads in progress; try again shortly")
        }
        var streaming = false
        defer { if !streaming { streams.subtract(1, ordering: .relaxed) } }
        // Opening may ask the store (the route runs on the store's threads when reading blocks).
        let opening: BlobOpening
        do {
            opening = try store.blobs.open(key, offset: Int64(offset), length: Int64(length), bufferLimit: bufferLimit)
        } catch BlobError.notFound(_) {
            throw gone(what)
        }
        let download: BlobDownload
        switch opening {
        case .file(let fd):
            return .now(Response.file(fd: fd, offset: offset, length: length, status: status, headers: headers))
        case .empty:
            guard length == 0 else { throw HTTPError(.internalServerError, detail: "the blob store opened no bytes of \(what)") }
            return .now(Response(status: status, headers: headers))
        case .download(let started):
            download = started
        }
        streaming = true
        let body = BucketStreamBody(download) { streams.subtract(1, ordering: .relaxed) }
        return Reply.later { done in
            download.whenOpened { outcome in
                switch outcome {
                case .success: done { Response.stream(body, status: status, headers: headers, length: length, blockSize: 64 << 10) }
                case .failure(let error):
                    body.finish()
                    if case BlobError.notFound = error { return done { throw BlobResponse.gone(what) } }
                    done { throw error }
                }
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

/// A bucket download as a response body: the engine reads what has arrived, and waits (its
/// connection suspended) until the download has more.
final class BucketStreamBody: StreamingBody {
    private let download: BlobDownload
    /// Called once, when the body is done with (sent, failed, or never sent).
    private let released: Mutex<(@Sendable () -> Void)?>

    init(_ download: BlobDownload, released: @escaping @Sendable () -> Void) {
        self.download = download
        self.released = Mutex(released)
    }

    func start(waker: ConnectionWaker) {
        download.notify { waker.wake() }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> StreamRead {
        switch download.read(into: buffer) {
        case .bytes(let count): .bytes(count)
        case .wait: .wait
        case .end: .end
        case .failed: .failed
        }
    }

    func finish() {
        download.cancel()
        released.withLock { released in
            defer { released = nil }; return released
        }?()
    }

    /// A response the engine dropped unsent (its connection closed while the bucket answered)
    /// is never started nor finished: its download ends here.
    deinit { finish() }
}
