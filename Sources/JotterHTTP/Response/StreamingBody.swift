import Glibc

/// What a `StreamingBody` has for the engine right now.
public enum StreamRead: Sendable {
    /// This many bytes were written into the buffer.
    case bytes(Int)
    /// Nothing yet: the engine suspends the connection until the body calls `waker.wake()`.
    case wait
    /// The body is complete.
    case end
    /// The body can't be completed; the connection is closed.
    case failed
}

/// A response body produced while it is sent — server-sent events, files — without a thread
/// per connection: when the body has nothing to give, the connection is suspended and costs
/// no thread until the body wakes it.
///
/// ```swift
/// final class Countdown: StreamingBody { … }
/// return Response.stream(Countdown(), contentType: "text/plain")
/// ```
public protocol StreamingBody: AnyObject, Sendable {
    /// Called once, on an engine thread, before the first read: call `waker.wake()` whenever a
    /// `.wait` can make progress.
    func start(waker: ConnectionWaker)
    /// Copies up to `buffer.count` bytes of the body, starting at byte `offset`, into `buffer`.
    /// Called on an engine thread; must not block.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> StreamRead
    /// The connection is done with the body: sent, failed, aborted or the server stopping.
    func finish()
}

extension Response {
    /// What the engine sends: bytes in `body`, a streaming body, or a file.
    package enum Payload: Sendable {
        case bytes
        case stream(any StreamingBody, length: UInt64?, blockSize: Int)
        /// `length` bytes of an open file from `offset`, sent with sendfile; the engine closes `fd`.
        case file(fd: Int32, offset: UInt64, length: UInt64)

        /// Lets go of what a payload holds that will never be sent: closes a file, finishes a stream.
        func release() {
            switch self {
            case .bytes: break
            case .stream(let body, _, _): body.finish()
            case .file(let fd, _, _): close(fd)
            }
        }
    }

    /// A response whose body is produced while it is sent; `length` nil means chunked.
    /// `blockSize` is the most the engine asks for at once, and memory held per connection:
    /// small for event streams (thousands of them), larger for bulk data.
    public static func stream(
        _ body: any StreamingBody, status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(),
        length: UInt64? = nil, blockSize: Int = 16 << 10
    ) -> Response {
        var response = Response(status: status, headers: headers)
        response.payload = .stream(body, length: length, blockSize: blockSize)
        return response
    }

    /// `length` bytes of the open file `fd` from `offset`, sent by the kernel (sendfile). The
    /// response owns `fd` and closes it when it is done.
    public static func file(
        fd: Int32, offset: UInt64 = 0, length: UInt64, status: HTTPStatus = .ok,
        headers: HTTPHeaders = HTTPHeaders()
    ) -> Response {
        var response = Response(status: status, headers: headers)
        response.payload = .file(fd: fd, offset: offset, length: length)
        return response
    }
}
