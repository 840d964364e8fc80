import Foundation
import Glibc

/// Runs the tool `arguments[0]` (found on `PATH`) with the rest as its arguments, to its end;
/// its exit status (128 + the signal when a signal ended it) and what it wrote to standard
/// error (standard output is dropped).
///
/// Started with `spawnProgram` and reaped with `waitpid`, as every program a test starts:
/// Foundation's `Process.waitUntilExit()` could wait forever for a tool that had ended (see
/// `spawnProgram`).
///
/// ```swift
/// let (status, errors) = try runTool(["swift", "package", "resolve"])
/// ```
public func runTool(_ arguments: [String]) throws -> (status: Int32, errors: String) {
    let errors = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-tool-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: errors) }
    let status = waitForExit(try spawnProgram(arguments, output: .discard, errors: .file(errors)))
    let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
    let signal = status & 0x7F
    return (signal == 0 ? (status >> 8) & 0xFF : 128 + signal, text)
}
