import Foundation
import Glibc

/// What NginxProcess and HAProxyProcess share: a load balancer started as a child process on a
/// free loopback port, waited for until it accepts, its log read once a request's line is
/// there, and stopped.
enum ProxyProcess {
    /// Waits until `port` accepts a connection: true then; false when the started `process`
    /// exits first or `timeout` seconds pass (the process is then left to the caller).
    static func accepts(_ port: Int, while process: ChildProgram, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline {
            if (try? RawHTTP(port: port, timeout: 1)) != nil { return true }
            usleep(20_000)
        }
        return false
    }

    /// `read()` once it returns at least `count` lines, or after `seconds`: a proxy logs a
    /// request when it ends, so a client that has its answer may look a moment too early.
    static func lines<Line>(atLeast count: Int, within seconds: Double, _ read: () -> [Line]) -> [Line] {
        let deadline = Date().addingTimeInterval(seconds)
        var lines = read()
        while lines.count < count && Date() < deadline {
            usleep(10_000)
            lines = read()
        }
        return lines
    }

    /// Ends `process`: `signal` first, SIGKILL if it still runs after `grace` seconds; waits for it.
    static func stop(_ process: ChildProgram, signal: Int32, grace: Double) {
        if process.signal(signal) {
            let deadline = Date().addingTimeInterval(grace)
            while process.isRunning && Date() < deadline { usleep(10_000) }
        }
        process.stop()
    }
}
