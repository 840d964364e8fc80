import Glibc
import JotterSystem

/// Limits on one `multipart/form-data` body.
public struct MultipartLimits: Sendable {
    /// Bytes of all plain fields together (`--max-body-size`).
    public var fieldBytes: Int
    /// Bytes of all file parts together (`--max-upload-size`).
    public var fileBytes: Int64
    /// Parts in all.
    public var parts: Int
    /// Bytes of the body that are neither a field's value nor a file's — boundaries, part
    /// headers, the preamble — so that a field as large as `fieldBytes` fits as it does in a
    /// form-urlencoded body, and the whole body is still bounded (`totalBytes`).
    public static let framingBytes = 64 << 10

    /// The most bytes the whole body may have: its fields, its files and `framingBytes`.
    var totalBytes: Int64 { Int64(fieldBytes) + fileBytes + Int64(Self.framingBytes) }
}

/// Receives one multipart body as it streams in: plain fields into bounded memory, file parts
/// into a `MultipartFileStore` (nil: file parts are refused). On any error every file of the
/// request is discarded at once.
///
/// Used only by the engine thread that owns the request.
final class MultipartReceiver {
    private var parser: MultipartParser
    private let limits: MultipartLimits
    private let directory: String
    private let store: (any MultipartFileStore)?
    private(set) var fields = FormFields()
    private(set) var files: [UploadedFile] = []
    /// Every file writer opened, so that all of them can be discarded.
    private var writers: [any MultipartFileWriter] = []
    private var current: (headers: MultipartPartHeaders, field: [UInt8], sink: (any MultipartFileWriter)?)?
    private var fieldBytes = 0
    private var fileBytes: Int64 = 0
    /// Bytes of the body received so far, framing and all.
    private var bodyBytes: Int64 = 0
    private var parts = 0
    /// What to call the route in a refusal ("POST /notes").
    private let routeName: String

    init(
        contentType: String, limits: MultipartLimits, temporaryDirectory: String, store: (any MultipartFileStore)?,
        routeName: String
    ) throws(HTTPError) {
        parser = MultipartParser(boundary: try MultipartParser.boundary(of: contentType))
        self.limits = limits
        directory = temporaryDirectory
        self.store = store
        self.routeName = routeName
    }

    /// The next chunk of the body.
    func receive(_ chunk: UnsafeRawBufferPointer) throws(HTTPError) {
        do throws(HTTPError) {
            bodyBytes += Int64(chunk.count)
            guard bodyBytes <= limits.totalBytes else {
                throw HTTPError(
                    .contentTooLarge,
                    detail:
                        "the multipart body is larger than its fields' and files' limits and \(MultipartLimits.framingBytes) bytes of framing",
                    closesConnection: true)
            }
            try parser.feed(chunk) { event throws(HTTPError) in try handle(event) }
        } catch {
            discard()
            throw error
        }
    }

    /// Whether the file part being written wants no more bytes for now (`MultipartFileWriter.mustWait`).
    func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        current?.sink?.mustWait(then: ready) ?? false
    }

    /// The body is complete: fields and files, or `400` when it was cut short.
    func finish() throws(HTTPError) {
        do throws(HTTPError) {
            try parser.finish()
        } catch {
            discard()
            throw error
        }
    }

    /// Discards every file this request stored (temporary files a handler moved are already gone).
    func discard() {
        current = nil
        for writer in writers { writer.discard() }
        writers = []
    }

    private func handle(_ event: MultipartParser.Event) throws(HTTPError) {
        switch event {
        case .begin(let headers):
            parts += 1
            guard parts <= limits.parts else {
                throw HTTPError(.unprocessableContent, detail: "the multipart body has more than \(limits.parts) parts")
            }
            var sink: (any MultipartFileWriter)?
            if let filename = headers.filename {
                guard let store else {
                    throw HTTPError(
                        .unsupportedMediaType, detail: "\(routeName) takes no file parts (field '\(headers.name)' is a file); send only plain fields",
                        closesConnection: true)
                }
                sink = try store.open(
                    field: headers.name, filename: filename, contentType: headers.contentType ?? "application/octet-stream",
                    temporaryDirectory: directory)
                writers.append(sink!)
            }
            current = (headers, [], sink)

        case .data(let bytes):
            guard current != nil else { return }
            if let sink = current?.sink {
                fileBytes += Int64(bytes.count)
                guard fileBytes <= limits.fileBytes else {
                    throw HTTPError(
                        .contentTooLarge, detail: "the uploaded files are larger than the limit of \(limits.fileBytes) bytes (--max-upload-size)",
                        closesConnection: true)
                }
                try sink.write(bytes)
            } else {
                fieldBytes += bytes.count
                guard fieldBytes <= limits.fieldBytes else {
                    throw HTTPError(
                        .contentTooLarge, detail: "the form fields are larger than the limit of \(limits.fieldBytes) bytes (--max-body-size)",
                        closesConnection: true)
                }
                current!.field.append(contentsOf: bytes)
            }

        case .end:
            guard let part = current else { return }
            current = nil
            if let sink = part.sink {
                let (size, sha256) = try sink.finish()
                files.append(
                    UploadedFile(
                        field: part.headers.name, filename: cleanFilename(part.headers.filename ?? ""),
                        contentType: part.headers.contentType ?? "application/octet-stream",
                        size: size, sha256: sha256, location: sink.location, isUTF8: sink.isUTF8,
                        sentEmptyFilename: part.headers.filename?.isEmpty == true))
            } else {
                guard let value = String(validating: part.field, as: UTF8.self) else {
                    throw HTTPError.badRequest("multipart field '\(part.headers.name)' is not valid UTF-8")
                }
                fields.append(part.headers.name, value)
            }
        }
    }
}

/// One part's size and digest (`DigestOnlyStore`); its `location` is empty.
final class DigestOnlyWriter: MultipartFileWriter {
    var location: String { "" }
    private var hash = SHA256()
    private var size: Int64 = 0
    private var utf8: UTF8Validator?
    var isUTF8: Bool? { utf8?.isComplete }

    init(checksUTF8: Bool) { utf8 = checksUTF8 ? UTF8Validator() : nil }

    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        hash.update(bytes)
        utf8?.update(bytes)
        size += Int64(bytes.count)
    }

    func finish() throws(HTTPError) -> (size: Int64, sha256: String) {
        var done = SHA256()
        swap(&done, &hash)
        return (size, done.finish())
    }

    func discard() {}
}

/// A temporary file that an upload streams into, with its SHA-256 computed on the way.
final class FileSink: MultipartFileWriter {
    let path: String
    var location: String { path }
    private var fd: Int32
    private var hash = SHA256()
    private var size: Int64 = 0
    /// The UTF-8 check of a text part; nil when not asked for.
    private var utf8: UTF8Validator?
    var isUTF8: Bool? { utf8?.isComplete }
    /// Writes are gathered into 256 KiB before they reach the file.
    private var buffer: [UInt8] = []
    private static let bufferSize = 256 << 10
    /// Bytes written to the file, and how far the kernel has been asked to write them back.
    private var written: Int64 = 0
    private var writebackStarted: Int64 = 0
    /// Every 16 MiB, the range written before the last 16 MiB is handed to writeback, so the
    /// fsync that makes an upload durable has little left to do.
    private static let writebackWindow: Int64 = 16 << 20

    init(directory: String, checksUTF8: Bool = false) throws(HTTPError) {
        utf8 = checksUTF8 ? UTF8Validator() : nil
        path = directory + "/upload-" + SystemRandom.hex(bytes: 12) + ".part"
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw HTTPError(.internalServerError, detail: "cannot create a temporary file for the upload: \(String(cString: strerror(errno)))")
        }
        buffer.reserveCapacity(Self.bufferSize)
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        hash.update(bytes)
        utf8?.update(bytes)
        size += Int64(bytes.count)
        if buffer.count + bytes.count > Self.bufferSize { try flush() }
        if bytes.count >= Self.bufferSize { try writeAll(bytes) } else { buffer.append(contentsOf: bytes) }
    }

    /// Flushes and closes the file; its size and digest.
    func finish() throws(HTTPError) -> (size: Int64, sha256: String) {
        try flush()
        close()
        var done = SHA256()
        swap(&done, &hash)
        return (size, done.finish())
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Closes and removes the file (a no-op once a handler has moved it away).
    func discard() {
        close()
        unlink(path)
    }

    private func flush() throws(HTTPError) {
        guard !buffer.isEmpty else { return }
        var failure: HTTPError?
        buffer.withUnsafeBytes { bytes in
            do throws(HTTPError) { try writeAll(bytes) } catch { failure = error }
        }
        if let failure { throw failure }
        buffer.removeAll(keepingCapacity: true)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                if errno == ENOSPC || errno == EDQUOT {
                    throw HTTPError(.insufficientStorage, detail: "the server's disk is full: the upload was not stored")
                }
                throw HTTPError(.internalServerError, detail: "cannot write the upload to disk: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        self.written += Int64(bytes.count)
        if self.written - writebackStarted >= 2 * Self.writebackWindow {
            // Starts asynchronous writeback of the older range (and drops it from the page cache:
            // it has been hashed already and is never read back while the request runs).
            let length = self.written - Self.writebackWindow - writebackStarted
            posix_fadvise(fd, off_t(writebackStarted), off_t(length), POSIX_FADV_DONTNEED)
            writebackStarted += length
        }
    }

    deinit { close() }
}
