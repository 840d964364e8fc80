import Foundation
import Glibc
import Synchronization

/// Where a spawned program's standard input comes from, or its output or errors go.
public enum ChildStream: Sendable {
    /// This process's own.
    case inherit
    /// /dev/null.
    case discard
    /// The file: read as input; created or truncated as output.
    case file(URL)
    /// This open descriptor (e.g. a pipe's end).
    case descriptor(Int32)
}

/// Starts `arguments[0]` (found on `PATH` unless a path) with the rest as its arguments and
/// `environment` as its whole environment, in `directory` (nil: this process's); standard input
/// from `input`, `output` and `errors` (nil: where `output` goes). Its process id, for the caller
/// to reap with `waitForExit` (a `ChildProgram` reaps its own).
///
/// Every test that starts a program goes through here, for two reasons:
/// - The child gets **no descriptor of this process but 0, 1 and 2**. Tests run in parallel, and
///   Foundation's `Process` learns that its child ended when the end of a socket pair the child
///   holds closes; that end is open in this process for a moment during `Process.run()`. A
///   program spawned with every descriptor in that moment (a `pg_ctl` whose server lives on, an
///   HAProxy) would keep it open, and that `waitUntilExit()` would never return.
/// - No blocked signal and default handlers (the test runner's mask is not the program's).
public func spawnProgram(
    _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
    directory: URL? = nil, input: ChildStream = .discard, output: ChildStream = .inherit, errors: ChildStream? = nil
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    func redirect(_ stream: ChildStream, to fd: Int32) {
        let flags = fd == 0 ? O_RDONLY : O_WRONLY
        switch stream {
        case .inherit: break
        case .discard: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", flags, 0)
        case .file(let url): posix_spawn_file_actions_addopen(&actions, fd, url.path, fd == 0 ? flags : flags | O_CREAT | O_TRUNC, 0o600)
        case .descriptor(let source): posix_spawn_file_actions_adddup2(&actions, source, fd)
        }
    }
    redirect(input, to: 0)
    redirect(output, to: 1)
    if let errors { redirect(errors, to: 2) } else if case .inherit = output {} else { posix_spawn_file_actions_adddup2(&actions, 1, 2) }
    guard glibc.addCloseFrom(&actions, 3) == 0 else { throw RawHTTP.Failure(message: "posix_spawn_file_actions_addclosefrom_np failed") }
    if let directory, glibc.addChangeDirectory(&actions, directory.path) != 0 {
        throw RawHTTP.Failure(message: "posix_spawn_file_actions_addchdir_np failed")
    }

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
    guard spawned == 0 else { throw RawHTTP.Failure(message: "cannot run \(arguments[0]): \(String(cString: strerror(spawned)))") }
    return pid
}

/// A program started with `spawnProgram` and reaped the moment it ends, by a thread of its own:
/// whether it runs, a signal to it, a wait for its end, from any thread.
///
/// Reaped at once, not when asked: the test runner's exit tests find their child's end with
/// `waitid(P_ALL, WNOWAIT)`, which returns the same unreaped child of ours again and again while
/// it waits — one zombie of ours left until its owner looks would hold every exit test meanwhile.
///
/// ```swift
/// let watcher = try ChildProgram(["jotter", "notes", "watch"], output: .file(log))
/// defer { watcher.stop() }
/// ```
public final class ChildProgram: Sendable {
    /// Its process id.
    public let pid: pid_t
    /// Its wait status once reaped.
    private let status = Mutex<Int32?>(nil)
    /// Signalled once it is reaped (and again by each waiter, for the next).
    private let ended = DispatchSemaphore(value: 0)

    /// Starts it as `spawnProgram` does, with the same parameters.
    public init(
        _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        directory: URL? = nil, input: ChildStream = .discard, output: ChildStream = .inherit, errors: ChildStream? = nil
    ) throws {
        pid = try spawnProgram(arguments, environment: environment, directory: directory, input: input, output: output, errors: errors)
        let reaper = Thread { [self] in
            // Waits without reaping, then reaps under the lock `signal` takes: a signal never
            // reaches a process that took a reaped one's id.
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
            status.withLock { status in
                var value: Int32 = 0
                var result: pid_t
                repeat { result = waitpid(pid, &value, 0) } while result == -1 && errno == EINTR
                status = result == pid ? value : 0x7F00  // (0x7F00, exit 127: reaped elsewhere, never here)
            }
            ended.signal()
        }
        reaper.name = "reaper \(pid)"
        reaper.start()
    }

    /// Its wait status once it ended, nil while it runs.
    public var waitStatus: Int32? { status.withLock { $0 } }

    /// Whether it still runs.
    public var isRunning: Bool { waitStatus == nil }

    /// Waits for it to end; its wait status (`exitStatus` reads it).
    @discardableResult
    public func waitUntilExit() -> Int32 {
        if let status = waitStatus { return status }
        ended.wait()
        ended.signal()
        return waitStatus ?? 0x7F00
    }

    /// Sends `signal` (`SIGTERM`, `SIGKILL`…); true if it reached a live process.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool {
        status.withLock { $0 == nil && kill(pid, signal) == 0 }
    }

    /// Ends it with `SIGKILL` unless it ended already, and waits for it. (`SIGKILL`: nothing a
    /// test starts is owed a clean stop, and a blocked or ignored `SIGTERM` can't keep it.)
    public func stop() {
        signal(SIGKILL)
        waitUntilExit()
    }
}

/// What a program run to its end did.
public struct ProgramRun: Sendable {
    /// Its exit status, or 128 + the signal that ended it.
    public let status: Int32
    /// Its standard output, and its standard error too unless run with `separateErrors`.
    public let output: String
    /// Its standard error when run with `separateErrors`; empty otherwise.
    public let errors: String
}

/// Runs a program to its end (`spawnProgram`, then `waitForExit`): `input` as its standard input,
/// in `directory`, with `environment` as its whole environment.
///
/// ```swift
/// let run = try runProgram(["sha256sum"], input: Array("abc".utf8))
/// #expect(run.status == 0)
/// ```
public func runProgram(
    _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment, directory: URL? = nil,
    input: [UInt8] = [], separateErrors: Bool = false
) throws -> ProgramRun {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-run-\(UUID().uuidString)")
    let (inputFile, outputFile, errorsFile) = (
        base.appendingPathExtension("in"), base.appendingPathExtension("out"), base.appendingPathExtension("err")
    )
    defer { for file in [inputFile, outputFile, errorsFile] { try? FileManager.default.removeItem(at: file) } }
    try Data(input).write(to: inputFile)
    let pid = try spawnProgram(
        arguments, environment: environment, directory: directory,
        input: .file(inputFile), output: .file(outputFile), errors: separateErrors ? .file(errorsFile) : nil)
    let status = exitStatus(waitForExit(pid))
    /// (Decoded leniently: a program may print bytes that are not UTF-8.)
    func text(_ file: URL) -> String { String(decoding: (try? Data(contentsOf: file)) ?? Data(), as: UTF8.self) }
    return ProgramRun(status: status, output: text(outputFile), errors: separateErrors ? text(errorsFile) : "")
}

/// A wait status as a shell gives it: the exit status, or 128 + the signal that ended the program.
public func exitStatus(_ waitStatus: Int32) -> Int32 {
    let signal = waitStatus & 0x7F
    return signal == 0 ? (waitStatus >> 8) & 0xFF : 128 + signal
}

/// Waits for the child `pid` to end and reaps it; its wait status.
public func waitForExit(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    return status
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34) and `…_addchdir_np` (2.29), which
/// its headers declare only for `_DEFAULT_SOURCE`/`_GNU_SOURCE` builds and Swift's Glibc module
/// doesn't see.
private enum glibc {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    static let addCloseFrom: CloseFrom = symbol("posix_spawn_file_actions_addclosefrom_np")
    static let addChangeDirectory: ChangeDirectory = symbol("posix_spawn_file_actions_addchdir_np")

    static func symbol<T>(_ name: String) -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { fatalError("glibc 2.34 or later is needed (\(name))") }
        return unsafeBitCast(symbol, to: T.self)
    }
}
