import Foundation
import Glibc
import JotterTestSupport
import Synchronization

/// A sync engine in a process of its own, to be killed with SIGKILL mid-send: this test bundle
/// run again (`/proc/self/exe`, the test runner on Linux) on the `ConvergenceChild` test alone,
/// which opens the replica `file`, syncs it once through `url` and exits.
final class ClientProcess: @unchecked Sendable {
    static let fileVariable = "JOTTER_CONVERGE_CHILD_FILE"
    static let urlVariable = "JOTTER_CONVERGE_CHILD_URL"

    let pid: pid_t
    /// Its standard output and error.
    let output: URL
    private let status = Mutex<Int32?>(nil)

    init(file: URL, url: URL) throws {
        output = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-converge-child-\(UUID().uuidString)")
        pid = try spawnProgram(
            ["/proc/self/exe", "--testing-library", "swift-testing", "--filter", "ConvergenceChild"],
            environment: ProcessInfo.processInfo.environment.merging(
                [Self.fileVariable: file.path, Self.urlVariable: url.absoluteString]) { $1 },
            output: .file(output))
    }

    deinit {
        if exitStatus == nil { Glibc.kill(pid, SIGKILL); _ = reap(within: 5) }
        try? FileManager.default.removeItem(at: output)
    }

    /// SIGKILL (from any thread).
    func kill() { Glibc.kill(pid, SIGKILL) }

    /// The wait status once it ended (nil while it runs); reaps it.
    var exitStatus: Int32? {
        status.withLock { status in
            if status == nil {
                var value: Int32 = 0
                if waitpid(pid, &value, WNOHANG) == pid { status = value }
            }
            return status
        }
    }

    /// Waits up to `seconds` for it to end: how it ended, or nil.
    func wait(seconds: Double) async -> String? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let status = exitStatus { return Self.describe(status) }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    private func reap(within seconds: Double) -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if exitStatus != nil { return true }
            usleep(5000)
        }
        return false
    }

    static func describe(_ status: Int32) -> String {
        status & 0x7F == 0 ? "exited \((status >> 8) & 0xFF)" : "killed by signal \(status & 0x7F)"
    }

    /// What it printed.
    var printed: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
}
