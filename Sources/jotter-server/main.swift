import Glibc
import JotterCLICore

// `jotter-server [serve options]` is `jotter serve` without the client SDK.
var environment: [String: String] = [:]
var entry = environ
while let pointer = entry.pointee {
    let pair = String(cString: pointer)
    if let equals = pair.firstIndex(of: "=") { environment[String(pair[..<equals])] = String(pair[pair.index(after: equals)...]) }
    entry += 1
}
exit(ServeCommand.main(Array(CommandLine.arguments.dropFirst()), environment: environment))
