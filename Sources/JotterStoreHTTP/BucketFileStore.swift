import Glibc
import JotterBlobs
import JotterHTTP
import JotterStore
import Synchronization
import JotterSystem

/// Where the file parts of `POST /uploads` go when the blobs are in a bucket (a blob store with
/// `multipart` uploads): straight into it,
/// as an S3 multipart upload that runs while the body arrives — no temporary file on the
/// instance. Each file part gets its upload id when it begins (`open`), so its object key is
/// known before a byte of it is stored.
///
/// A part's bytes gather in memory up to the bucket's part size (8 MiB by default); a full part
/// goes up on a thread of its own while the next one fills. When that one is full too and the
/// first is still on its way, the writer says so (`mustWait`): the engine reads no more of the
/// body until the part has arrived, so the client is slowed down to the bucket's pace without
/// an engine thread waiting — at most two part buffers (`S3PartBuffer`, reused from part to
/// part) and one read in memory per file. The last part and the completion are the handler's
/// (`take`, then `BucketFileWriter.commit`, off the engine thread), so the row is written only
/// after the object is whole. A request that ends otherwise — cut, refused, failed — has its writers
/// discarded, which aborts their multipart uploads.
///
/// A file no larger than one part never starts a multipart upload: `commit` stores it with one PUT.
package final class BucketFileStore: MultipartFileStore {
    let bucket: any BlobMultipart
    /// Writers of requests in flight, by location, until their handler takes them or their
    /// request is discarded.
    private let writers = Mutex<[String: BucketFileWriter]>([:])

    /// The file parts of requests into `blobs`' multipart uploads; nil when it has none (a
    /// local folder: file parts go to temporary files, renamed into place).
    package init?(_ blobs: any BlobStore) {
        guard let multipart = blobs.multipart else { return nil }
        bucket = multipart
    }

    package func open(field: String, filename: String, contentType: String, temporaryDirectory: String) throws(HTTPError) -> any MultipartFileWriter {
        let writer = BucketFileWriter(
            store: self, id: UploadRecord.newID(),
            checksUTF8: MediaType(contentType)?.essence.hasPrefix("text/") == true)
        writers.withLock { $0[writer.location] = writer }
        return writer
    }

    /// The writer whose bytes are at `location`, now the caller's: it commits it (or abandons
    /// it); discarding the request no longer touches it. nil when the file is not the bucket's.
    package func take(_ location: String) -> BucketFileWriter? {
        writers.withLock { $0.removeValue(forKey: location) }
    }

    /// True when `writer` was still registered (its request, not a handler, owns it): it is
    /// unregistered then.
    fileprivate func release(_ writer: BucketFileWriter) -> Bool {
        writers.withLock { writers in
            guard writers[writer.location] === writer else { return false }
            writers[writer.location] = nil
            return true
        }
    }
}

/// One file part on its way to the bucket (`BucketFileStore`). `write`, `finish` and `discard`
/// come from the engine thread of its request; `commit` or `abandon` from the handler's thread
/// once it has taken the writer; the part uploads run on threads of their own.
package final class BucketFileWriter: MultipartFileWriter, @unchecked Sendable {
    // @unchecked: `parts`, `hash`, `utf8`, `size`, `sent` belong to the engine thread until
    // `finish`, then to whoever took the writer; what part threads share is in `shared`.
    /// The upload id the file got when it began (its key is `UploadRecord.blobKey(id)`).
    package let id: String
    /// The file's key in the blob store.
    package let location: String
    private unowned let store: BucketFileStore
    private var bucket: any BlobMultipart { store.bucket }
    private var hash = SHA256()
    private var utf8: UTF8Validator?
    private var size: Int64 = 0
    /// The part filling now; sent when full and a byte more arrives (so the last part, and a
    /// file of one part, stay for `commit`).
    private var parts: S3PartBuffer
    /// Parts handed to part threads.
    private var sent = 0

    /// What the part threads share with the writer.
    private final class Shared: Sendable {
        struct State {
            var uploadID: String?
            var parts: [BlobPart] = []
            var failure: (any Error)?
            /// The part handed to the part thread; its buffer comes back in `returned`.
            var sending: [UInt8] = []
            var returned: [UInt8] = []
            /// A part thread is running.
            var busy = false
            /// Called when the running part thread ends: the engine reads the body on.
            var onIdle: (@Sendable () -> Void)?
        }
        let state = Mutex(State())
        /// Signalled when a part thread ends.
        let idle = Semaphore()

        func withLock<T>(_ body: (inout State) -> T) -> T { state.withLock { body(&$0) } }
    }
    private let shared = Shared()

    package var isUTF8: Bool? { utf8?.isComplete }

    fileprivate init(store: BucketFileStore, id: String, checksUTF8: Bool) {
        self.store = store
        self.id = id
        location = UploadRecord.blobKey(id)
        utf8 = checksUTF8 ? UTF8Validator() : nil
        parts = S3PartBuffer(partSize: store.bucket.partSize)
    }

    package func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        hash.update(bytes)
        utf8?.update(bytes)
        size += Int64(bytes.count)
        parts.append(bytes)
        try sendFullParts()
    }

    /// Behind: more than a part waits here while the previous one is still on its way. The
    /// engine then reads no more of the body until `ready` (when that part has arrived).
    package func mustWait(then ready: @escaping @Sendable () -> Void) -> Bool {
        guard parts.hasPartBeforeMore else { return false }
        return shared.withLock { state in
            guard state.busy else { return false }  // it just arrived: the next write sends
            state.onIdle = ready
            return true
        }
    }

    package func finish() throws(HTTPError) -> (size: Int64, sha256: String) {
        var done = SHA256()
        swap(&done, &hash)
        return (size, done.finish())
    }

    /// The request ended without its handler taking this file: the multipart upload is aborted
    /// (on a thread of its own, after any part still on its way).
    package func discard() {
        guard store.release(self) else { return }
        parts.removeAll()
        abortInBackground()
    }

    /// Stores what is left and completes the object (a single PUT when it never outgrew a
    /// part). On failure the multipart upload is aborted and the error thrown. Blocks on the
    /// network: never on an engine thread.
    @discardableResult
    package func commit() throws -> BlobInfo {
        waitIdle()
        let (uploadID, uploaded, failure) = shared.withLock { ($0.uploadID, $0.parts, $0.failure) }
        defer { parts.removeAll() }
        do {
            if let failure { throw failure }
            // No part went: the whole file is the part filling (a part goes only with more after it).
            guard let uploadID else {
                return try bucket.put(location, bytes: parts.overflow.isEmpty ? parts.filling : parts.filling + parts.overflow)
            }
            var all = uploaded
            while parts.hasPartBeforeMore {
                sent += 1
                var part = parts.takePart()
                all.append(try bucket.uploadPart(location, uploadID: uploadID, number: sent, bytes: part))
                parts.recycle(&part)
            }
            if !parts.isEmpty {
                all.append(try bucket.uploadPart(location, uploadID: uploadID, number: sent + 1, bytes: parts.filling))
            }
            return try bucket.completeMultipartUpload(location, uploadID: uploadID, parts: all)
        } catch {
            if let uploadID { try? bucket.abortMultipartUpload(location, uploadID: uploadID) }
            throw error
        }
    }

    /// A taken writer its handler will not commit: aborts its multipart upload.
    package func abandon() {
        waitIdle()
        if let uploadID = shared.withLock({ $0.uploadID }) { try? bucket.abortMultipartUpload(location, uploadID: uploadID) }
    }

    // MARK: - Parts

    /// Hands full parts to a part thread while none is on its way (a byte past the part stays,
    /// so the last part is `commit`'s); what is left waits for `mustWait`'s call back.
    private func sendFullParts() throws(HTTPError) {
        while parts.hasPartBeforeMore, !shared.withLock({ $0.busy }) {
            if let failure = shared.withLock({ $0.failure }) { throw Self.refusal(failure) }
            try sendPart()
        }
    }

    /// Hands the full part to a part thread, through `shared` (so each buffer stays uniquely
    /// referenced and comes back to `parts` for reuse).
    private func sendPart() throws(HTTPError) {
        var returned: [UInt8] = []
        shared.withLock { swap(&returned, &$0.returned) }
        parts.recycle(&returned)
        var part = parts.takePart()
        sent += 1
        let number = sent, bucket = bucket, key = location
        shared.withLock { state in
            state.busy = true
            swap(&state.sending, &part)
        }
        let started = SystemThread.detach { [shared] in
            var bytes: [UInt8] = []
            shared.withLock { swap(&bytes, &$0.sending) }
            do {
                var uploadID = shared.withLock { $0.uploadID }
                if uploadID == nil {
                    let created = try bucket.createMultipartUpload(key)
                    shared.withLock { $0.uploadID = created }
                    uploadID = created
                }
                let part = try bucket.uploadPart(key, uploadID: uploadID!, number: number, bytes: bytes)
                shared.withLock { $0.parts.append(part) }
            } catch {
                shared.withLock { $0.failure = error }
            }
            let ready = shared.withLock { state -> (@Sendable () -> Void)? in
                swap(&state.returned, &bytes)
                state.busy = false
                defer { state.onIdle = nil }
                return state.onIdle
            }
            shared.idle.signal()
            ready?()
        }
        if !started {
            shared.withLock {
                $0.busy = false; $0.failure = BlobError.transport("no thread for the upload to the bucket")
            }
            throw HTTPError(
                .serviceUnavailable, detail: "the server cannot start the upload to the bucket now; try again shortly",
                headers: HTTPHeaders([("Retry-After", StoreErrors.retryAfter)]), closesConnection: true)
        }
    }

    private func waitIdle() {
        while shared.withLock({ $0.busy }) { shared.idle.wait() }
    }

    private func abortInBackground() {
        let started = SystemThread.detach { [self] in abandon() }
        if !started { abandon() }
    }

    /// The error a failed part upload answers the request with (the body is not read further).
    private static func refusal(_ error: any Error) -> HTTPError {
        var refusal =
            StoreErrors.http(error)
            ?? HTTPError(.internalServerError, detail: "the upload to the blob store failed: \(error)")
        refusal.closesConnection = true
        return refusal
    }
}
