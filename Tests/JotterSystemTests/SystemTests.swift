import Synchronization
import Testing
import JotterSystem

/// The system module's clocks, threads, semaphore, periodic tasks, random bytes and digests.
/// Every duration is taken between two readings of `MonotonicClock` (never another clock).
@Suite("System")
struct SystemTests {
    @Test("the monotonic clock does not go back, and its units agree")
    func monotonicClock() {
        let first = MonotonicClock.microseconds()
        let seconds = MonotonicClock.seconds()
        let milliseconds = MonotonicClock.milliseconds()
        let last = MonotonicClock.microseconds()
        #expect(last >= first)
        #expect(seconds * 1e6 >= Double(first) - 1 && seconds * 1e6 <= Double(last) + 1)
        #expect(UInt64(milliseconds) >= first / 1000 && UInt64(milliseconds) <= last / 1000)
        #expect(MonotonicClock.elapsed(from: 10, to: 25) == 15)
        #expect(MonotonicClock.elapsed(from: 25, to: 10) == 0)
        #expect(MonotonicClock.elapsed(from: 0, to: .max) == Int.max)
        #expect(MonotonicClock.since(7, to: 3) == 0)
    }

    @Test("a thread runs its work, knows itself, and is joined")
    func threads() throws {
        let seen = Mutex<(ran: Bool, isCurrent: Bool)>((false, false))
        let thread = SystemThread()
        try thread.start { [thread] in seen.withLock { $0 = (true, thread.isCurrent) } }
        thread.join()
        #expect(seen.withLock { $0.ran && $0.isCurrent })
        #expect(!thread.isCurrent)

        let done = Semaphore()
        #expect(SystemThread.detach { done.signal() })
        #expect(done.wait(seconds: 10))
    }

    @Test("a bounded wait times out when nothing is signalled, and takes a signal given before it")
    func semaphoreWait() {
        let semaphore = Semaphore()
        let start = MonotonicClock.microseconds()
        #expect(!semaphore.wait(seconds: 0.05))
        #expect(MonotonicClock.microseconds() - start >= 50_000)
        semaphore.signal()
        #expect(semaphore.wait(seconds: 0))
        #expect(!semaphore.wait(seconds: 0))
    }

    @Test("a periodic task runs at once, then every interval, and a stop ends it between runs")
    func periodicTask() {
        let runs = Atomic<Int>(0)
        let ran = Semaphore()
        let task = PeriodicTask(every: 0.02) {
            runs.add(1, ordering: .relaxed)
            ran.signal()
        }
        #expect(task.start())
        for _ in 0..<3 { #expect(ran.wait(seconds: 10)) }
        task.stop()
        let stoppedAt = runs.load(ordering: .relaxed)
        _ = Semaphore().wait(seconds: 0.1)
        // At most the run under way when stop() came.
        #expect(runs.load(ordering: .relaxed) <= stoppedAt + 1)
    }

    @Test("a periodic task waits its first delay, is stopped at once during it, and ends when its work says so")
    func periodicTaskDelayAndEnd() {
        let runs = Atomic<Int>(0)
        let late = PeriodicTask(every: 0.01, firstAfter: 3600) { runs.add(1, ordering: .relaxed) }
        late.start()
        late.stop()
        let ended = Semaphore()
        let once = PeriodicTask.repeating(every: 0.01) {
            runs.add(1, ordering: .relaxed)
            ended.signal()
            return false
        }
        once.start()
        #expect(ended.wait(seconds: 10))
        #expect(!ended.wait(seconds: 0.1))
        #expect(runs.load(ordering: .relaxed) == 1)
    }

    @Test("random bytes differ between draws and fill any size")
    func random() {
        #expect(SystemRandom.bytes(0).isEmpty)
        let big = SystemRandom.bytes(1000)
        #expect(big.count == 1000 && Set(big).count > 100)
        #expect(SystemRandom.bytes(16) != SystemRandom.bytes(16))
        let id = SystemRandom.hex(bytes: 12)
        #expect(id.count == 24 && id.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(Hex.lowercase([0x0a, 0xff, 0]) == "0aff00")
    }

    @Test("SHA-256 and SHA-1 of known inputs")
    func digests() {
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.digest([]).count == 32)
        var sha1 = MessageDigest(.sha1)
        Array("abc".utf8).withUnsafeBytes { sha1.update($0) }
        #expect(Hex.lowercase(sha1.finish()) == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }
}
