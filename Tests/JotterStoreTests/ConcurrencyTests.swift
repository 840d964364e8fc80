import Foundation
import Synchronization
import Testing
@testable import JotterStore

@Suite("Concurrency: group commit, no lost updates, readers beside the writer", .serialized)
struct ConcurrencyTests {
    @Test(arguments: Backend.all) func manyThreadsWriteWithoutErrorsAndShareCommits(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let threads = 8, writesPerThread = 200
        let failures = Mutex<[String]>([])
        let ids = Mutex<Set<Int64>>([])
        onThreads(threads) { thread in
            for index in 0..<writesPerThread {
                do {
                    let result = try fixture.store.perform(.create(body: "t\(thread) w\(index)"))
                    guard let note = result.note else { throw FixtureError("unexpected \(result)") }
                    ids.withLock { _ = $0.insert(note.id) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(ids.withLock { $0.count } == threads * writesPerThread)
        #expect(try fixture.store.notes(NoteQuery(limit: 10_000)).count == threads * writesPerThread)

        if let statistics = fixture.sqlite?.statistics {
            #expect(statistics.writes == threads * writesPerThread)
            #expect(statistics.commits < statistics.writes, "writes arriving together share a commit")
            print("group commit: \(statistics.writes) writes in \(statistics.commits) commits")
        }
        fixture.store.close()
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test(arguments: Backend.all) func submitFromManyThreadsCompletesEveryWriteOnce(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let total = 2_000
        let completions = Counter()
        let done = DispatchSemaphore(value: 0)
        onThreads(4) { _ in
            for index in 0..<(total / 4) {
                fixture.store.submit(.create(body: "s\(index)")) { result in
                    if case .success(.done) = result { completions.increment() }
                    done.signal()
                }
            }
        }
        for _ in 0..<total { #expect(done.wait(timeout: .now() + 30) == .success) }
        #expect(completions.value == total)
        if let sqlite = fixture.sqlite { #expect(sqlite.statistics.commits < total) }
    }

    @Test(arguments: Backend.all) func noLostUpdatesWithIfVersion(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let counter = try fixture.create("0")
        let threads = 8, incrementsPerThread = 25
        let successes = Atomic<Int>(0)
        let retries = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        onThreads(threads) { _ in
            var done = 0
            while done < incrementsPerThread {
                do {
                    guard let current = try fixture.store.note(id: counter.id), let value = Int(current.body) else {
                        throw FixtureError("counter note unreadable")
                    }
                    switch try fixture.store.perform(.update(id: counter.id, body: "\(value + 1)", ifVersion: current.version)) {
                    case .done:
                        done += 1
                        successes.add(1, ordering: .relaxed)
                    case .versionMismatch:
                        retries.add(1, ordering: .relaxed)
                    case .notFound:
                        throw FixtureError("counter note vanished")
                    case .uploadsAdded, .uploadDeleted, .uploadAttached, .noRevision, .cannotMerge:
                        throw FixtureError("an update answered as an upload or a restore")
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    return
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let final = try #require(try fixture.store.note(id: counter.id))
        let successCount = successes.load(ordering: .relaxed)
        #expect(successCount == threads * incrementsPerThread)
        #expect(Int(final.body) == successCount)
        #expect(final.version == Int64(successCount) + 1)
        print("lost-update test: \(successCount) increments, \(retries.load(ordering: .relaxed)) retries on mismatch")
        fixture.store.close()
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test(arguments: Backend.all) func readersNeverFailWhileTheWriterCommits(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        for index in 0..<100 { try fixture.create("seed \(index)") }
        let stop = Atomic<Bool>(false)
        let readFailures = Mutex<[String]>([])
        let reads = Atomic<Int>(0)
        onThreads(6) { thread in
            if thread < 2 {
                for index in 0..<300 { _ = try? fixture.store.perform(.create(body: "write \(thread) \(index)")) }
                stop.store(true, ordering: .relaxed)
                return
            }
            while !stop.load(ordering: .relaxed) {
                do {
                    let page = try fixture.store.notes(NoteQuery(limit: 50, search: thread % 2 == 0 ? "write" : nil))
                    if let first = page.first { _ = try fixture.store.note(id: first.id) }
                    _ = try fixture.store.events(after: max(0, try fixture.store.lastEventID() - 10), limit: 10)
                    reads.add(1, ordering: .relaxed)
                } catch {
                    readFailures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(readFailures.withLock { $0 } == [])
        #expect(reads.load(ordering: .relaxed) > 0)
    }
}
