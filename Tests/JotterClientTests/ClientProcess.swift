import Foundation
import Glibc
import JotterTestSupport

/// A sync engine in a process of its own, to be killed with SIGKILL mid-send: this test bundle
/// run again (`/proc/self/exe`, the test runner on Linux) on the `ConvergenceChild` test alone,
/// which opens the replica `file`, syncs it once through `url` and exits.
final class ClientProcess: Sendable {
    static let fileVariable = "JOTTER_CONVERGE_CHILD_FILE"
    static let urlVariable = "JOTTER_CONVERGE_CHILD_URL"

    private let process: ChildProgram
    var pid: pid_t { process.pid }
    /// Its standard output and error.
    let output: URL

    init(file: URL, url: URL) throws {
        output = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-converge-child-\(UUID().uuidString)")
        process = try ChildProgram(
            ["/proc/self/exe", "--testing-library", "swift-testing", "--filter", "ConvergenceChild"],
            environment: ProcessInfo.processInfo.environment.merging(
                [Self.fileVariable: file.path, Self.urlVariable: url.absoluteString]) { $1 },
            output: .file(output))
    }

    deinit {
        process.stop()
        try? FileManager.default.removeItem(at: output)
    }

    /// SIGKILL (from any thread).
    func kill() { process.signal(SIGKILL) }

    /// Waits up to `seconds` for it to end: how it ended, or nil.
    func wait(seconds: Double) async -> String? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let status = process.waitStatus { return Self.describe(status) }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    static func describe(_ status: Int32) -> String {
        status & 0x7F == 0 ? "exited \((status >> 8) & 0xFF)" : "killed by signal \(status & 0x7F)"
    }

    /// What it printed.
    var printed: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
}
