import Foundation
import Synchronization
import Testing
import JotterTestSupport
import JotterAPI
import JotterClient

/// `uploads.resumableUpload(fileAt:state:)` against the server's tus endpoints: an interrupted
/// upload goes on from the server's offset with the state kept in a file, progress counting the
/// resumed bytes.
@Suite("JotterClient: resumable uploads")
struct ResumableUploadClientTests {
    final class TaskBox: Sendable {
        let task = Mutex<Task<Upload, any Error>?>(nil)
        func cancel() { task.withLock { $0?.cancel() } }
    }

    @Test("cancelled after two chunks, then resumed from the state file: only the rest is sent, the SHA-256 is the file's")
    func resume() async throws {
        try await withClient { client, app in
            let bytes = pattern(600_000)
            let file = try makeFile(app.dataDirectory, "big.bin", bytes)
            let state = app.dataDirectory.appendingPathComponent("big.state")
            let box = TaskBox()
            let task = Task {
                try await client.uploads.resumableUpload(
                    fileAt: file, state: state, chunkSize: 100_000,
                    progress: { progress in
                        if progress.completed >= 200_000 { box.cancel() }
                    })
            }
            box.task.withLock { $0 = task }
            await #expect(throws: (any Error).self) { try await task.value }
            #expect(FileManager.default.fileExists(atPath: state.path))

            let resumedAt = Atomic<Int64>(-1)
            let first = Mutex<TransferProgress?>(nil)
            let upload = try await client.uploads.resumableUpload(
                fileAt: file, state: state, chunkSize: 100_000,
                progress: { progress in
                    first.withLock { if $0 == nil { $0 = progress } }
                }, resumed: { resumedAt.store($0, ordering: .relaxed) })
            #expect(resumedAt.load(ordering: .relaxed) >= 200_000)
            #expect(first.withLock { $0 }?.completed == resumedAt.load(ordering: .relaxed))
            #expect(first.withLock { $0 }?.total == Int64(bytes.count))
            #expect(upload.size == Int64(bytes.count))
            #expect(upload.sha256 == sha256(bytes))
            #expect(upload.filename == "big.bin")
            #expect(!FileManager.default.fileExists(atPath: state.path))
            #expect(try await client.uploads.list().count == 1)
        }
    }

    @Test("a state file for a changed file is not used: the upload starts again")
    func changedFile() async throws {
        try await withClient { client, app in
            let file = try makeFile(app.dataDirectory, "a.txt", Array("hello".utf8))
            let state = app.dataDirectory.appendingPathComponent("a.state")
            try Data(#"{"location":"http://127.0.0.1:1/uploads/000000000000000000000000","path":"/elsewhere","size":5,"modified":0}"#.utf8).write(
                to: state)
            let resumedAt = Atomic<Int64>(-1)
            let upload = try await client.uploads.resumableUpload(fileAt: file, state: state, resumed: { resumedAt.store($0, ordering: .relaxed) })
            #expect(resumedAt.load(ordering: .relaxed) == 0)
            #expect(upload.sha256 == sha256(Array("hello".utf8)))
        }
    }
}
