#if canImport(Glibc)
import Glibc
#endif
import CCurl
import Synchronization
import JotterSystem

/// One download from a bucket that holds no thread while it waits: the bytes arrive into a
/// bounded buffer that the reader (an HTTP engine's streaming body) drains at its own pace.
/// While the buffer is full the transfer is paused (libcurl's `CURL_WRITEFUNC_PAUSE`), so the
/// bucket's connection stops being read and TCP slows the bucket down: a reader that stops
/// reading holds at most `bufferLimit` bytes plus one libcurl block (16 KiB).
///
/// Every download of an `S3BlobStore` runs on one libcurl multi handle driven by one thread
/// (started with the first download, ended after a few idle seconds), however many there are.
///
/// ```swift
/// let download = bucket.download(key, range: 0...99)
/// download.whenOpened { result in … }        // the object's size and ETag, or why not
/// download.notify { waker.wake() }            // more bytes, the end or a failure
/// switch download.read(into: buffer) { … }    // never blocks
/// download.cancel()                           // the reader is done
/// ```
public final class BlobDownload: Sendable {
    /// What `read` found.
    public enum Read: Sendable, Equatable {
        /// This many bytes were copied.
        case bytes(Int)
        /// Nothing now; the `notify` closure is called when there is.
        case wait
        /// Every byte was read.
        case end
        /// The bytes were cut short (the bucket's connection failed mid-object).
        case failed
    }

    /// Bytes held before the transfer is paused.
    public let bufferLimit: Int

    struct State {
        var bytes: [UInt8] = []
        var head = 0
        var ended = false
        var failed = false
        var cancelled = false
        /// libcurl was told to pause; the next read that makes room resumes it.
        var paused = false
        /// How the bucket answered, once it has; taken by `whenOpened`.
        var outcome: Result<BlobInfo, any Error>?
        var opened: (@Sendable (Result<BlobInfo, any Error>) -> Void)?
        var notify: (@Sendable () -> Void)?

        var buffered: Int { bytes.count - head }
    }

    let state: Mutex<State>
    /// Asks the driver to resume the paused transfer, or to drop a cancelled one.
    let poke: @Sendable (_ cancel: Bool) -> Void

    init(bufferLimit: Int, poke: @escaping @Sendable (_ cancel: Bool) -> Void) {
        self.bufferLimit = bufferLimit
        self.state = Mutex(State())
        self.poke = poke
    }

    /// Sets what is called once (from the driver's thread, or here when the answer is already
    /// known) with how the bucket answered: the whole object's size and ETag on a 2xx, before any
    /// byte can be read; else why not — `BlobError.notFound`, `.invalidRange`, or a transient
    /// error once an unreachable bucket or a 5xx was tried `S3BlobStore.attempts` times.
    public func whenOpened(_ opened: @escaping @Sendable (Result<BlobInfo, any Error>) -> Void) {
        let known = state.withLock { state -> Result<BlobInfo, any Error>? in
            guard let outcome = state.outcome else { state.opened = opened; return nil }
            return outcome
        }
        if let known { opened(known) }
    }

    /// Sets what is called (from the driver's thread, without locks held) whenever `read` may
    /// find something new; called at once when it already would.
    public func notify(_ wake: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            state.notify = wake
            return state.buffered > 0 || state.ended
        }
        if now { wake() }
    }

    /// Copies buffered bytes into `buffer`; never blocks.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Read {
        let (read, resume) = state.withLock { state -> (Read, Bool) in
            let n = min(buffer.count, state.buffered)
            if n > 0 {
                state.bytes.withUnsafeBytes { bytes in
                    buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + state.head, byteCount: n)
                }
                state.head += n
                if state.head == state.bytes.count {
                    state.bytes.removeAll(keepingCapacity: true)
                    state.head = 0
                } else if state.head >= bufferLimit / 2 {
                    state.bytes.removeFirst(state.head)
                    state.head = 0
                }
            }
            let resume = state.paused && state.buffered <= bufferLimit / 2
            if resume { state.paused = false }
            if n > 0 { return (.bytes(n), resume) }
            if state.ended { return (state.failed ? .failed : .end, resume) }
            return (.wait, resume)
        }
        if resume { poke(false) }
        return read
    }

    /// The reader is done (finished or gone): the transfer stops, the buffer is freed. Idempotent.
    public func cancel() {
        let first = state.withLock { state -> Bool in
            defer { state.cancelled = true; state.notify = nil; state.opened = nil; state.bytes = []; state.head = 0 }
            return !state.cancelled
        }
        if first { poke(true) }
    }

    // MARK: - The driver's side

    /// Takes bytes from libcurl; `SinkFull` when the buffer is full (libcurl pauses and gives
    /// them again after a resume), an error when the reader is gone (the transfer stops).
    func accept(_ bytes: UnsafeRawBufferPointer) throws {
        let wake = try state.withLock { state -> (@Sendable () -> Void)? in
            if state.cancelled { throw BlobError.transport("the reader is gone") }
            if state.buffered >= bufferLimit {
                state.paused = true
                throw S3Transfer.SinkFull()
            }
            state.bytes.append(contentsOf: bytes)
            return state.buffered == bytes.count ? state.notify : nil  // was empty: the reader may wait
        }
        wake?()
    }

    /// The bucket answered 2xx (`info`), or not (`error`): told once, to the `whenOpened` closure.
    private func answered(_ outcome: Result<BlobInfo, any Error>) {
        let opened = state.withLock { state -> (@Sendable (Result<BlobInfo, any Error>) -> Void)? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.opened = nil }
            return state.opened
        }
        opened?(outcome)
    }

    /// The bucket answered 2xx: the reader learns the object's size and ETag.
    func open(_ info: BlobInfo) { answered(.success(info)) }

    /// The transfer is over: `error` nil when every byte arrived. Before `open`, the error
    /// (or `BlobError` for the bucket's answer) goes to the `opened` closure instead.
    func end(_ error: (any Error)?) {
        let (wasOpen, wake) = state.withLock { state in
            defer { state.ended = true; state.failed = error != nil }
            return (state.outcome != nil, state.notify)
        }
        if wasOpen {
            wake?()
        } else {
            answered(.failure(error ?? BlobError.transport("the bucket's answer ended before its headers")))
        }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }
}

extension S3BlobStore {
    /// Starts downloading the object (all of it, or `range`, both ends inclusive and clamped to
    /// the object's size) without blocking: the bucket's answer comes to
    /// `BlobDownload.whenOpened`, the bytes through `BlobDownload.read`; `cancel` it when done.
    /// The errors are `get`'s.
    public func download(_ key: String, range: ClosedRange<Int64>?, bufferLimit: Int = 128 << 10) -> BlobDownload {
        do {
            try validateBlobKey(key)
        } catch {
            let download = BlobDownload(bufferLimit: bufferLimit, poke: { _ in })
            download.end(error)
            return download
        }
        let (url, headers) = address(key: key, headers: Self.rangeHeaders(range), body: nil)
        let job = S3Downloads.Job(key: key) { [configuration, handles] download in
            try S3Transfer(
                configuration: configuration, handles: handles, method: "GET", url: url, headers: headers, body: nil,
                opened: { download.open(Self.info(key, $0)) }, sink: { try download.accept($0) })
        }
        let download = BlobDownload(bufferLimit: bufferLimit) { [downloads, job] cancel in
            downloads.poke(job, cancel: cancel)
        }
        job.download = download
        downloads.add(job)
        return download
    }
}

/// The one thread and libcurl multi handle behind every `BlobDownload` of a store.
final class S3Downloads: @unchecked Sendable {
    // @unchecked: `multi`, `running` and every Job's `transfer`/`attempt` are touched only by
    // the driver thread; the rest is under `shared`.

    /// One download as the driver sees it.
    final class Job: @unchecked Sendable {
        let key: String
        let makeTransfer: (BlobDownload) throws -> S3Transfer
        /// Set before the job is added; dropped by the driver when the transfer is over (the
        /// download's `poke` holds the job: this breaks the cycle).
        var download: BlobDownload?
        var transfer: S3Transfer?
        var attempt = 0
        /// When a retry is due (driver's clock, milliseconds).
        var retryAt: Int64?

        init(key: String, makeTransfer: @escaping (BlobDownload) throws -> S3Transfer) {
            self.key = key
            self.makeTransfer = makeTransfer
        }
    }

    private struct Shared {
        var added: [Job] = []
        var resumed: [Job] = []
        var cancelled: [Job] = []
        var threadRunning = false
    }

    private let shared = Mutex(Shared())
    private let multi: UnsafeMutableRawPointer
    /// Jobs whose transfer is in the multi handle, by easy handle.
    private var running: [UnsafeMutableRawPointer: Job] = [:]
    private var retrying: [Job] = []
    /// How long the thread stays without work before it ends.
    private static let idleMilliseconds: Int64 = 5000

    init() {
        multi = curl_multi_init()!
    }

    deinit { curl_multi_cleanup(multi) }

    func add(_ job: Job) {
        let start = shared.withLock { shared -> Bool in
            shared.added.append(job)
            defer { shared.threadRunning = true }
            return !shared.threadRunning
        }
        if start {
            if !SystemThread.detach({ self.drive() }) {
                shared.withLock {
                    $0.threadRunning = false; $0.added.removeAll { $0 === job }
                }
                job.download?.end(BlobError.transport("cannot start the download thread"))
                job.download = nil
            }
        } else {
            curl_multi_wakeup(multi)
        }
    }

    func poke(_ job: Job, cancel: Bool) {
        let running = shared.withLock { shared -> Bool in
            // A thread ends only when no transfer is left: then there is nothing to resume or drop.
            guard shared.threadRunning else { return false }
            if cancel { shared.cancelled.append(job) } else { shared.resumed.append(job) }
            return true
        }
        if running { curl_multi_wakeup(multi) }
    }

    private static func now() -> Int64 { MonotonicClock.milliseconds() }

    /// The driver thread: adds, resumes and drops transfers, lets libcurl move bytes, and ends
    /// once nothing has been in flight for `idleMilliseconds`.
    private func drive() {
        var idleSince = Self.now()
        while true {
            let (added, resumed, cancelled, exit) = shared.withLock { shared -> ([Job], [Job], [Job], Bool) in
                let work = !shared.added.isEmpty || !shared.resumed.isEmpty || !shared.cancelled.isEmpty
                if !work, running.isEmpty, retrying.isEmpty, Self.now() - idleSince >= Self.idleMilliseconds {
                    shared.threadRunning = false
                    return ([], [], [], true)
                }
                defer { shared.added = []; shared.resumed = []; shared.cancelled = [] }
                return (shared.added, shared.resumed, shared.cancelled, false)
            }
            if exit { return }
            for job in added { begin(job) }
            for job in cancelled { drop(job) }
            for job in resumed {
                if let transfer = job.transfer { curl_easy_pause(transfer.easyHandle, CURLPAUSE_CONT) }
            }
            let now = Self.now()
            let due = retrying.filter { $0.retryAt! <= now }
            retrying.removeAll { $0.retryAt! <= now }
            for job in due { job.retryAt = nil; begin(job) }

            var active: Int32 = 0
            curl_multi_perform(multi, &active)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                    let job = running.removeValue(forKey: handle)
                else { continue }
                let code = message.pointee.data.result
                curl_multi_remove_handle(multi, handle)
                finished(job, code: code)
            }
            if running.isEmpty, retrying.isEmpty { idleSince = min(idleSince, Self.now()) } else { idleSince = Self.now() }
            var timeout: Int64 = 1000
            if let next = retrying.compactMap(\.retryAt).min() { timeout = max(0, min(timeout, next - Self.now())) }
            curl_multi_poll(multi, nil, 0, Int32(timeout), nil)
        }
    }

    /// Starts (or starts again) a job's transfer.
    private func begin(_ job: Job) {
        guard let download = job.download, !download.isCancelled else { job.download = nil; return }
        job.attempt += 1
        do {
            let transfer = try job.makeTransfer(download)
            transfer.attach()
            job.transfer = transfer
            running[transfer.easyHandle] = job
            curl_multi_add_handle(multi, transfer.easyHandle)
        } catch {
            download.end(error)
            job.download = nil
        }
    }

    /// The reader cancelled: the transfer leaves the multi handle now.
    private func drop(_ job: Job) {
        retrying.removeAll { $0 === job }
        defer { job.download = nil }
        guard let transfer = job.transfer, running.removeValue(forKey: transfer.easyHandle) != nil else { return }
        curl_multi_remove_handle(multi, transfer.easyHandle)
        job.transfer = nil
    }

    private func finished(_ job: Job, code: CURLcode) {
        guard let transfer = job.transfer, let download = job.download else { return }
        job.transfer = nil
        let outcome = Result { try transfer.finish(code) }
        if transfer.delivered {
            // The reader has the status: a failure now is a cut body.
            switch outcome {
            case .success(let answer) where (200..<300).contains(answer.status): download.end(nil)
            case .success(let answer): download.end(BlobError.server(status: answer.status, code: "", message: "mid-object"))
            case .failure(let error): download.end(error)
            }
            job.download = nil
            return
        }
        let transient: Bool
        switch outcome {
        case .success(let answer): transient = answer.status >= 500
        case .failure(let error): transient = (error as? BlobError)?.isTransient ?? false
        }
        if transient, job.attempt < S3BlobStore.attempts, !download.isCancelled {
            job.retryAt = Self.now() + Int64(S3BlobStore.pause(after: job.attempt))
            retrying.append(job)
            return
        }
        download.end(outcome.flatMap { answer in Result { try S3BlobStore.downloaded(job.key, answer) } }.failure)
        job.download = nil
    }
}

extension Result {
    /// The error, when this is a failure.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
