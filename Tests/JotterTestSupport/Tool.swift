import Foundation

/// Runs the tool `arguments[0]` (found on `PATH`) with the rest as its arguments, to its end;
/// its exit status and what it wrote to standard error (standard output is dropped).
///
/// ```swift
/// let (status, errors) = try runTool(["swift", "package", "resolve"])
/// ```
public func runTool(_ arguments: [String]) throws -> (status: Int32, errors: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}
