import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Producing the body bytes: into a file, or (on Linux) as a stream, reading each file from
/// disk a piece at a time.
extension MultipartFormData {
    /// The body in order: literal bytes (delimiters, headers, field values) and files.
    enum Segment: Sendable {
        case bytes(Data)
        case file(URL)
    }

    var segments: [Segment] {
        var segments: [Segment] = []
        var pending = Data()
        for part in parts {
            pending += head(of: part)
            switch part {
            case .field(_, let value):
                pending += Data(value.utf8)
            case .file(_, let url, _, _, _):
                segments.append(.bytes(pending))
                segments.append(.file(url))
                pending = Data()
            }
            pending += Data("\r\n".utf8)
        }
        segments.append(.bytes(pending + closing))
        return segments
    }

    /// Writes the whole body to a new file at `url` (replacing one that is there), copying
    /// each file in 1 MiB pieces.
    ///
    /// ```swift
    /// try form.writeBody(to: bodyFile)
    /// let (data, response) = try await URLSession.shared.upload(for: request, fromFile: bodyFile)
    /// ```
    public func writeBody(to url: URL) throws(JotterClientError) {
        guard FileManager.default.createFile(atPath: url.path, contents: nil),
            let output = try? FileHandle(forWritingTo: url)
        else {
            throw .localFile("cannot write \(url.path)")
        }
        defer { try? output.close() }
        do {
            for segment in segments {
                switch segment {
                case .bytes(let data):
                    try output.write(contentsOf: data)
                case .file(let source):
                    let input = try FileHandle(forReadingFrom: source)
                    defer { try? input.close() }
                    while let piece = try input.read(upToCount: 1 << 20), !piece.isEmpty {
                        try output.write(contentsOf: piece)
                    }
                }
            }
        } catch {
            throw .localFile("cannot write the multipart body to \(url.path): \(error.localizedDescription)")
        }
    }
}

#if canImport(FoundationNetworking)
import Glibc

/// The body as an `InputStream` for `httpBodyStream`, reading the files as URLSession pulls
/// and reporting the bytes handed over so far (upload progress without a delegate).
///
/// swift-corelibs-foundation sends a body stream with `Transfer-Encoding: chunked` (and no
/// Content-Length, which must not be set with it); measured here it streams several times
/// faster than `upload(for:fromFile:)`. Linux only: Apple's URLSession does not take
/// `InputStream` subclasses, and `upload(for:fromFile:)` is fast there.
///
/// `@unchecked Sendable`: URLSession reads a body stream from one task's work, one call at a
/// time, and nothing else touches it after it is handed over.
final class MultipartInputStream: InputStream {
    private let segments: [MultipartFormData.Segment]
    private var index = 0
    private var offset = 0
    private var descriptor: Int32 = -1
    private var status = Stream.Status.notOpen
    private var failure: (any Error)?
    private var handedOver: Int64 = 0
    private let onRead: @Sendable (Int64) -> Void

    init(_ form: MultipartFormData, read onRead: @escaping @Sendable (Int64) -> Void = { _ in }) {
        segments = form.segments
        self.onRead = onRead
        super.init(data: Data())
    }

    deinit { closeFile() }

    override func open() { status = .open }
    override func close() { closeFile(); status = .closed }
    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { failure }
    override var hasBytesAvailable: Bool { status == .open && index < segments.count }
    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool { false }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        var count = 0
        while count < maxLength, index < segments.count {
            switch segments[index] {
            case .bytes(let data):
                let length = min(maxLength - count, data.count - offset)
                if length > 0 {
                    data.withUnsafeBytes { bytes in
                        (buffer + count).update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset, count: length)
                    }
                }
                count += length
                offset += length
                if offset == data.count { index += 1; offset = 0 }
            case .file(let url):
                if descriptor < 0 { descriptor = Glibc.open(url.path, O_RDONLY | O_CLOEXEC) }
                let read = descriptor < 0 ? -1 : Glibc.read(descriptor, buffer + count, maxLength - count)
                if read < 0 {
                    failure = JotterClientError.localFile("cannot read \(url.path): \(String(cString: strerror(errno)))")
                    status = .error
                    return -1
                }
                if read == 0 { closeFile(); index += 1 } else { count += read }
            }
        }
        if index == segments.count { status = count == 0 ? .atEnd : status }
        if count > 0 {
            handedOver += Int64(count)
            onRead(handedOver)
        }
        return count
    }

    private func closeFile() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }
}
#endif
