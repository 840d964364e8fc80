import Foundation
import Glibc
import Testing
import JotterServerTestSupport
import JotterTestSupport
import JotterAPI
import JotterHTTP
@testable import JotterClient

/// A sync pass is bounded, and what it stores never goes back in time.
///
/// Its bounds are seconds of wall time: run alone (it is in the Makefile's TIMING_TESTS). In the
/// parallel pass of a loaded 2-core CI run, a 2 s bound took 318 s and two passes with work to do
/// were cut for want of progress: the rest of the run held the process's cooperative threads,
/// which the bound's timer and the in-process server's answers wait for.
@Suite("JotterClient: the sync engine's bounds", .tags(.timing))
struct SyncBoundsTests {
    /// A loopback port that takes connections (the kernel's backlog) and never answers.
    final class SilentServer {
        let port: Int
        private let fd: Int32

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = FaultProxy.loopback(port: 0)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard fd >= 0, bound == 0, listen(fd, 64) == 0 else {
                if fd >= 0 { close(fd) }
                throw FaultProxy.ProxyError(message: "cannot listen")
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
            }
            self.fd = fd
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(fd) }
    }

    @Test("a server that takes the connection and never answers: sync() gives up after syncTimeout, lastError set, the edit queued")
    func silentServer() async throws {
        let silent = try SilentServer()
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(silent.port)")!)  // 60 s idle timeout, 4 attempts
        let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"), syncTimeout: 2)
        #expect(engine.syncTimeout == 2)
        try await engine.create("written while the server hangs")
        let start = ContinuousClock.now
        let sync = Task { try await engine.sync() }
        let ended = Task {
            try? await Task.sleep(nanoseconds: 50_000_000_000)
            sync.cancel()
        }
        let result = await sync.result
        ended.cancel()
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(30), "sync() took \(elapsed), its client 60 s × 4 attempts")
        guard case .failure(let failure) = result, let error = failure as? JotterClientError else {
            Issue.record("sync() did not throw a JotterClientError: \(result)")
            return
        }
        #expect(error.isTransport && error.urlErrorCode == .timedOut && !error.isCancelled, "\(error)")
        let state = try await engine.state
        #expect(state.isOffline && !state.isSyncing && state.pending == 1 && state.lastError?.message == error.message)
        #expect(try await engine.notes().map(\.body) == ["written while the server hangs"])
        #expect(try await engine.pendingEdits().first?.kind == .create)
    }

    /// Answers each page of `GET /notes/changes` 0.6 s late: a slow link.
    final class SlowFeed: Middleware {
        func handle(_ request: Request, context: RequestContext, next: Responder) throws -> Reply {
            if request.path == "/notes/changes" { Thread.sleep(forTimeInterval: 0.6) }
            return try next(request, context)
        }
    }

    @Test("a pull that keeps getting pages is not cut by syncTimeout, however long it takes in all")
    func progressingPullIsNotCut() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withClient(configure: { $0.middleware = [SlowFeed()] }) { client, _ in
            for number in 0..<4 { _ = try await client.notes.create("note \(number)") }
            let engine = try NotesSyncEngine(
                client: client, file: folder.appendingPathComponent("notes.sqlite"), pageSize: 1, syncTimeout: 1.5)
            let start = ContinuousClock.now
            try await engine.sync()
            #expect(ContinuousClock.now - start > .seconds(2), "five pages, each 0.6 s late")
            #expect(try await engine.notes().count == 4)
            #expect(try await engine.state.lastError == nil)
        }
    }

    @Test("a page whose bytes keep arriving on a slow link is not cut by syncTimeout, however long it takes")
    func slowPageIsNotCut() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withClient { client, app in
            let text = String(repeating: "a slow link's page ", count: 1000)  // 19 kB a note
            for _ in 0..<2 { _ = try await client.notes.create(text) }
            let proxy = try FaultProxy(upstream: app.port)
            defer { proxy.stop() }
            proxy.throttle.withLock { $0 = (bytes: 1000, seconds: 0.05) }  // 20 kB/s: the page takes 2 s
            let engine = try NotesSyncEngine(
                client: JotterClient(baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!),
                file: folder.appendingPathComponent("notes.sqlite"), syncTimeout: 1)
            let start = ContinuousClock.now
            try await engine.sync()
            #expect(ContinuousClock.now - start > .seconds(1.5), "one page of 38 kB at 20 kB/s")
            #expect(try await engine.notes().map(\.body) == [text, text])
            #expect(try await engine.state.lastError == nil)
        }
    }

    @Test("a cancelled sync (the app going to the background) leaves no lastError")
    func cancelledIsNoError() async throws {
        let silent = try SilentServer()
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = JotterClient(baseURL: URL(string: "http://127.0.0.1:\(silent.port)")!)
        let engine = try NotesSyncEngine(client: client, file: folder.appendingPathComponent("notes.sqlite"))
        try await engine.create("queued")
        let sync = Task { try await engine.sync() }
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(await sync.cancelAndEnds(within: 5))
        let state = try await engine.state
        #expect(state.lastError == nil && state.needsAttention == nil && state.pending == 1, "\(String(describing: state.lastError))")
    }

    @Test("an answer overtaken by a newer version in the replica (another engine's pull) does not put the older text back")
    func olderNeverOverwritesNewer() async throws {
        try await SyncEngineTests.withServer { client, _, folder in
            let file = folder.appendingPathComponent("notes.sqlite")
            let engine = try NotesSyncEngine(client: client, file: file)
            let first = try await client.notes.create("version 1")
            let second = try await client.notes.update(first.id, body: "version 2")
            try await engine.sync()
            #expect(try await engine.note(first.id)?.version == 2)
            // A second engine on the same file (an app extension) gets the answer to an older write late.
            let other = try NotesSyncEngine(client: client, file: file)
            try await other.store(first)
            #expect(try await engine.note(first.id)?.body == "version 2")
            #expect(try await other.note(first.id)?.version == 2)
            try await other.store(second)
            #expect(try await engine.note(first.id)?.body == "version 2")
        }
    }
}
