import Foundation
import Glibc

/// Where a spawned program's standard output or error goes.
public enum ChildOutput: Sendable {
    /// This process's own.
    case inherit
    /// /dev/null.
    case discard
    /// The file, created or truncated.
    case file(URL)
    /// This open descriptor (e.g. a pipe's write end).
    case descriptor(Int32)
}

/// Starts `arguments[0]` (found on `PATH` unless a path) with the rest as its arguments and
/// `environment` as its whole environment; standard input from /dev/null, `output` and `errors`
/// (nil: where `output` goes). Its process id, for the caller to reap with `waitpid`.
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
    output: ChildOutput = .inherit, errors: ChildOutput? = nil
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    func redirect(_ target: ChildOutput, to fd: Int32) {
        switch target {
        case .inherit: break
        case .discard: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
        case .file(let url): posix_spawn_file_actions_addopen(&actions, fd, url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        case .descriptor(let source): posix_spawn_file_actions_adddup2(&actions, source, fd)
        }
    }
    redirect(output, to: 1)
    if let errors { redirect(errors, to: 2) } else if case .inherit = output {} else { posix_spawn_file_actions_adddup2(&actions, 1, 2) }
    guard addCloseFrom(&actions, 3) == 0 else { throw RawHTTP.Failure(message: "posix_spawn_file_actions_addclosefrom_np failed") }

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

/// Runs a program to its end, standard output and error in one text; its exit status.
/// `environment` is added to this process's.
public func runProgram(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-run-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: output) }
    let pid = try spawnProgram(
        arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
        output: .file(output))
    let status = waitForExit(pid)
    let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    return ((status >> 8) & 0xFF, text)
}

/// Waits for the child `pid` to end and reaps it; its wait status.
public func waitForExit(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    return status
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which its headers declare only
/// for `_DEFAULT_SOURCE` builds and Swift's Glibc module doesn't see.
private let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
        fatalError("glibc 2.34 or later is needed (posix_spawn_file_actions_addclosefrom_np)")
    }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()
