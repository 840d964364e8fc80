import Glibc

extension ServeCommand {
    /// `jotter-server [serve options]`: `jotter serve` alone, in a process that never loads the
    /// client SDK (Foundation and FoundationNetworking: 9 MiB of resident memory). `jotter serve`
    /// runs it when it stands beside `jotter`.
    package static func main(_ arguments: [String], environment: [String: String], console: Console = .standard) -> Int32 {
        if Arguments.wantsHelp(arguments) {
            console.out(help("jotter serve"))
            return ExitCode.success
        }
        do {
            return try ServeCommand(parsing: Arguments(arguments, options: options, environment: environment)).run(console: console)
        } catch {
            return console.report(error, command: "jotter serve")
        }
    }

    /// The `jotter-server` beside the running executable, if there is one.
    package static var siblingServer: String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = executable.lastIndex(of: "/") else { return nil }
        let path = String(executable[..<slash]) + "/jotter-server"
        return access(path, X_OK) == 0 ? path : nil
    }
}
